//! What the shared limit check costs a call, beside the local one, in the
//! same run (`cargo bench --bench limits`).
//!
//! A real `redis-server` on 127.0.0.1 (Debian's, as the tests use) keeps
//! the shared budgets. One client calls one tool that has a `per_minute`
//! and a `per_day` budget, the write-tool default and the identical-call
//! breaker (four budgets, all generous enough never to refuse), through
//! [`Budgets::take`] exactly as the budgets layer takes them, first on a
//! gateway without `[state]` (counted in this process), then on one with
//! `redis_url` (one script run per check); the rounds alternate so both
//! see the same machine. `calls_per_minute` ([`CallRate::take`]) is timed
//! the same way. It prints p50, p90 and p99 per check for each, the added
//! p50, and whether it is within the 0.3 ms target.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use prometheus_client::metrics::counter::Counter;
use serde_json::json;
#[path = "../support/catalog.rs"]
mod catalog;
#[path = "../support/timing.rs"]
mod timing;

use timing::{figures, histogram, micros, p50, record};
use toolgate::auth::{ClientPolicy, Principal, PrincipalId, PrincipalKind, ToolPolicy};
use toolgate::budgets::{Budgets, CallRate, Rules};
use toolgate::catalog::ToolEntry;
use toolgate::config::{Config, load_str};
use toolgate::shared::Connection;
use toolgate_test_support::redis::RedisServer;

/// The target: what the shared check may add to a call, at p50.
const TARGET: Duration = Duration::from_micros(300);

const LIMITS: &str = r#"
[[limits]]
tools = "*"
per_minute = 100000000
per_day = 1000000000
[limits.defaults]
write_per_minute = 100000000
identical_calls = { max = 1000000000, window = "1h" }
"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    // `cargo test --all-targets` runs bench targets without `--bench`.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("limits: run with `cargo bench --bench limits` (skipped: not a bench run)");
        return Ok(());
    }
    let rounds: usize = std::env::var("TOOLGATE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5000);
    let redis = RedisServer::start().context("the shared check needs redis-server")?;
    let upstream = "[[upstream]]\nname = \"x\"\ncommand = \"true\"\n";
    let local_config = load_str(&format!("{LIMITS}{upstream}"))?;
    let shared_config = load_str(&format!("[state]\nredis_url = \"{}\"\n{LIMITS}{upstream}", redis.url()))?;
    let connection = Arc::new(Connection::open(&redis.url(), &shared_config.state)?);
    connection.ping().await?;
    // Counted when a shared check fell back to this process: none may.
    let fallbacks = Counter::default();
    let local = budgets(&local_config, None, &fallbacks)?;
    let shared = budgets(&shared_config, Some(connection.clone()), &fallbacks)?;
    let (local_calls, shared_calls) = (CallRate::default(), CallRate::default());
    shared_calls.share(connection, &shared_config.state.key_prefix, fallbacks.clone());

    let principal = principal();
    let tool = tool();
    let mut h = [histogram(), histogram(), histogram(), histogram()];
    let one = NonZeroU32::MIN;
    // Warm up (connection, script load), then alternate.
    for _ in 0..200 {
        shared.take(&principal, &tool, Some(&json!({"q": "warm"}))).await.ok();
        shared_calls.take(&principal, one).await.ok();
    }
    for i in 0..rounds {
        let arguments = json!({"q": "report", "page": i % 7});
        for (slot, budgets) in [(0, &local), (1, &shared)] {
            let started = Instant::now();
            let taken = budgets.take(&principal, &tool, Some(&arguments)).await;
            record(&mut h[slot], started.elapsed());
            anyhow::ensure!(taken == Ok(()), "a check was refused: {taken:?}");
        }
        for (slot, calls) in [(2, &local_calls), (3, &shared_calls)] {
            let started = Instant::now();
            let taken = calls.take(&principal, one).await;
            record(&mut h[slot], started.elapsed());
            anyhow::ensure!(taken == Ok(()), "calls_per_minute refused: {taken:?}");
        }
    }
    anyhow::ensure!(fallbacks.get() == 0, "{} shared checks fell back to local counting", fallbacks.get());
    println!("limit checks, one client and tool, {rounds} calls each, alternating (Redis on 127.0.0.1):");
    println!("  per-tool budgets (4), local:  {}", figures(&h[0]));
    println!("  per-tool budgets (4), shared: {}", figures(&h[1]));
    println!("  calls_per_minute, local:      {}", figures(&h[2]));
    println!("  calls_per_minute, shared:     {}", figures(&h[3]));
    for (what, local, shared) in [("per-tool budgets", &h[0], &h[1]), ("calls_per_minute", &h[2], &h[3])] {
        let added = p50(shared).saturating_sub(p50(local));
        let verdict = if added <= TARGET { "met" } else { "NOT met" };
        println!("  {what}: shared adds {} at p50; target <= {} µs: {verdict}", micros(added), TARGET.as_micros());
    }
    Ok(())
}

fn budgets(config: &Config, connection: Option<Arc<Connection>>, fallbacks: &Counter) -> Result<Budgets> {
    Budgets::new(config, connection, fallbacks.clone()).context("the limits configure budgets")
}

fn principal() -> Principal {
    let policy = ClientPolicy {
        entry: Some("bench".into()),
        tools: ToolPolicy::allow_all(),
        max_sessions: None,
        calls_per_minute: NonZeroU32::new(100_000_000),
        concerns: Default::default(),
        limits: Rules::default(),
        upstream: Default::default(),
        identity_claims: Default::default(),
        generation: 0,
    };
    Principal::new(PrincipalId::new(PrincipalKind::ApiKey, "bench"), Arc::new(policy))
}

fn tool() -> Arc<ToolEntry> {
    catalog::entry("x", json!({"name": "search", "inputSchema": {"type": "object"}}))
}
