//! The soak's replicas mode: two toolgate replicas sharing their sessions
//! through a real `redis-server` (`[state] redis_url`), behind Debian's
//! HAProxy balancing round-robin without stickiness, everything on
//! 127.0.0.1.
//!
//! ```sh
//! benches/soak.sh replicas                                   # 50 sessions, 20,000 calls, a kill every 10 s
//! benches/soak.sh replicas --sessions 500 --calls 500000     # the issue's size
//! ```
//!
//! Three phases on the same two replicas (on fixed ports, so that the
//! balancer finds a restarted one), each with its own fresh sessions except
//! the last:
//!
//! 1. **local**: both replicas with `[state] sessions = "local"` (Redis
//!    still configured, as in 2), HAProxy sticky on `Mcp-Session-Id` (a
//!    session goes to the replica whose `initialize` answer carried its
//!    id): what running several replicas costs without shared sessions.
//! 2. **shared**: the same replicas started again with shared sessions,
//!    HAProxy round-robin per request without stickiness, so consecutive
//!    calls of a session alternate replicas. Both phases open the same
//!    number of sessions, make `2 × sessions` warm-up calls (every shared
//!    session adopted by both replicas by then), then the same number of
//!    measured calls at the same concurrency, without kills; the report
//!    gives the latency shared sessions add.
//! 3. **soak**: phase 2's sessions carry on for `calls` calls while one
//!    replica, in turn, is SIGKILLed every `kill_every` and started again at
//!    once.
//!
//! Every call is `echo` (the fixture as a shared stdio upstream of each
//! replica) with a unique token, and every answer is checked. A call that
//! fails around a kill (in flight when it happened, or sent within a second
//! after it, before HAProxy saw the replica go) is **cut by the kill**:
//! allowed, counted by kind. Any other failure, any mismatched answer, and a
//! session whose next call after a cut fails too, fail the run.
//!
//! Settings (arguments after `replicas` win over the environment):
//! `--sessions N` / `TOOLGATE_SOAK_SESSIONS` (50), `--calls N` /
//! `TOOLGATE_SOAK_CALLS` (20,000), `--kill-every SECS` /
//! `TOOLGATE_SOAK_KILL_EVERY` (10), `--concurrency N` /
//! `TOOLGATE_SOAK_CONCURRENCY` (32 calls in flight in the soak),
//! `--compare-calls N` / `TOOLGATE_SOAK_COMPARE_CALLS` (measured calls in
//! each of phases 1 and 2; half of `calls`, at most 50,000),
//! `--compare-concurrency N` / `TOOLGATE_SOAK_COMPARE_CONCURRENCY` (8).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use futures::StreamExt as _;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolgate_test_support::{Balancer, RedisServer, free_port};

use crate::client::Session;
use crate::procs;
use crate::tally::{Leg, Outcome, classify};

/// A failed call sent this long after a kill may still have been routed to
/// the killed replica (HAProxy checks its servers every 200 ms, and may
/// hold a connection to it).
const KILL_WINDOW_MS: u64 = 1000;
/// The tool every call goes to: the fixture's `echo`, under its own name
/// (each replica has that one upstream, so tools are not prefixed).
const TOOL: &str = "echo";
/// How long the client waits for one answer before calling it lost.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub sessions: usize,
    pub calls: u64,
    pub kill_every: Duration,
    pub concurrency: usize,
    pub compare_calls: u64,
    pub compare_concurrency: usize,
    /// The soak goes on past `calls` until this many kills happened (the
    /// test suite's small run, which a fast machine would otherwise finish
    /// before the first kill).
    pub min_kills: usize,
}

