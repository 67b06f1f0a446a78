//! toolgate's soak benchmark: many sessions, many verified calls, and an
//! upstream that keeps dying.
//!
//! ```sh
//! benches/soak.sh                                  # 1,000 sessions, 1,000,000 calls
//! TOOLGATE_SOAK_CALLS=20000 benches/soak.sh        # a quick try
//! ```
//!
//! (`benches/soak.sh` builds the shipped binaries with `cargo build --profile
//! optimized --workspace --bins`, copies them to `target/bench/bin` and runs
//! `cargo bench --bench soak` with `TOOLGATE_BENCH_BIN_DIR` set to them.)
//!
//! It starts `toolgate serve` on 127.0.0.1:0 in front of two
//! upstreams, both `toolgate-fixture` (its `echo` tool returns `text`
//! verbatim): `st`, a shared stdio child, and `ht`, a Streamable HTTP
//! server that the benchmark kills with SIGKILL and starts again on the
//! same port every few seconds. Both are in progressive mode. It opens the
//! sessions (each: `initialize`, then a `resources/read` of both tools'
//! descriptions so the gate lets calls through), then drives `tools/call`
//! alternately to `st__echo` and `ht__echo`, each with a unique token,
//! spread over every session, until the call count is reached.
//!
//! Every answer is checked (see `tally.rs`): a call to the killed upstream
//! may fail with `-32010`/`-32012` (counted as refused by the outage), but
//! a missing, malformed or mismatched answer is lost and fails the run. It
//! samples toolgate's RSS every second, counts its descendant processes at
//! the end, stops it with SIGTERM, and checks that none of them remain.
//! The exit status is non-zero when anything was lost or mismatched,
//! memory grew, or a process was left behind; other JSON-RPC errors (codes
//! other than the outage ones) are counted and listed but do not fail it.
//!
//! Environment: `TOOLGATE_SOAK_SESSIONS` (default 1000), `TOOLGATE_SOAK_CALLS`
//! (1000000), `TOOLGATE_SOAK_KILL_EVERY` (seconds between kills, 3),
//! `TOOLGATE_SOAK_DOWN` (seconds the upstream stays down, 0.5),
//! `TOOLGATE_SOAK_CONCURRENCY` (calls in flight, each on its own keep-alive
//! connection, 64), `TOOLGATE_SOAK_THREADS` (client runtime threads, 1),
//! `TOOLGATE_SOAK_HTTP_SHARING` (`per_session` or `shared`, for `ht`;
//! default `per_session`), `TOOLGATE_BENCH_BIN_DIR` (where `toolgate` and
//! `toolgate-fixture` are; default: cargo's release build).
//!
//! `benches/soak.sh replicas [--sessions N --calls N --kill-every SECS …]`
//! (or `TOOLGATE_SOAK_MODE=replicas`) runs the replicas mode instead: two
//! toolgate replicas sharing sessions through Redis behind HAProxy, one
//! SIGKILLed in turn, and shared against local sessions; see `replicas.rs`.
//!
//! Without `--bench` (as under `cargo test --all-targets`, which is how the
//! test suite runs it) it runs the replicas mode at a small size
//! ([`replicas::Settings::for_tests`]), unless the run names a test filter
//! or `TOOLGATE_SOAK_IN_TESTS=0`; it skips itself like the other Redis
//! tests with `TOOLGATE_SKIP_REDIS=1` and no `redis-server`.

// Test and benchmark drivers have no request spans to carry into their tasks.
#![allow(clippy::disallowed_methods)]

// The overhead benchmark's client and process helpers, shared as they are.
#[path = "../overhead/client.rs"]
#[allow(dead_code)]
mod client;
#[path = "../overhead/procs.rs"]
#[allow(dead_code)]
mod procs;

mod outage;
mod replicas;
mod report;
mod tally;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use futures::StreamExt as _;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::Session;
use crate::outage::Outages;
use crate::tally::{Incident, Leg, Outcome, Tally, classify, delay_bucket};

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sessions: usize,
    pub calls: u64,
    pub kill_every: Duration,
    pub down: Duration,
    pub concurrency: usize,
    pub threads: usize,
    pub http_sharing: String,
}

