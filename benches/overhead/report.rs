//! The report: Markdown tables of every figure, the machine they came from,
//! toolgate against the floor measured in the same rounds, and the targets
//! of the overhead issues, each marked met or missed.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::Settings;
use crate::load::RunResult;
use crate::procs::Bins;

/// Targets (the shipped `optimized` build, 2-core machine; issue 13), judged on the median
/// of the rounds.
const MAX_ADDED_P50_US: f64 = 60.0;
const MAX_CPU_PER_CALL_US: f64 = 25.0;
const MIN_THROUGHPUT_RATIO: f64 = 0.6;
const MAX_SESSION_BYTES: f64 = 16.0 * 1024.0;
const MAX_LIST_P50_US: f64 = 1000.0;

/// Each leg: toolgate's row key, its floor's, and the leg's name.
const LEGS: [(&str, &str, &str); 2] = [("stdio", "floor_stdio", "stdio"), ("http", "floor_http", "HTTP")];

/// A target relative to the floor (the bare forwarders of crates/bench-floor;
/// issue "A lean request path"), judged on the median over the rounds of
/// toolgate's figure divided by the floor's of the same round.
struct FloorTarget {
    what: &'static str,
    concurrency: usize,
    pinned: bool,
    figure: fn(&Row, Option<&Row>) -> Option<f64>,
    /// toolgate ÷ floor at most this (`at_most`), or at least.
    limit: f64,
    at_most: bool,
    /// How the figure itself is shown.
    decimals: usize,
    signed: bool,
}

const FLOOR_TARGETS: [FloorTarget; 3] = [
    FloorTarget {
        what: "p50 added µs, concurrency 1, one CPU",
        concurrency: 1,
        pinned: true,
        figure: added_p50,
        limit: 1.3,
        at_most: true,
        decimals: 0,
        signed: true,
    },
    FloorTarget {
        what: "calls/s, concurrency 50",
        concurrency: 50,
        pinned: false,
        figure: throughput,
        limit: 0.85,
        at_most: false,
        decimals: 0,
        signed: false,
    },
    FloorTarget {
        what: "CPU µs per call, concurrency 50",
        concurrency: 50,
        pinned: false,
        figure: cpu_per_call,
        limit: 1.3,
        at_most: true,
        decimals: 1,
        signed: false,
    },
];

impl FloorTarget {
    fn bound(&self) -> String {
        format!("{} {}×", if self.at_most { "≤" } else { "≥" }, self.limit)
    }

    fn met(&self, ratio: &Spread) -> bool {
        if self.at_most { ratio.median <= self.limit } else { ratio.median >= self.limit }
    }
}

/// One measured row of the call table.
pub struct Row {
    pub key: &'static str,
    pub label: &'static str,
    pub concurrency: usize,
    pub pinned: bool,
    /// Which interleaved round (0-based).
    pub round: usize,
    pub result: RunResult,
}

/// The median and the spread of one figure over the rounds.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` without values (NaNs are left out).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Spread { median, min: v[0], max: v[n - 1] })
    }

    /// `median (min–max)` with `decimals` decimals and an optional sign.
    fn show(&self, decimals: usize, signed: bool) -> String {
        let f = |x: f64| if signed { format!("{x:+.decimals$}") } else { format!("{x:.decimals$}") };
        if self.min == self.max {
            f(self.median)
        } else {
            format!("{} ({}–{})", f(self.median), f(self.min), f(self.max))
        }
    }
}

/// Resident memory by number of idle sessions.
pub struct MemoryFigures {
    /// (sessions, VmRSS bytes)
    pub points: Vec<(usize, u64)>,
    pub opened: usize,
    pub opening: Duration,
}

impl MemoryFigures {
    /// Bytes per session between the first and the last point.
    pub fn per_session(&self) -> Option<f64> {
        let (&(n0, r0), &(n1, r1)) = (self.points.first()?, self.points.last()?);
        (n1 > n0).then(|| (r1 as f64 - r0 as f64) / (n1 - n0) as f64)
    }
}

/// Latencies with a 1,000-tool catalog.
pub struct CatalogFigures {
    pub tools: usize,
    pub list_bytes: usize,
    pub direct_list_bytes: usize,
    pub list: Histogram<u64>,
    pub direct_list: Histogram<u64>,
    pub read_1: Histogram<u64>,
    pub read_20: Histogram<u64>,
    pub read_1_cold: Histogram<u64>,
    pub read_20_cold: Histogram<u64>,
}