impl Settings {
    /// From the environment and the arguments after `replicas`.
    pub fn from_env_and_args(args: &[String]) -> Result<Settings> {
        let value = |flag: &str, var: &str| -> Result<Option<f64>> {
            let from_args = args.iter().position(|a| a == flag).map(|i| args.get(i + 1).cloned());
            let text = match from_args {
                Some(Some(v)) => Some(v),
                Some(None) => bail!("{flag} needs a value"),
                None => std::env::var(var).ok(),
            };
            text.map(|t| t.replace('_', "").parse::<f64>().with_context(|| format!("{flag}: not a number: {t}")))
                .transpose()
        };
        let sessions = value("--sessions", "TOOLGATE_SOAK_SESSIONS")?.unwrap_or(50.0).max(1.0) as usize;
        let calls = value("--calls", "TOOLGATE_SOAK_CALLS")?.unwrap_or(20_000.0).max(1.0) as u64;
        let compare_default = (calls / 2).clamp(1, 50_000) as f64;
        Ok(Settings {
            sessions,
            calls,
            kill_every: Duration::from_secs_f64(
                value("--kill-every", "TOOLGATE_SOAK_KILL_EVERY")?.unwrap_or(10.0).max(0.5),
            ),
            concurrency: value("--concurrency", "TOOLGATE_SOAK_CONCURRENCY")?.unwrap_or(32.0).max(1.0) as usize,
            compare_calls: value("--compare-calls", "TOOLGATE_SOAK_COMPARE_CALLS")?.unwrap_or(compare_default).max(1.0)
                as u64,
            compare_concurrency: value("--compare-concurrency", "TOOLGATE_SOAK_COMPARE_CONCURRENCY")?
                .unwrap_or(8.0)
                .max(1.0) as usize,
            min_kills: 0,
        })
    }

    /// The size `cargo test --all-targets` runs (a debug build, on a CI
    /// machine shared with the rest of the suite): 4,000 calls or more, until
    /// each replica was killed at least once, in well under a minute.
    pub fn for_tests() -> Settings {
        Settings {
            sessions: 20,
            calls: 4_000,
            kill_every: Duration::from_secs(1),
            concurrency: 16,
            compare_calls: 500,
            compare_concurrency: 4,
            min_kills: 2,
        }
    }
}

/// One replica on a fixed loopback port.
struct Replica {
    name: &'static str,
    port: u16,
    gw: Option<procs::Toolgate>,
}

impl Replica {
    /// Starts it with `config` (after `[server] listen`), retrying while the
    /// port is not free yet after a kill; returns how long it took.
    async fn start(&mut self, bins: &procs::Bins, config: &str) -> Result<Duration> {
        let started = Instant::now();
        let listen = format!("127.0.0.1:{}", self.port);
        loop {
            match procs::Toolgate::start_on(bins, self.name, &listen, config).await {
                Ok(gw) => {
                    self.gw = Some(gw);
                    return Ok(started.elapsed());
                }
                Err(e) if started.elapsed() < Duration::from_secs(20) => {
                    say(&format!("{} not started yet: {e}", self.name));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.context(format!("starting {} on {listen}", self.name))),
            }
        }
    }

    /// SIGKILL: a crash, no goodbye to anyone.
    fn kill(&mut self) {
        if let Some(gw) = self.gw.take() {
            let pid = nix::unistd::Pid::from_raw(gw.pid() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// SIGTERM, and waits for it to exit.
    async fn stop(&mut self) {
        if let Some(gw) = self.gw.take() {
            gw.stop().await;
        }
    }
}

/// A progress line on stderr (the report goes to stdout).
fn say(line: &str) {
    eprintln!("soak replicas: {line}");
}

/// The replicas' configuration after `[server] listen`.
fn config(settings: &Settings, redis_url: &str, fixture: &str, sessions: &str) -> String {
    format!(
        "max_sessions = {max}\nsession_idle_timeout = \"1h\"\n\n\
         [state]\nredis_url = {redis_url:?}\nsessions = {sessions:?}\n\n\
         [[upstream]]\nname = \"st\"\ncommand = {fixture:?}\nsharing = \"shared\"\ntimeout = \"10s\"\n",
        max = settings.sessions * 2 + 100,
    )
}

/// One session as a worker drives it.
struct Slot {
    index: usize,
    session: Session,
    next_id: u64,
    /// Its last call was cut by a kill: the next must succeed.
    cut: bool,
}

/// The kills, for placing failed calls against them.
struct Kills {
    epoch: Instant,
    at_ms: Mutex<Vec<u64>>,
    /// Kill to listening again, per restart.
    restart_ms: Mutex<Vec<u64>>,
}

impl Kills {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Whether a call sent at `sent` and answered at `done` overlaps a kill.
    fn near(&self, sent: u64, done: u64) -> bool {
        self.at_ms.lock().iter().any(|&k| k <= done && k + KILL_WINDOW_MS >= sent)
    }

    fn count(&self) -> usize {
        self.at_ms.lock().len()
    }
}

/// What the calls of one phase gave.
struct Counts {
    by_kind: BTreeMap<String, u64>,
    /// Latency of the calls answered correctly, in microseconds.
    latency: Histogram<u64>,
    /// Failures that fail the run (all kept).
    incidents: Vec<String>,
    /// Sessions whose call after a cut failed too.
    failed_again: u64,
    secs: f64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            by_kind: BTreeMap::new(),
            latency: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"),
            incidents: Vec::new(),
            failed_again: 0,
            secs: 0.0,
        }
    }
}

impl Counts {
    fn merge(&mut self, other: Counts) {
        for (k, n) in other.by_kind {
            *self.by_kind.entry(k).or_default() += n;
        }
        let _ = self.latency.add(&other.latency);
        self.incidents.extend(other.incidents);
        self.failed_again += other.failed_again;
    }

