//! The measurements: each section starts the processes it needs, measures,
//! and stops them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail, ensure};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::Settings;
use crate::client::{self, Session};
use crate::load::{self, RunResult};
use crate::procs::{self, Bins, Proc, Toolgate};
use crate::report::{self, CatalogFigures, MemoryFigures, Row, StartupFigures};

/// The URI that authorizes `echo`.
const ECHO_DESCRIPTION: &str = "resource:///tool_descriptions?tools=echo";

/// Runs the selected sections and returns the report.
pub async fn run_all(settings: &Settings) -> Result<String> {
    let bins = Bins::locate()?;
    let ticks = procs::clock_ticks();
    let mut out = report::header(settings, &bins);
    let mut rows = Vec::new();
    let mut memory = None;
    let mut catalog = None;
    let mut startup = None;
    if settings.wants("calls") {
        rows = calls(settings, &bins, ticks).await?;
        out += &report::calls(&rows, settings);
        out += &report::floor(&rows);
    }
    if settings.wants("memory") {
        let m = idle_memory(settings, &bins).await?;
        out += &report::memory(&m);
        memory = Some(m);
    }
    if settings.wants("catalog") {
        let c = large_catalog(&bins).await?;
        out += &report::catalog(&c);
        catalog = Some(c);
    }
    if settings.wants("startup") {
        let s = start_to_listening(&bins).await?;
        out += &report::startup(&s);
        startup = Some(s);
    }
    out += &report::targets(&rows, memory.as_ref(), catalog.as_ref(), startup.as_ref());
    out += &report::footer();
    Ok(out)
}

// === tools/call under load ===

/// One way to reach the echo tool.
struct Target {
    key: &'static str,
    label: &'static str,
    /// The process whose CPU time is reported (toolgate, or the upstream
    /// for the direct path).
    watched: u32,
    sessions: Vec<Arc<Session>>,
    max_concurrency: usize,
}

/// Opens `n` sessions on `url`; with `gate`, each fetches echo's
/// description (toolgate refuses calls before that). Each makes one call.
async fn open_sessions(url: &str, n: usize, gate: bool) -> Result<Vec<Arc<Session>>> {
    let mut sessions = Vec::with_capacity(n);
    for i in 0..n {
        let session = Session::open(client::http_client(), url).await?;
        if gate {
            let (r, _) = session.request(1, "resources/read", json!({"uri": ECHO_DESCRIPTION})).await?;
            let text = r.pointer("/result/contents/0/text").and_then(Value::as_str).unwrap_or("");
            ensure!(text.contains("\"echo\""), "the descriptions resource did not describe echo: {r}");
        }
        let text = format!("prime-{i}");
        let answer = session.send(client::echo_body(2, &text)).await.map_err(|e| anyhow!("first call: {e}"))?;
        client::verify_echo(&answer, 2, &text).map_err(|e| anyhow!("first call: {e}"))?;
        sessions.push(Arc::new(session));
    }
    Ok(sessions)
}

/// The processes behind the targets.
struct Fleet {
    fixtures: Vec<Proc>,
    floors: Vec<Proc>,
    gates: Vec<Toolgate>,
}

impl Fleet {
    async fn stop(self) {
        for g in self.gates {
            g.stop().await;
        }
        // A stdio floor's child ends with its stdin when the floor ends.
        for f in self.floors {
            f.stop().await;
        }
        for f in self.fixtures {
            f.stop().await;
        }
    }
}