/// Start-up times: (upstream, median to listening, median to a served
/// tools/list, runs).
#[derive(Default)]
pub struct StartupFigures {
    pub rows: Vec<(String, Duration, Duration, usize)>,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// The machine, the build and the settings.
pub fn header(settings: &Settings, bins: &Bins) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<u64>().ok()))
        .map(|kb| format!("{:.0} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_default();
    let kernel = command_output("uname", &["-sr"]).unwrap_or_default();
    let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default();
    let commit = command_output("git", &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"])
        .unwrap_or_else(|| "?".into());
    let mut s = String::new();
    let _ = writeln!(s, "# toolgate overhead benchmark\n");
    let _ = writeln!(s, "- date: {date}; commit {commit}");
    let _ = writeln!(s, "- machine: {cpu}, {cpus} CPUs, {mem}, {kernel}");
    let _ = writeln!(s, "- load average at start: {}", load_average());
    let _ = writeln!(s, "- binaries: {}", bins.toolgate.parent().map(|p| p.display().to_string()).unwrap_or_default());
    let _ = writeln!(
        s,
        "- each row: {} rounds of {:.1} s warm-up and {:.1} s measured; for the \"1 CPU\" rows every process is started under \
         `taskset -c {}` and the load generator runs on one thread there",
        settings.rounds,
        settings.warmup.as_secs_f64(),
        settings.window.as_secs_f64(),
        settings.pin_cpu.as_deref().unwrap_or("(none)")
    );
    s
}

/// A one-line summary for progress output.
pub fn progress_line(row: &Row) -> String {
    let r = &row.result;
    format!(
        "round {} {:<12} c={:<3}{} {:>8.0} calls/s  p50 {:>7.1} µs  p99 {:>8.1} µs  cpu {:>5.1} µs/call  failed {}",
        row.round + 1,
        row.key,
        row.concurrency,
        if row.pinned { " pinned" } else { "" },
        r.throughput(),
        r.us(0.5),
        r.us(0.99),
        r.cpu_us_per_call(0).unwrap_or(f64::NAN),
        r.failed()
    )
}

/// The row of path `key` in the same round, concurrency and pinning as `row`.
fn same_round<'a>(rows: &'a [Row], row: &Row, key: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|d| d.key == key && d.concurrency == row.concurrency && d.pinned == row.pinned && d.round == row.round)
}

/// The direct row of the same round, concurrency and pinning.
fn direct_for<'a>(rows: &'a [Row], row: &Row) -> Option<&'a Row> {
    same_round(rows, row, "direct")
}

/// Every round's row of one path at one concurrency.
fn rounds_of<'a>(rows: &'a [Row], key: &str, concurrency: usize, pinned: bool) -> Vec<&'a Row> {
    rows.iter().filter(|r| r.key == key && r.concurrency == concurrency && r.pinned == pinned).collect()
}

/// A figure of each round of one path and concurrency, over the rounds.
fn spread_of(rows: &[Row], group: &[&Row], figure: impl Fn(&Row, Option<&Row>) -> Option<f64>) -> Option<Spread> {
    Spread::of(group.iter().filter_map(|r| figure(r, direct_for(rows, r))))
}

fn added_p50(row: &Row, direct: Option<&Row>) -> Option<f64> {
    direct.filter(|_| row.key != "direct").map(|d| row.result.us(0.5) - d.result.us(0.5))
}

fn throughput_ratio(row: &Row, direct: Option<&Row>) -> Option<f64> {
    direct.filter(|_| row.key != "direct").map(|d| row.result.throughput() / d.result.throughput())
}

fn cpu_per_call(row: &Row, _: Option<&Row>) -> Option<f64> {
    row.result.cpu_us_per_call(0)
}

fn throughput(row: &Row, _: Option<&Row>) -> Option<f64> {
    Some(row.result.throughput())
}

/// One figure of a leg, for its floor and for toolgate, over the rounds.
struct AgainstFloor {
    floor: Option<Spread>,
    toolgate: Option<Spread>,
    /// toolgate's figure divided by the floor's of the same round (rounds
    /// where the floor's is not above zero are left out).
    ratio: Option<Spread>,
}