    fn total(&self) -> u64 {
        self.by_kind.values().sum()
    }

    fn count(&self, prefix: &str) -> u64 {
        self.by_kind.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, n)| n).sum()
    }

    /// Everything but ok calls and calls cut by a kill.
    fn failures(&self) -> u64 {
        self.total() - self.count("ok") - self.count("cut:")
    }

    fn ms(&self, quantile: f64) -> f64 {
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// Drives `calls` calls over `slots` with `concurrency` workers, each
/// owning every concurrency-th session, and more until `min_kills` kills
/// happened (for at most a minute more); `kills` says when calls may be cut.
async fn drive(
    slots: Vec<Slot>,
    calls: u64,
    min_kills: usize,
    concurrency: usize,
    kills: Arc<Kills>,
    label: &'static str,
) -> (Counts, Vec<Slot>) {
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let nonce = format!("{:x}-{label}", u64::from(std::process::id()) * 1_000_003 + kills.now_ms());
    let mut owned: Vec<Vec<Slot>> = (0..concurrency).map(|_| Vec::new()).collect();
    for (i, slot) in slots.into_iter().enumerate() {
        owned[i % concurrency].push(slot);
    }
    let started = Instant::now();
    let progress = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut step = 1;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let n = done.load(Ordering::Relaxed);
                if n * 10 >= calls * step {
                    step = n * 10 / calls + 1;
                    say(&format!("{label}: {n} calls, {:.0}/s", n as f64 / started.elapsed().as_secs_f64()));
                }
            }
        })
    };
    let workers: Vec<_> = owned
        .into_iter()
        .filter(|mine| !mine.is_empty())
        .map(|mine| {
            let (next, done, kills, nonce) = (next.clone(), done.clone(), kills.clone(), nonce.clone());
            tokio::spawn(worker(mine, next, done, (calls, min_kills), kills, nonce))
        })
        .collect();
    let mut counts = Counts::default();
    let mut slots = Vec::new();
    for w in workers {
        match w.await {
            Ok((c, mine)) => {
                counts.merge(c);
                slots.extend(mine);
            }
            Err(e) => counts.incidents.push(format!("a worker panicked: {e}")),
        }
    }
    progress.abort();
    counts.secs = started.elapsed().as_secs_f64();
    slots.sort_by_key(|s| s.index);
    (counts, slots)
}

async fn worker(
    mut mine: Vec<Slot>,
    next: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    (total, min_kills): (u64, usize),
    kills: Arc<Kills>,
    nonce: String,
) -> (Counts, Vec<Slot>) {
    let mut counts = Counts::default();
    let mut turn = 0;
    let mut past_total = None;
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= total {
            let since = *past_total.get_or_insert_with(Instant::now);
            if kills.count() >= min_kills || since.elapsed() > Duration::from_secs(60) {
                break;
            }
        }
        let at = turn % mine.len();
        let slot = &mut mine[at];
        turn += 1;
        slot.next_id += 1;
        let id = slot.next_id;
        let token = format!("{nonce}-s{}-i{id}-n{n}", slot.index);
        let body = crate::client::call_body(id, TOOL, &token);
        let sent = kills.now_ms();
        let answer = slot.session.send(body).await;
        let elapsed = answer.as_ref().ok().map(|a| a.elapsed);
        let answered = kills.now_ms();
        let (outcome, detail) = classify(Leg::Stdio, answer, id, &token);
        done.fetch_add(1, Ordering::Relaxed);
        if outcome == Outcome::Ok {
            if let Some(e) = elapsed {
                let _ = counts.latency.record((e.as_micros() as u64).max(1));
            }
            *counts.by_kind.entry("ok".into()).or_default() += 1;
            slot.cut = false;
            continue;
        }
        let describe = || {
            format!(
                "{}: session {} id {id}, sent at {:.3} s, answered at {:.3} s: {}",
                outcome.key(),
                slot.index,
                sent as f64 / 1000.0,
                answered as f64 / 1000.0,
                detail.as_deref().unwrap_or("").chars().take(300).collect::<String>()
            )
        };
        if slot.cut {
            counts.failed_again += 1;
            counts.incidents.push(format!("the call after a cut failed too: {}", describe()));
        }
        let cut = !matches!(outcome, Outcome::Mismatched(_)) && kills.near(sent, answered);
        if cut {
            *counts.by_kind.entry(format!("cut:{}", outcome.key())).or_default() += 1;
        } else {
            *counts.by_kind.entry(outcome.key()).or_default() += 1;
            counts.incidents.push(describe());
        }
        slot.cut = cut;
    }
    (counts, mine)
}