/// Starts the upstreams, the floor's forwarders and toolgate and opens
/// `top` sessions on each path (`low` on the per-session one). Each
/// forwarder has an upstream of its own, as each toolgate has: the stdio
/// floor its own fixture child, the HTTP floor its own fixture over HTTP.
async fn targets(bins: &Bins, top: usize, low: usize) -> Result<(Vec<Target>, Fleet)> {
    let (direct, direct_url) = procs::fixture_http(bins, &[]).await?;
    let (behind, behind_url) = procs::fixture_http(bins, &[]).await?;
    let (behind_floor, behind_floor_url) = procs::fixture_http(bins, &[]).await?;
    let fixture = bins.fixture.display().to_string();
    let (floor_stdio, floor_stdio_url) = procs::floor(bins, "floor-stdio", &bins.floor_stdio, &[&fixture]).await?;
    let (floor_http, floor_http_url) = procs::floor(bins, "floor-http", &bins.floor_http, &[&behind_floor_url]).await?;
    let stdio = Toolgate::start(bins, "toolgate-stdio", &procs::stdio_upstream(&bins.fixture, &[], "shared")).await?;
    let http = Toolgate::start(bins, "toolgate-http", &procs::http_upstream(&behind_url, "shared")).await?;
    let per_session =
        Toolgate::start(bins, "toolgate-per-session", &procs::stdio_upstream(&bins.fixture, &[], "per_session"))
            .await?;
    // The order each round measures them in: each leg's floor right
    // before toolgate on that leg.
    let targets = vec![
        Target {
            key: "direct",
            label: "direct (fixture, Streamable HTTP)",
            watched: direct.pid(),
            sessions: open_sessions(&direct_url, top, false).await?,
            max_concurrency: top,
        },
        Target {
            key: "floor_stdio",
            label: "floor → stdio upstream (bare forwarder)",
            watched: floor_stdio.pid(),
            sessions: open_sessions(&floor_stdio_url, top, false).await?,
            max_concurrency: top,
        },
        Target {
            key: "stdio",
            label: "toolgate → stdio upstream (shared)",
            watched: stdio.pid(),
            sessions: open_sessions(&stdio.url, top, true).await?,
            max_concurrency: top,
        },
        Target {
            key: "floor_http",
            label: "floor → HTTP upstream (bare forwarder)",
            watched: floor_http.pid(),
            sessions: open_sessions(&floor_http_url, top, false).await?,
            max_concurrency: top,
        },
        Target {
            key: "http",
            label: "toolgate → HTTP upstream (shared)",
            watched: http.pid(),
            sessions: open_sessions(&http.url, top, true).await?,
            max_concurrency: top,
        },
        Target {
            key: "per_session",
            label: "toolgate → stdio upstream (per_session)",
            watched: per_session.pid(),
            sessions: open_sessions(&per_session.url, low, true).await?,
            max_concurrency: low,
        },
    ];
    let fleet = Fleet {
        fixtures: vec![direct, behind, behind_floor],
        floors: vec![floor_stdio, floor_http],
        gates: vec![stdio, http, per_session],
    };
    Ok((targets, fleet))
}

async fn calls(settings: &Settings, bins: &Bins, ticks: u64) -> Result<Vec<Row>> {
    let top = settings.concurrency.iter().copied().max().unwrap_or(1);
    let low = settings.concurrency.iter().copied().filter(|&c| c <= 10).max().unwrap_or(1);
    let mut rows = Vec::new();

    // Concurrency 1 on one CPU: every process is started pinned (so each
    // sizes its thread pool to that one CPU), and the load generator runs
    // on a single thread pinned there too.
    if let Some(cpu) = settings.pin_cpu.clone() {
        eprintln!("overhead: starting pinned processes on CPU {cpu}");
        let pinned = Bins { pin: Some(cpu.clone()), ..bins.clone() };
        let settings = settings.clone();
        let thread = std::thread::spawn(move || -> Result<Vec<Row>> {
            procs::pin_this_thread(&cpu)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let (targets, fleet) = targets(&pinned, 1, 1).await?;
                let mut rows = Vec::new();
                for round in 0..settings.rounds {
                    measure(&settings, ticks, &mut rows, &targets, 1, true, round).await;
                }
                drop(targets);
                fleet.stop().await;
                Ok(rows)
            })
        });
        let pinned_rows = tokio::task::spawn_blocking(move || thread.join())
            .await?
            .map_err(|_| anyhow!("the pinned load generator panicked"))??;
        rows.extend(pinned_rows);
    }

    eprintln!("overhead: starting the upstreams and toolgate");
    let (targets, fleet) = targets(bins, top, low).await?;
    // Rounds outermost: each round measures every path at every
    // concurrency, so a slow spell of the machine touches all of them alike.
    for round in 0..settings.rounds {
        for &conc in &settings.concurrency {
            measure(settings, ticks, &mut rows, &targets, conc, false, round).await;
        }
    }
    drop(targets);
    fleet.stop().await;
    Ok(rows)
}

/// Runs one row per target that goes up to `conc`, for round `round`.
async fn measure(
    settings: &Settings,
    ticks: u64,
    rows: &mut Vec<Row>,
    targets: &[Target],
    conc: usize,
    pinned: bool,
    round: usize,
) {
    for t in targets.iter().filter(|t| t.max_concurrency >= conc) {
        let r: RunResult = load::run(&t.sessions[..conc], settings.warmup, settings.window, &[t.watched], ticks).await;
        let row = Row { key: t.key, label: t.label, concurrency: conc, pinned, round, result: r };
        eprintln!("overhead: {}", report::progress_line(&row));
        rows.push(row);
    }
}