/// `figure` of toolgate (`key`) and of its floor (`floor_key`) at
/// `concurrency`, each round's pair measured back to back.
fn against_floor(
    rows: &[Row],
    key: &str,
    floor_key: &str,
    concurrency: usize,
    pinned: bool,
    figure: impl Fn(&Row, Option<&Row>) -> Option<f64>,
) -> AgainstFloor {
    let toolgate = rounds_of(rows, key, concurrency, pinned);
    let floor = rounds_of(rows, floor_key, concurrency, pinned);
    let ratios = toolgate.iter().filter_map(|t| {
        let f = same_round(rows, t, floor_key)?;
        let (t, f) = (figure(t, direct_for(rows, t))?, figure(f, direct_for(rows, f))?);
        (f > 0.0).then(|| t / f)
    });
    AgainstFloor {
        floor: spread_of(rows, &floor, &figure),
        toolgate: spread_of(rows, &toolgate, &figure),
        ratio: Spread::of(ratios),
    }
}

/// toolgate against the floor, leg by leg.
pub fn floor(rows: &[Row]) -> String {
    let mut s = String::new();
    if !rows.iter().any(|r| r.key.starts_with("floor_")) {
        return s;
    }
    let _ = writeln!(s, "\n## Against the floor\n");
    let _ = writeln!(
        s,
        "The floor is the least a gateway hop can cost: a bare forwarder (crates/bench-floor), measured in the \
         same rounds right before toolgate on its leg. HTTP leg: `toolgate-floor-http` forwards the request and \
         the response byte for byte over a pooled HTTP/1.1 client, parsing nothing. stdio leg: \
         `toolgate-floor-stdio` parses each message, swaps its id, writes one line to a shared fixture child and \
         routes the answer back by id. Each has its own fixture, as each toolgate has. \"÷ floor\" divides \
         toolgate's figure by the floor's of the same round; each figure: median (min–max) over the rounds.\n"
    );
    let _ = writeln!(s, "| leg | figure | floor | toolgate | toolgate ÷ floor | target |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    let show =
        |x: Option<Spread>, decimals: usize, signed: bool| x.map(|x| x.show(decimals, signed)).unwrap_or_default();
    for (key, floor_key, leg) in LEGS {
        for t in &FLOOR_TARGETS {
            let a = against_floor(rows, key, floor_key, t.concurrency, t.pinned, t.figure);
            if a.toolgate.is_none() && a.floor.is_none() {
                continue;
            }
            let _ = writeln!(
                s,
                "| {leg} | {} | {} | {} | {} | {} |",
                t.what,
                show(a.floor, t.decimals, t.signed),
                show(a.toolgate, t.decimals, t.signed),
                show(a.ratio, 2, false),
                t.bound()
            );
        }
    }
    s
}

/// The groups of rows (path, concurrency, pinned) in the order measured.
fn groups(rows: &[Row]) -> Vec<(&'static str, &'static str, usize, bool)> {
    let mut seen = Vec::new();
    for r in rows {
        let g = (r.key, r.label, r.concurrency, r.pinned);
        if !seen.contains(&g) {
            seen.push(g);
        }
    }
    // Pinned first, then by concurrency, keeping the path order.
    seen.sort_by_key(|&(_, _, c, pinned)| (!pinned, c));
    seen
}

/// The call tables: the median and spread over the rounds, then every round.
pub fn calls(rows: &[Row], settings: &Settings) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## tools/call echo, verified\n");
    let _ = writeln!(
        s,
        "Each worker has its own session and keep-alive connection and loops `tools/call echo` with a unique \
         text, checking the response's id and text. Latency is request to last byte. CPU is the CPU time \
         (utime+stime) per call of toolgate, of the floor's forwarder on the floor paths (not of the fixture \
         behind it), or of the fixture on the direct path. {} interleaved rounds of \
         {:.1} s per row (each round measures every path at every concurrency before the next round starts); \
         \"vs direct\" and \"added\" compare with the direct row of the same round. Each figure: median \
         (min–max) over the rounds.\n",
        settings.rounds,
        settings.window.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "| path | concurrency | calls/s | p50 µs | p99 µs | throughput vs direct | p50 added µs | CPU µs/call | failed |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let show =
        |x: Option<Spread>, decimals: usize, signed: bool| x.map(|x| x.show(decimals, signed)).unwrap_or_default();
    for (key, label, conc, pinned) in groups(rows) {
        let group = rounds_of(rows, key, conc, pinned);
        let tput = Spread::of(group.iter().map(|r| r.result.throughput()));
        let p50 = Spread::of(group.iter().map(|r| r.result.us(0.5)));
        let p99 = Spread::of(group.iter().map(|r| r.result.us(0.99)));
        let cpu = show(spread_of(rows, &group, cpu_per_call), 1, false);
        let cpu = if key == "direct" { format!("({cpu} fixture)") } else { cpu };
        let failed: u64 = group.iter().map(|r| r.result.failed()).sum();
        let _ = writeln!(
            s,
            "| {label} | {conc}{} | {} | {} | {} | {} | {} | {cpu} | {failed} |",
            if pinned { " (1 CPU)" } else { "" },
            show(tput, 0, false),
            show(p50, 0, false),
            show(p99, 0, false),
            show(spread_of(rows, &group, throughput_ratio), 2, false),
            show(spread_of(rows, &group, added_p50), 0, true),
        );
    }
    let _ = writeln!(s, "\n<details><summary>Every round</summary>\n");
    let _ = writeln!(
        s,
        "| round | path | concurrency | calls/s | p50 µs | p99 µs | p99.9 µs | vs direct | p50 added µs | CPU µs/call | failed |"
    );
    let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let r = &row.result;
        let direct = direct_for(rows, row);
        let ratio = throughput_ratio(row, direct).map(|x| format!("{x:.2}")).unwrap_or_default();
        let added = added_p50(row, direct).map(|x| format!("{x:+.0}")).unwrap_or_default();
        let cpu = r.cpu_us_per_call(0).map(|c| format!("{c:.1}")).unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {}{} | {:.0} | {:.0} | {:.0} | {:.0} | {ratio} | {added} | {cpu} | {} |",
            row.round + 1,
            row.key,
            row.concurrency,
            if row.pinned { " (1 CPU)" } else { "" },
            r.throughput(),
            r.us(0.5),
            r.us(0.99),
            r.us(0.999),
            r.failed()
        );
    }
    let _ = writeln!(s, "\n</details>");
    let failed: Vec<_> = rows.iter().filter(|r| r.result.failed() > 0).collect();
    if failed.is_empty() {
        let total: u64 = rows.iter().map(|r| r.result.calls).sum();
        let _ =
            writeln!(s, "\nFailed or mismatched responses: none ({total} measured calls, warm-up calls checked too).");
    } else {
        let _ = writeln!(s, "\nFailed or mismatched responses:");
        for row in failed {
            let _ = writeln!(
                s,
                "- {} c={}: {:?}; first: {}",
                row.key,
                row.concurrency,
                row.result.failures,
                row.result.first_failure.as_deref().unwrap_or("")
            );
        }
    }
    s
}