/// Opens `n` sessions through `url`, each reading the description of
/// [`TOOL`] so that the gate lets its calls through.
async fn open_sessions(http: &reqwest::Client, url: &str, n: usize, concurrency: usize) -> Result<(Vec<Slot>, f64)> {
    let started = Instant::now();
    let uri = format!("resource:///tool_descriptions?tools={TOOL}");
    let opened: Vec<Result<Session>> = futures::stream::iter(0..n)
        .map(|_| {
            let (http, url, uri) = (http.clone(), url.to_owned(), uri.clone());
            async move {
                let session = Session::open(http, &url).await?;
                let (response, _) = session.request(1, "resources/read", json!({"uri": uri})).await?;
                let text = response.pointer("/result/contents/0/text").and_then(|t| t.as_str()).unwrap_or("");
                if !text.contains(&format!("\"name\":\"{TOOL}\"")) {
                    bail!("the descriptions resource lacks the tool: {response}");
                }
                Ok(session)
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let sessions: Vec<Session> = opened.into_iter().collect::<Result<_>>().context("opening sessions")?;
    let slots =
        sessions.into_iter().enumerate().map(|(index, session)| Slot { index, session, next_id: 1, cut: false });
    Ok((slots.collect(), started.elapsed().as_secs_f64()))
}

/// One of the two comparison phases.
struct Phase {
    mode: &'static str,
    balancer: &'static str,
    open_secs: f64,
    warmup: Counts,
    measured: Counts,
}

/// Starts both replicas with `sessions` (stopping them first), and a
/// balancer (sticky or not) in front of them; opens the sessions, warms
/// up, and measures. Returns the phase and its sessions and balancer.
#[allow(clippy::too_many_arguments)]
async fn compare_phase(
    settings: &Settings,
    bins: &procs::Bins,
    replicas: &mut [Replica; 2],
    config: &str,
    sessions: &'static str,
    http: &reqwest::Client,
    kills: &Arc<Kills>,
) -> Result<Option<(Phase, Vec<Slot>, Balancer)>> {
    for r in replicas.iter_mut() {
        r.stop().await;
    }
    for r in replicas.iter_mut() {
        r.start(bins, config).await?;
    }
    let ports = [replicas[0].port, replicas[1].port];
    let sticky = sessions == "local";
    let balancer = if sticky { Balancer::start_sticky(&ports) } else { Balancer::start(&ports) };
    let Some(balancer) = balancer else { return Ok(None) };
    // HAProxy marks the servers up after its first health check.
    tokio::time::sleep(Duration::from_millis(500)).await;
    say(&format!("{sessions}: opening {} sessions", settings.sessions));
    let (slots, open_secs) =
        open_sessions(http, &balancer.url(), settings.sessions, settings.compare_concurrency).await?;
    let warm = (2 * settings.sessions as u64).max(100);
    let label = sessions_label(sessions);
    let (warmup, slots) = drive(slots, warm, 0, settings.compare_concurrency, kills.clone(), label).await;
    let (measured, slots) =
        drive(slots, settings.compare_calls, 0, settings.compare_concurrency, kills.clone(), label).await;
    let phase = Phase {
        mode: sessions,
        balancer: if sticky { "sticky on `Mcp-Session-Id`" } else { "round-robin, no stickiness" },
        open_secs,
        warmup,
        measured,
    };
    Ok(Some((phase, slots, balancer)))
}

fn sessions_label(sessions: &str) -> &'static str {
    if sessions == "local" { "local" } else { "shared" }
}

/// Kills a replica, in turn, every `every` until `stop`, starting it
/// again at once; returns the replicas.
async fn kill_cycle(
    bins: procs::Bins,
    mut replicas: [Replica; 2],
    config: String,
    every: Duration,
    kills: Arc<Kills>,
    stop: CancellationToken,
) -> Result<[Replica; 2]> {
    let mut turn = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(replicas),
            _ = tokio::time::sleep(every) => {}
        }
        let victim = &mut replicas[turn % 2];
        turn += 1;
        let at = kills.now_ms();
        kills.at_ms.lock().push(at);
        victim.kill();
        victim.start(&bins, &config).await?;
        kills.restart_ms.lock().push(kills.now_ms() - at);
    }
}