/// `drive URL CALLS CONCURRENCY [gate] [hold PATH]`: verified echo calls
/// against a running server, for profilers.
///
/// With `hold PATH`, once the sessions are open (each has made its first
/// call) it creates `PATH.ready` and waits for `PATH.go` before the calls it
/// counts; after them it creates `PATH.done` and waits for `PATH.exit`
/// before the sessions close. A profiler zeroes its counters at the first
/// and dumps them at the second, so what it counts is `CALLS` calls, not
/// also the opening of every session and its first call (at concurrency 50,
/// 50 more calls than the count divides by) or their closing.
pub async fn drive(args: &[String]) -> Result<()> {
    let usage = "usage: drive URL CALLS CONCURRENCY [gate] [hold PATH]";
    let [url, calls, conc, rest @ ..] = args else { bail!(usage) };
    let (calls, conc): (usize, usize) = (calls.parse()?, conc.parse()?);
    let (mut gate, mut hold) = (false, None);
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "gate" => gate = true,
            "hold" => hold = Some(rest.next().context(usage)?.clone()),
            _ => bail!(usage),
        }
    }
    let sessions = open_sessions(url, conc, gate).await?;
    if let Some(hold) = &hold {
        handshake(hold, "ready", "go").await?;
    }
    let per = calls.div_ceil(conc);
    let started = Instant::now();
    let workers: Vec<_> = sessions
        .iter()
        .cloned()
        .enumerate()
        .map(|(w, s)| {
            tokio::spawn(async move {
                for i in 0..per as u64 {
                    let (id, text) = (100 + i, format!("drive-w{w}-{i}"));
                    let answer = s.send(client::echo_body(id, &text)).await.map_err(|e| anyhow!("{e}"))?;
                    client::verify_echo(&answer, id, &text).map_err(|e| anyhow!("{e}"))?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for w in workers {
        w.await??;
    }
    let secs = started.elapsed().as_secs_f64();
    println!("{} verified calls in {secs:.2} s ({:.0}/s)", per * conc, (per * conc) as f64 / secs);
    // The sessions are held open until the profiler has its counts:
    // closing them and their connections is no part of a call either.
    if let Some(hold) = &hold {
        handshake(hold, "done", "exit").await?;
    }
    drop(sessions);
    Ok(())
}

/// Creates `HOLD.said` and waits for `HOLD.awaited` to exist.
async fn handshake(hold: &str, said: &str, awaited: &str) -> Result<()> {
    let said = format!("{hold}.{said}");
    std::fs::write(&said, b"").with_context(|| format!("writing {said}"))?;
    let awaited = std::path::PathBuf::from(format!("{hold}.{awaited}"));
    while !awaited.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

// === idle sessions ===

async fn idle_memory(settings: &Settings, bins: &Bins) -> Result<MemoryFigures> {
    eprintln!("overhead: memory of idle sessions");
    let gate = Toolgate::start(bins, "toolgate-memory", &procs::stdio_upstream(&bins.fixture, &[], "shared")).await?;
    let pid = gate.pid();
    let http = client::http_client();
    // One session opened and closed first: the catalog is loaded, the
    // connection pool and the allocator are warm.
    let first = Session::open(http.clone(), &gate.url).await?;
    first.request(1, "tools/list", json!({})).await?;
    first.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss = || procs::rss_bytes(pid).context("reading VmRSS");
    let mut points = vec![(0usize, rss()?)];
    let mut kept: Vec<Session> = Vec::new();
    let steps: Vec<usize> = [1_000, settings.idle_sessions].into_iter().filter(|&n| n > 0).collect();
    let started = Instant::now();
    for target in steps {
        let need = target.saturating_sub(kept.len());
        let opened: Vec<Result<Session>> = futures::stream::iter(0..need)
            .map(|_| Session::open(http.clone(), &gate.url))
            .buffer_unordered(8)
            .collect()
            .await;
        for s in opened {
            kept.push(s?);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        points.push((kept.len(), rss()?));
    }
    let opening = started.elapsed();
    let total = kept.len();
    drop(kept);
    gate.stop().await;
    Ok(MemoryFigures { points, opened: total, opening })
}

// === a large catalog ===

async fn large_catalog(bins: &Bins) -> Result<CatalogFigures> {
    eprintln!("overhead: tools/list and resources/read with 1,000 tools");
    let (direct, direct_url) = procs::fixture_http(bins, &["--many-tools", "1000"]).await?;
    let gate = Toolgate::start(
        bins,
        "toolgate-catalog",
        &procs::stdio_upstream(&bins.fixture, &["--many-tools", "1000"], "shared"),
    )
    .await?;
    let session = Session::open(client::http_client(), &gate.url).await?;
    let direct_session = Session::open(client::http_client(), &direct_url).await?;

    let (listed, answer) = session.request(1, "tools/list", json!({})).await?;
    let names: Vec<String> = listed
        .pointer("/result/tools")
        .and_then(Value::as_array)
        .context("tools/list: no tools")?
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .filter(|n| n != "describe_tools")
        .collect();
    ensure!(names.len() >= 1000, "expected at least 1000 tools, got {}", names.len());
    let list_bytes = answer.len();
    let (_, direct_answer) = direct_session.request(1, "tools/list", json!({})).await?;
    let direct_list_bytes = direct_answer.len();

    let tool_count = names.len();
    let check_list = move |r: &Value| {
        let n = r.pointer("/result/tools").and_then(Value::as_array).map_or(0, Vec::len);
        if n >= tool_count { Ok(()) } else { Err(anyhow!("tools/list returned {n} tools")) }
    };
    let list = repeat(&session, 500, |_| ("tools/list", json!({})), &check_list).await?;
    let direct_list = repeat(&direct_session, 500, |_| ("tools/list", json!({})), &check_list).await?;

    let uri = |tools: &[String]| format!("resource:///tool_descriptions?tools={}", tools.join(","));
    let check_read = |want: usize| {
        move |r: &Value| {
            let text = r.pointer("/result/contents/0/text").and_then(Value::as_str).unwrap_or("{}");
            let body: Value = serde_json::from_str(text)?;
            let got = body.as_object().map_or(0, |o| o.len());
            if got == want { Ok(()) } else { Err(anyhow!("wanted {want} descriptions, got {got}: {text:.200}")) }
        }
    };
    // The same URI each time: served from toolgate's rendered cache.
    let one = uri(&names[..1]);
    let twenty = uri(&names[..20]);
    let read_1 = repeat(&session, 500, |_| ("resources/read", json!({"uri": one})), &check_read(1)).await?;
    let read_20 = repeat(&session, 500, |_| ("resources/read", json!({"uri": twenty})), &check_read(20)).await?;
    // A different selection each time: rendered for the request.
    let read_1_cold =
        repeat(&session, 400, |i| ("resources/read", json!({"uri": uri(&names[100 + i..101 + i])})), &check_read(1))
            .await?;
    let read_20_cold =
        repeat(&session, 400, |i| ("resources/read", json!({"uri": uri(&names[500 + i..520 + i])})), &check_read(20))
            .await?;
    session.close().await;
    gate.stop().await;
    direct.stop().await;
    Ok(CatalogFigures {
        tools: names.len(),
        list_bytes,
        direct_list_bytes,
        list,
        direct_list,
        read_1,
        read_20,
        read_1_cold,
        read_20_cold,
    })
}

/// Sends `n` requests one after another (after 20 unmeasured ones) and
/// returns their latencies; each answer is checked after its clock stopped.
async fn repeat(
    session: &Session,
    n: usize,
    make: impl Fn(usize) -> (&'static str, Value),
    check: &impl Fn(&Value) -> Result<()>,
) -> Result<hdrhistogram::Histogram<u64>> {
    let mut hist = load::histogram();
    let warm = 20;
    for i in 0..warm + n {
        let (method, params) = make(i.saturating_sub(warm));
        let id = 10_000 + i as u64;
        let (response, answer) = session.request(id, method, params).await?;
        check(&response).with_context(|| format!("{method} #{i}"))?;
        if i >= warm {
            hist.record((answer.elapsed.as_nanos() as u64).max(1))?;
        }
    }
    Ok(hist)
}

// === start to listening ===

async fn start_to_listening(bins: &Bins) -> Result<StartupFigures> {
    eprintln!("overhead: start to listening");
    let runs = 7;
    let configs = [
        ("demo", procs::stdio_upstream(&bins.toolgate, &["demo-upstream"], "per_session")),
        ("fixture", procs::stdio_upstream(&bins.fixture, &[], "shared")),
    ];
    let mut figures = StartupFigures::default();
    for (name, upstream) in &configs {
        let mut listening = Vec::new();
        let mut ready = Vec::new();
        for _ in 0..runs {
            let spawned = Instant::now();
            let gate = Toolgate::start(bins, "toolgate-startup", upstream).await?;
            // initialize waits for the upstream's first connection; tools/list
            // then answers from the loaded catalog.
            let session = Session::open(client::http_client(), &gate.url).await?;
            let (list, _) = session.request(1, "tools/list", json!({})).await?;
            let served = spawned.elapsed();
            let n = list.pointer("/result/tools").and_then(Value::as_array).map_or(0, Vec::len);
            if n < 2 {
                bail!("{name}: tools/list right after start returned {n} tools");
            }
            listening.push(gate.startup);
            ready.push(served);
            gate.stop().await;
        }
        listening.sort();
        ready.sort();
        figures.rows.push((name.to_string(), listening[runs / 2], ready[runs / 2], runs));
    }
    Ok(figures)
}