/// The idle-session memory table.
pub fn memory(m: &MemoryFigures) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Idle sessions (shared stdio upstream)\n");
    let _ = writeln!(s, "| idle sessions | toolgate VmRSS | bytes per session |");
    let _ = writeln!(s, "|---:|---:|---:|");
    let (n0, r0) = m.points.first().copied().unwrap_or((0, 0));
    for &(n, rss) in &m.points {
        let per = if n > n0 { format!("{:.0}", (rss as f64 - r0 as f64) / (n - n0) as f64) } else { "".into() };
        let _ = writeln!(s, "| {n} | {:.1} MiB | {per} |", rss as f64 / 1024.0 / 1024.0);
    }
    let _ = writeln!(
        s,
        "\n{} sessions opened (initialize + notifications/initialized, 8 at a time) in {:.1} s.",
        m.opened,
        m.opening.as_secs_f64()
    );
    s
}

/// The large-catalog table.
pub fn catalog(c: &CatalogFigures) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## A catalog of {} tools (one session, sequential requests)\n", c.tools);
    let _ = writeln!(s, "| request | p50 µs | p99 µs | answer |");
    let _ = writeln!(s, "|---|---:|---:|---:|");
    let mut row = |name: &str, h: &Histogram<u64>, answer: String| {
        let _ = writeln!(s, "| {name} | {:.0} | {:.0} | {answer} |", us(h, 0.5), us(h, 0.99));
    };
    row("tools/list through toolgate (minimal forms)", &c.list, format!("{} KB", c.list_bytes / 1000));
    row(
        "tools/list from the fixture directly (full definitions)",
        &c.direct_list,
        format!("{} KB", c.direct_list_bytes / 1000),
    );
    row("resources/read descriptions, 1 tool (same URI each time)", &c.read_1, String::new());
    row("resources/read descriptions, 20 tools (same URI each time)", &c.read_20, String::new());
    row("resources/read descriptions, 1 tool (a new URI each time)", &c.read_1_cold, String::new());
    row("resources/read descriptions, 20 tools (a new URI each time)", &c.read_20_cold, String::new());
    s
}