/// Runs the three phases and prints the report; whether the run passed.
pub async fn run(settings: &Settings) -> Result<bool> {
    let bins = procs::Bins::locate()?;
    let fixture = bins.fixture.display().to_string();
    let Some(redis) = RedisServer::start() else {
        println!("soak replicas: skipped (no redis-server, TOOLGATE_SKIP_REDIS=1)");
        return Ok(true);
    };
    let mut replicas = [
        Replica { name: "replica-a", port: free_port(), gw: None },
        Replica { name: "replica-b", port: free_port(), gw: None },
    ];
    let http = reqwest::Client::builder()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(settings.concurrency.max(settings.compare_concurrency) * 2)
        .timeout(CLIENT_TIMEOUT)
        .build()?;
    let kills = Arc::new(Kills { epoch: Instant::now(), at_ms: Mutex::default(), restart_ms: Mutex::default() });
    let local_config = config(settings, &redis.url(), &fixture, "local");
    let shared_config = config(settings, &redis.url(), &fixture, "shared");

    // 1 and 2: local, then shared, no kills.
    let Some((local, local_slots, local_balancer)) =
        compare_phase(settings, &bins, &mut replicas, &local_config, "local", &http, &kills).await?
    else {
        println!("soak replicas: skipped (no haproxy, TOOLGATE_SKIP_REDIS=1)");
        return Ok(true);
    };
    drop(local_slots);
    drop(local_balancer);
    let Some((shared, slots, balancer)) =
        compare_phase(settings, &bins, &mut replicas, &shared_config, "shared", &http, &kills).await?
    else {
        return Ok(true);
    };

    // 3: the soak, on the shared sessions.
    say(&format!(
        "soak: {} calls over {} sessions, a replica killed every {:.1} s",
        settings.calls,
        slots.len(),
        settings.kill_every.as_secs_f64()
    ));
    let stop = CancellationToken::new();
    let killer = tokio::spawn(kill_cycle(
        bins.clone(),
        replicas,
        shared_config.clone(),
        settings.kill_every,
        kills.clone(),
        stop.clone(),
    ));
    let (soak, slots) =
        drive(slots, settings.calls, settings.min_kills, settings.concurrency, kills.clone(), "soak").await;
    stop.cancel();
    let mut replicas = killer.await.context("the killer panicked")??;
    // Every session is still served, by either replica: one more call each.
    let twice = 2 * slots.len() as u64;
    let (after, slots) = drive(slots, twice, 0, 1, kills.clone(), "after").await;
    drop(slots);
    drop(balancer);
    for r in replicas.iter_mut() {
        r.stop().await;
    }
    drop(redis);

    let (text, passed) = report(settings, &local, &shared, &soak, &after, &kills);
    print!("{text}");
    Ok(passed)
}

