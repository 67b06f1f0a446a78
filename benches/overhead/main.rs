//! toolgate's overhead benchmark (`cargo bench --bench overhead`, or
//! `benches/run.sh` for the full report).
//!
//! It starts the fixture upstream (`toolgate-fixture`, whose `echo` tool
//! does no work) and toolgate in front of it, all on loopback, and measures
//! in one run:
//! - verified `tools/call echo` at concurrency 1, 10, 50 and 200, against
//!   the upstream directly, through the floor (a bare forwarder of
//!   crates/bench-floor: the least a gateway hop can cost) and through
//!   toolgate, over a stdio and a Streamable HTTP upstream leg (throughput,
//!   p50/p99/p99.9, CPU time per call of toolgate or the forwarder, every
//!   failed or mismatched answer); concurrency 1 also with every process
//!   pinned to one CPU. Each row is measured in several interleaved rounds
//!   (every path at a concurrency, then the next round), and the report
//!   gives the median and the spread (min–max) of each figure, and
//!   toolgate's figures as ratios to the floor's of the same round;
//! - toolgate's resident memory with 0, 1,000 and 10,000 idle sessions;
//! - `tools/list` of a 1,000-tool catalog and `resources/read` of the
//!   descriptions resource for 1 and 20 tools;
//! - the time from start to listening.
//!
//! Run it with `cargo bench` (which passes `--bench`; without it, as under
//! `cargo test --all-targets`, it does nothing). Sections can be picked:
//! `cargo bench --bench overhead -- calls memory`
//! (`calls`, `memory`, `catalog`, `startup`). Environment:
//! `TOOLGATE_BENCH_ROUNDS` (rounds per row, default 5),
//! `TOOLGATE_BENCH_SECS` (measured seconds per row and round, default 2),
//! `TOOLGATE_BENCH_WARMUP` (seconds before each, default 0.5), `TOOLGATE_BENCH_PIN_CPU` (CPU for
//! the pinned rows, default 0; `none` skips them), `TOOLGATE_BENCH_SESSIONS`
//! (idle sessions for the memory figure, default 10000),
//! `TOOLGATE_BENCH_CONCURRENCY` (e.g. `1,50`; default `1,10,50,200`),
//! `TOOLGATE_BENCH_BIN_DIR` (where `toolgate`, `toolgate-fixture` and the
//! floor's `toolgate-floor-http` and `toolgate-floor-stdio` are),
//! `TOOLGATE_BENCH_FLOOR_DIR` (where the floor's are, if elsewhere),
//! `TOOLGATE_BENCH_UPSTREAM_PROTOCOL` (the upstreams' `protocol`, e.g.
//! `2025-11-25`; default `auto`, which speaks 2026-07-28 to the fixture),
//! `TOOLGATE_BENCH_HTTP2` (set: the load generator speaks HTTP/2 with prior
//! knowledge instead of HTTP/1.1), `TOOLGATE_BENCH_CLIENT` (`2026-07-28`:
//! the load generator is a sessionless 2026-07-28 client instead of a
//! 2025-11-25 session).
//!
//! For profiling, `overhead drive URL CALLS CONCURRENCY [gate] [hold PATH]`
//! only drives verified echo calls against a server started by hand (e.g.
//! toolgate under `valgrind --tool=callgrind`); `gate` fetches echo's
//! description first (toolgate's; a floor has none), and `hold` waits,
//! once the sessions are open, until the profiler is ready to count.

// Test and benchmark drivers have no request spans to carry into their tasks.
#![allow(clippy::disallowed_methods)]

mod client;
mod load;
mod procs;
mod report;
mod sections;

use std::time::Duration;

use anyhow::Result;

/// What to run and for how long.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sections: Vec<String>,
    pub warmup: Duration,
    pub window: Duration,
    /// Interleaved rounds of each call row.
    pub rounds: usize,
    pub pin_cpu: Option<String>,
    pub idle_sessions: usize,
    pub concurrency: Vec<usize>,
}

impl Settings {
    fn from_env() -> Settings {
        let secs =
            |name: &str, default: f64| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(default);
        let all = ["calls", "memory", "catalog", "startup"];
        let mut sections: Vec<String> =
            std::env::args().skip(1).filter(|a| !a.starts_with('-')).filter(|a| all.contains(&a.as_str())).collect();
        if sections.is_empty() {
            sections = all.iter().map(|s| s.to_string()).collect();
        }
        let pin_cpu = match std::env::var("TOOLGATE_BENCH_PIN_CPU") {
            Ok(v) if v == "none" || v.is_empty() => None,
            Ok(v) => Some(v),
            Err(_) => Some("0".into()),
        };
        Settings {
            sections,
            warmup: Duration::from_secs_f64(secs("TOOLGATE_BENCH_WARMUP", 0.5)),
            window: Duration::from_secs_f64(secs("TOOLGATE_BENCH_SECS", 2.0)),
            rounds: (secs("TOOLGATE_BENCH_ROUNDS", 5.0) as usize).max(1),
            pin_cpu,
            idle_sessions: secs("TOOLGATE_BENCH_SESSIONS", 10_000.0) as usize,
            concurrency: std::env::var("TOOLGATE_BENCH_CONCURRENCY")
                .ok()
                .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
                .filter(|c: &Vec<usize>| !c.is_empty())
                .unwrap_or_else(|| vec![1, 10, 50, 200]),
        }
    }

    pub fn wants(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s == section)
    }
}

fn main() -> Result<()> {
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if args.first().map(String::as_str) == Some("drive") {
        return runtime.block_on(sections::drive(&args[1..]));
    }
    // `cargo test --all-targets` runs bench targets without `--bench`
    // (cargo bench passes it): no benchmark there, and no debug-build figures.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("overhead: run with `cargo bench --bench overhead` or benches/run.sh (skipped: not a bench run)");
        return Ok(());
    }
    let report = runtime.block_on(sections::run_all(&settings))?;
    print!("{report}");
    Ok(())
}