/// The start-up table.
pub fn startup(f: &StartupFigures) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Start-up (median of runs)\n");
    let _ = writeln!(s, "| upstream | runs | spawn to `listening on` | spawn to first tools/list answered |");
    let _ = writeln!(s, "|---|---:|---:|---:|");
    for (name, listening, ready, runs) in &f.rows {
        let _ = writeln!(
            s,
            "| {name} | {runs} | {:.1} ms | {:.1} ms |",
            listening.as_secs_f64() * 1e3,
            ready.as_secs_f64() * 1e3
        );
    }
    s
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

/// Each target of the issue, met or missed.
pub fn targets(
    rows: &[Row],
    memory: Option<&MemoryFigures>,
    catalog: Option<&CatalogFigures>,
    _startup: Option<&StartupFigures>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Targets\n");
    let spread = |x: &Spread, decimals: usize| {
        format!("median {:.decimals$} ({:.decimals$}–{:.decimals$})", x.median, x.min, x.max)
    };
    let median = |x: Option<Spread>, decimals: usize, signed: bool| match x {
        Some(x) if signed => format!("{:+.decimals$}", x.median),
        Some(x) => format!("{:.decimals$}", x.median),
        None => "?".into(),
    };
    let mut relative = String::new();
    for (key, floor_key, leg) in LEGS {
        for t in &FLOOR_TARGETS {
            let a = against_floor(rows, key, floor_key, t.concurrency, t.pinned, t.figure);
            let Some(ratio) = a.ratio else { continue };
            let _ = writeln!(
                relative,
                "- {leg} leg, {}: toolgate ÷ floor {} (floor {}, toolgate {}; target {}): {}",
                t.what,
                spread(&ratio, 2),
                median(a.floor, t.decimals, t.signed),
                median(a.toolgate, t.decimals, t.signed),
                t.bound(),
                verdict(t.met(&ratio))
            );
        }
    }
    if !relative.is_empty() {
        let _ = writeln!(
            s,
            "Relative to the floor of the same rounds (issue \"A lean request path\"; judged on the median over \
             the rounds of toolgate ÷ floor):\n\n{relative}\nAbsolute (issue 13):\n"
        );
    }
    for key in ["stdio", "http"] {
        if let Some(added) = spread_of(rows, &rounds_of(rows, key, 1, true), added_p50) {
            let _ = writeln!(
                s,
                "- concurrency 1, one CPU, {key} leg: toolgate adds {} µs to the p50 (target ≤ {MAX_ADDED_P50_US:.0}): {}",
                spread(&added, 0),
                verdict(added.median <= MAX_ADDED_P50_US)
            );
        }
    }
    for key in ["stdio", "http"] {
        let group = rounds_of(rows, key, 50, false);
        if let Some(cpu) = spread_of(rows, &group, cpu_per_call) {
            let _ = writeln!(
                s,
                "- concurrency 50, {key} leg: toolgate CPU {} µs per call (target ≤ {MAX_CPU_PER_CALL_US:.0}): {}",
                spread(&cpu, 1),
                verdict(cpu.median <= MAX_CPU_PER_CALL_US)
            );
        }
        if let Some(ratio) = spread_of(rows, &group, throughput_ratio) {
            let _ = writeln!(
                s,
                "- concurrency 50, {key} leg: throughput {} of direct (target ≥ {MIN_THROUGHPUT_RATIO}): {}",
                spread(&ratio, 2),
                verdict(ratio.median >= MIN_THROUGHPUT_RATIO)
            );
        }
    }
    if let Some(per) = memory.and_then(MemoryFigures::per_session) {
        let _ = writeln!(
            s,
            "- idle session: {per:.0} bytes (target ≤ {MAX_SESSION_BYTES:.0}): {}",
            verdict(per <= MAX_SESSION_BYTES)
        );
    }
    if let Some(c) = catalog {
        let p50 = us(&c.list, 0.5);
        let _ = writeln!(
            s,
            "- tools/list of {} tools: p50 {p50:.0} µs (target < {MAX_LIST_P50_US:.0}): {}",
            c.tools,
            verdict(p50 < MAX_LIST_P50_US)
        );
    }
    if !rows.is_empty() {
        let failed: u64 = rows.iter().map(|r| r.result.failed()).sum();
        let _ = writeln!(s, "- failed or mismatched responses: {failed} (target 0): {}", verdict(failed == 0));
    }
    s
}

/// The load average at the end.
pub fn footer() -> String {
    format!("\nLoad average at end: {}\n", load_average())
}