/// The report (Markdown) and the verdict.
fn report(
    settings: &Settings,
    local: &Phase,
    shared: &Phase,
    soak: &Counts,
    after: &Counts,
    kills: &Kills,
) -> (String, bool) {
    let mut out = String::new();
    let w = &mut out;
    let kill_count = kills.at_ms.lock().len();
    let mut restarts = kills.restart_ms.lock().clone();
    restarts.sort_unstable();
    let median_restart = restarts.get(restarts.len() / 2).copied().unwrap_or(0);
    let max_restart = restarts.last().copied().unwrap_or(0);
    let _ = writeln!(w, "\n## toolgate soak: two replicas sharing sessions\n");
    let _ = writeln!(
        w,
        "Two replicas (`[state] redis_url`, a real `redis-server`) behind HAProxy, round-robin without \
         stickiness, all on 127.0.0.1. {} sessions, {} calls ({} in flight), one replica SIGKILLed every {:.1} s \
         in turn and started again at once.\n",
        settings.sessions,
        settings.calls,
        settings.concurrency,
        settings.kill_every.as_secs_f64()
    );
    let (ok, cut) = (soak.count("ok"), soak.count("cut:"));
    let _ = writeln!(w, "| | |\n|---|---:|");
    let _ = writeln!(
        w,
        "| calls | {} in {:.1} s: {:.0} calls/s |",
        soak.total(),
        soak.secs,
        soak.total() as f64 / soak.secs
    );
    let _ = writeln!(w, "| ok (token verified) | {ok} |");
    let _ = writeln!(w, "| cut by a kill (a clear error; the session's next call succeeded) | {cut} |");
    let _ = writeln!(w, "| lost, mismatched or failed outside a kill | {} |", soak.failures());
    let _ = writeln!(w, "| a session's call after a cut failed too | {} |", soak.failed_again);
    let _ = writeln!(
        w,
        "| kills / restarts | {kill_count} / {} (kill to listening again: median {median_restart} ms, max {max_restart} ms) |",
        restarts.len()
    );
    let _ = writeln!(
        w,
        "| latency of ok calls | p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms |",
        soak.ms(0.5),
        soak.ms(0.99),
        soak.latency.max() as f64 / 1000.0
    );
    let _ =
        writeln!(w, "| every session served after the soak | {} of {} calls ok |", after.count("ok"), after.total());
    let _ = writeln!(w, "\nErrors by kind:\n");
    let _ = writeln!(w, "| kind | calls |\n|---|---:|");
    let mut any = false;
    for (kind, n) in soak.by_kind.iter().filter(|(k, _)| *k != "ok") {
        any = true;
        let _ = writeln!(w, "| {kind} | {n} |");
    }
    if !any {
        let _ = writeln!(w, "| (none) | 0 |");
    }

    let _ = writeln!(
        w,
        "\n### Shared against local sessions\n\nThe same two replicas and HAProxy, no kills, {} fresh sessions each, \
         {} warm-up calls then {} measured calls, {} in flight. Local: `sessions = \"local\"`, the balancer sticky on \
         `Mcp-Session-Id`. Shared: sessions in Redis, round-robin per request.\n",
        settings.sessions,
        local.warmup.total(),
        settings.compare_calls,
        settings.compare_concurrency
    );
    let _ = writeln!(
        w,
        "| sessions | balancer | opened in | calls/s | p50 | p99 | failed |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for p in [local, shared] {
        let _ = writeln!(
            w,
            "| {} | {} | {:.2} s | {:.0} | {:.3} ms | {:.3} ms | {} |",
            p.mode,
            p.balancer,
            p.open_secs,
            p.measured.total() as f64 / p.measured.secs,
            p.measured.ms(0.5),
            p.measured.ms(0.99),
            p.measured.failures() + p.warmup.failures()
        );
    }
    let _ = writeln!(
        w,
        "\nAdded by shared sessions: p50 {:+.3} ms, p99 {:+.3} ms.",
        shared.measured.ms(0.5) - local.measured.ms(0.5),
        shared.measured.ms(0.99) - local.measured.ms(0.99)
    );

    let compare_failures =
        local.measured.failures() + local.warmup.failures() + shared.measured.failures() + shared.warmup.failures();
    let passed = soak.failures() == 0
        && soak.failed_again == 0
        && soak.total() >= settings.calls
        && after.failures() == 0
        && after.count("ok") == after.total()
        && compare_failures == 0
        && kill_count >= settings.min_kills
        && (kill_count > 0 || soak.secs < settings.kill_every.as_secs_f64());
    let _ = writeln!(
        w,
        "\nVerdict: **{}** (failed outside kills {}, failed after a cut {}, comparison failures {}, kills {kill_count})",
        if passed { "PASS" } else { "FAIL" },
        soak.failures(),
        soak.failed_again,
        compare_failures
    );
    let incidents: Vec<&String> = [local, shared]
        .iter()
        .flat_map(|p| p.warmup.incidents.iter().chain(&p.measured.incidents))
        .chain(&soak.incidents)
        .chain(&after.incidents)
        .collect();
    if !incidents.is_empty() {
        let _ = writeln!(w, "\nIncidents (first 30 of {}):\n", incidents.len());
        for i in incidents.iter().take(30) {
            let _ = writeln!(w, "- {i}");
        }
    }
    (out, passed)
}