impl Settings {
    fn from_env() -> Settings {
        let num =
            |name: &str, default: f64| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(default);
        Settings {
            sessions: num("TOOLGATE_SOAK_SESSIONS", 1000.0).max(1.0) as usize,
            calls: num("TOOLGATE_SOAK_CALLS", 1_000_000.0).max(1.0) as u64,
            kill_every: Duration::from_secs_f64(num("TOOLGATE_SOAK_KILL_EVERY", 3.0).max(0.1)),
            down: Duration::from_secs_f64(num("TOOLGATE_SOAK_DOWN", 0.5).max(0.0)),
            concurrency: num("TOOLGATE_SOAK_CONCURRENCY", 64.0).max(1.0) as usize,
            threads: num("TOOLGATE_SOAK_THREADS", 1.0).max(1.0) as usize,
            http_sharing: std::env::var("TOOLGATE_SOAK_HTTP_SHARING").unwrap_or_else(|_| "per_session".into()),
        }
    }
}

/// How long the client waits for one answer before calling it lost. Far
/// above the upstreams' own timeout, so a hung call shows as `-32011`
/// first.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The upstreams' `timeout`.
const UPSTREAM_TIMEOUT: &str = "10s";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo test --all-targets` runs bench targets without `--bench`: the
    // suite's run of the replicas soak, small.
    if !args.iter().any(|a| a == "--bench") {
        let filtered = args.iter().any(|a| !a.starts_with('-'));
        if filtered || std::env::var("TOOLGATE_SOAK_IN_TESTS").as_deref() == Ok("0") {
            eprintln!("soak: skipped (a filtered test run, or TOOLGATE_SOAK_IN_TESTS=0)");
            return Ok(());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        if !runtime.block_on(replicas::run(&replicas::Settings::for_tests()))? {
            std::process::exit(1);
        }
        return Ok(());
    }
    let replicas_at = args.iter().position(|a| a == "replicas");
    if replicas_at.is_some() || std::env::var("TOOLGATE_SOAK_MODE").as_deref() == Ok("replicas") {
        let rest = replicas_at.map(|i| &args[i + 1..]).unwrap_or_default();
        let settings = replicas::Settings::from_env_and_args(rest)?;
        let threads = std::env::var("TOOLGATE_SOAK_THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()?;
        if !runtime.block_on(replicas::run(&settings))? {
            std::process::exit(1);
        }
        return Ok(());
    }
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(settings.threads).enable_all().build()?;
    let passed = runtime.block_on(run(&settings))?;
    if !passed {
        std::process::exit(1);
    }
    Ok(())
}

/// Everything the report needs.
pub struct Run {
    pub settings: Settings,
    pub tally: Tally,
    pub open_secs: f64,
    pub call_secs: f64,
    pub kills: u64,
    pub restarts: u64,
    pub restart_failures: u64,
    pub rss_start: u64,
    pub rss_open: u64,
    pub rss_end: u64,
    pub series: Vec<watch::Sample>,
    pub fds_open: Option<usize>,
    pub fds_end: Option<usize>,
    pub tree_open: Vec<(u32, String)>,
    pub tree_end: Vec<(u32, String)>,
    pub expected_children: usize,
    pub shutdown_secs: f64,
    pub left_behind: Vec<(u32, String)>,
}

async fn run(settings: &Settings) -> Result<bool> {
    let bins = procs::Bins::locate()?;
    let fixture = bins.fixture.display().to_string();
    // The killable upstream first: its port goes into the configuration.
    let (http_fixture, http_url) = outage::start(&fixture, "127.0.0.1:0").await?;
    let addr = http_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .with_context(|| format!("unexpected fixture URL {http_url}"))?
        .to_owned();
    let config = format!(
        "max_sessions = {max}\n\
         session_idle_timeout = \"1h\"\n\n\
         [[upstream]]\nname = \"st\"\ncommand = {fixture:?}\nsharing = \"shared\"\ntimeout = \"{UPSTREAM_TIMEOUT}\"\n\n\
         [[upstream]]\nname = \"ht\"\nurl = {http_url:?}\nsharing = {sharing:?}\ntimeout = \"{UPSTREAM_TIMEOUT}\"\n",
        max = settings.sessions + 100,
        sharing = settings.http_sharing,
    );
    // `Toolgate::start` writes `[server]` + `listen` and then this text, so
    // the first lines above are `[server]` keys.
    let toolgate = procs::Toolgate::start(&bins, "toolgate", &config).await?;
    let pid = toolgate.pid();
    let url = toolgate.url.clone();
    let epoch = Instant::now();
    let outages = Outages::new(epoch);
    let done = Arc::new(AtomicU64::new(0));
    let series = Arc::new(Mutex::new(Vec::new()));
    let stop_watch = CancellationToken::new();
    let sampler = tokio::spawn(watch::sample_rss(pid, epoch, done.clone(), series.clone(), stop_watch.clone()));
    let rss_start = procs::rss_bytes(pid).unwrap_or(0);

    // Sessions: one keep-alive connection per call in flight.
    let http = reqwest::Client::builder()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(settings.concurrency * 2)
        .timeout(CLIENT_TIMEOUT)
        .build()?;
    eprintln!("soak: toolgate pid {pid} at {url}; opening {} sessions", settings.sessions);
    let uri = format!("resource:///tool_descriptions?tools={},{}", Leg::Stdio.tool(), Leg::Http.tool());
    let opened: Vec<Result<Session>> = futures::stream::iter(0..settings.sessions)
        .map(|_| {
            let (http, url, uri) = (http.clone(), url.clone(), uri.clone());
            async move {
                let session = Session::open(http, &url).await?;
                let (response, _) = session.request(1, "resources/read", json!({"uri": uri})).await?;
                let text = response.pointer("/result/contents/0/text").and_then(|t| t.as_str()).unwrap_or("");
                if !text.contains(Leg::Http.tool()) || !text.contains(Leg::Stdio.tool()) {
                    bail!("the descriptions resource lacks a tool: {response}");
                }
                Ok(session)
            }
        })
        .buffer_unordered(settings.concurrency)
        .collect()
        .await;
    let sessions: Vec<Session> = opened.into_iter().collect::<Result<_>>().context("opening sessions")?;
    let open_secs = epoch.elapsed().as_secs_f64();
    let rss_open = procs::rss_bytes(pid).unwrap_or(0);
    let fds_open = watch::fd_count(pid);
    let tree_open = watch::descendants(pid);
    eprintln!(
        "soak: {} sessions open in {open_secs:.1} s, RSS {:.1} MiB; driving {} calls",
        sessions.len(),
        watch::mib(rss_open),
        settings.calls
    );

    // The outages, for as long as the calls run.
    let stop_kills = CancellationToken::new();
    let killer = tokio::spawn(outage::cycle(
        fixture.clone(),
        addr,
        http_fixture,
        settings.kill_every,
        settings.down,
        outages.clone(),
        stop_kills.clone(),
    ));

    // The calls: `concurrency` workers, each owning every concurrency-th session.
    let call_start = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let nonce = format!("{:x}", std::process::id() as u64 * 1_000_003 + epoch.elapsed().as_nanos() as u64);
    let mut owned: Vec<Vec<(usize, Session)>> = (0..settings.concurrency).map(|_| Vec::new()).collect();
    for (i, s) in sessions.into_iter().enumerate() {
        owned[i % settings.concurrency].push((i, s));
    }
    let workers: Vec<_> = owned
        .into_iter()
        .filter(|mine| !mine.is_empty())
        .map(|mine| {
            let (next, done, outages, nonce) = (next.clone(), done.clone(), outages.clone(), nonce.clone());
            let total = settings.calls;
            tokio::spawn(async move { worker(mine, next, done, total, outages, nonce).await })
        })
        .collect();
    let progress = {
        let (done, outages, total) = (done.clone(), outages.clone(), settings.calls);
        tokio::spawn(async move {
            let mut step = 1;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let n = done.load(Ordering::Relaxed);
                if n * 10 >= total * step {
                    step = n * 10 / total + 1;
                    eprintln!(
                        "soak: {n} calls, {:.0}/s, {} kills, RSS {:.1} MiB",
                        n as f64 / call_start.elapsed().as_secs_f64(),
                        outages.kills.load(Ordering::Relaxed),
                        watch::mib(procs::rss_bytes(pid).unwrap_or(0))
                    );
                }
                if n >= total {
                    return;
                }
            }
        })
    };
    let mut tally = Tally::default();
    let mut sessions = Vec::new();
    for w in workers {
        let (t, mine) = w.await.context("a worker panicked")?;
        tally.merge(t);
        sessions.extend(mine);
    }
    let call_secs = call_start.elapsed().as_secs_f64();
    progress.abort();
    stop_kills.cancel();
    let last_fixture = killer.await.context("the killer panicked")??;
    // The upstream was left running: let toolgate's sessions settle before
    // the end's figures (a session may still be reconnecting).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_end = procs::rss_bytes(pid).unwrap_or(0);
    let fds_end = watch::fd_count(pid);
    let tree_end = watch::descendants(pid);
    stop_watch.cancel();
    let _ = sampler.await;

    // Stop toolgate (SIGTERM, sessions still open) and look for what remains.
    let stopping = Instant::now();
    toolgate.stop().await;
    let shutdown_secs = stopping.elapsed().as_secs_f64();
    let mut left_behind = tree_end.clone();
    for _ in 0..50 {
        left_behind.retain(|(p, _)| watch::alive(*p));
        if left_behind.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(last_fixture);
    drop(sessions);

    let run = Run {
        settings: settings.clone(),
        tally,
        open_secs,
        call_secs,
        kills: outages.kills.load(Ordering::SeqCst),
        restarts: outages.restarts.load(Ordering::SeqCst),
        restart_failures: outages.restart_failures.load(Ordering::SeqCst),
        rss_start,
        rss_open,
        rss_end,
        series: series.lock().clone(),
        fds_open,
        fds_end,
        tree_open,
        tree_end,
        // The shared stdio child; the HTTP upstream is the benchmark's.
        expected_children: 1,
        shutdown_secs,
        left_behind,
    };
    let (text, passed) = report::render(&run);
    print!("{text}");
    Ok(passed)
}

/// Drives calls over `mine` (round-robin) until `total` calls were taken
/// from `next`; returns the tally and the sessions.
async fn worker(
    mine: Vec<(usize, Session)>,
    next: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    total: u64,
    outages: Arc<Outages>,
    nonce: String,
) -> (Tally, Vec<(usize, Session)>) {
    let mut tally = Tally::default();
    // Request ids per session (0 and 1 were the set-up's).
    let mut ids = vec![1u64; mine.len()];
    let mut turn = 0;
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= total {
            break;
        }
        let slot = turn % mine.len();
        turn += 1;
        let (index, session) = &mine[slot];
        ids[slot] += 1;
        let id = ids[slot];
        let leg = if n.is_multiple_of(2) { Leg::Stdio } else { Leg::Http };
        let token = format!("{nonce}-s{index}-i{id}-n{n}");
        let body = crate::client::call_body(id, leg.tool(), &token);
        let sent_ms = outages.now_ms();
        let kill_before = outages.last_kill_ms.load(Ordering::SeqCst);
        let up_since = outages.up_since_ms.load(Ordering::SeqCst);
        let answer = session.send(body).await;
        let done_ms = outages.now_ms();
        let kill_after = outages.last_kill_ms.load(Ordering::SeqCst);
        let (outcome, detail) = classify(leg, answer, id, &token);
        tally.add(leg, outcome.key());
        done.fetch_add(1, Ordering::Relaxed);
        let last_kill_ms = (kill_after != outage::DOWN).then_some(kill_after);
        match &outcome {
            Outcome::Ok => {}
            Outcome::Refused(_) => {
                if let Some(k) = last_kill_ms {
                    *tally.refusal_delay.entry(delay_bucket(done_ms.saturating_sub(k))).or_default() += 1;
                }
                // Sent a second after the upstream came back, answered
                // before the next kill: toolgate, not the outage, refused it.
                if up_since != outage::DOWN && sent_ms >= up_since + 1000 && kill_after == kill_before {
                    tally.late_refusals += 1;
                    if tally.late_examples.len() < 10 {
                        tally.late_examples.push(Incident {
                            leg,
                            outcome: outcome.clone(),
                            sent_ms,
                            done_ms,
                            last_kill_ms,
                            detail,
                        });
                    }
                }
            }
            _ => {
                tally.incidents.push(Incident { leg, outcome: outcome.clone(), sent_ms, done_ms, last_kill_ms, detail })
            }
        }
    }
    (tally, mine)
}
