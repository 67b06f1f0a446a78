//! The soak's report (Markdown on stdout) and its verdict.

use std::fmt::Write as _;

use crate::Run;
use crate::tally::{Incident, Leg};
use crate::watch::{Sample, mib};

/// End RSS may exceed the steady level by this share and still be flat.
const FLAT_TOLERANCE: f64 = 0.20;

/// The report and whether the run passed.
pub fn render(run: &Run) -> (String, bool) {
    let s = &run.settings;
    let t = &run.tally;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "\n## toolgate soak\n");
    let _ = writeln!(
        w,
        "{} sessions, {} calls, `ht` killed every {:.1} s and down {:.1} s, {} calls in flight, {} client thread(s), `ht` sharing `{}`\n",
        s.sessions,
        s.calls,
        s.kill_every.as_secs_f64(),
        s.down.as_secs_f64(),
        s.concurrency,
        s.threads,
        s.http_sharing
    );
    let calls = t.calls();
    let (ok, refused, other, mismatched, lost) =
        (t.total("ok"), t.total("refused:"), t.total("other:"), t.total("mismatched:"), t.total("lost:"));
    let _ = writeln!(w, "| | |\n|---|---:|");
    let _ = writeln!(w, "| sessions open at once | {} (opened in {:.1} s) |", s.sessions, run.open_secs);
    let _ = writeln!(w, "| calls | {calls} in {:.1} s: {:.0} calls/s |", run.call_secs, calls as f64 / run.call_secs);
    let _ = writeln!(w, "| ok (token verified) | {ok} |");
    let _ = writeln!(w, "| refused by outage (`ht`, -32010/-32012) | {refused} |");
    let _ = writeln!(w, "| of which refused while `ht` was back | {} |", t.late_refusals);
    let _ = writeln!(w, "| other errors | {other} |");
    let _ = writeln!(w, "| mismatched | {mismatched} |");
    let _ = writeln!(w, "| lost | {lost} |");
    let _ = writeln!(
        w,
        "| kills / restarts of `ht` | {} / {} ({} restart attempts retried) |",
        run.kills, run.restarts, run.restart_failures
    );

    let _ = writeln!(w, "\nBy upstream and outcome:\n");
    let _ = writeln!(w, "| upstream | outcome | calls |\n|---|---|---:|");
    for ((leg, key), n) in &t.counts {
        let _ = writeln!(w, "| {} | {key} | {n} |", leg.name());
    }
    if !t.refusal_delay.is_empty() {
        let _ = writeln!(w, "\nRefusals by time from the last kill to the answer:\n");
        let _ = writeln!(w, "| within | refusals |\n|---|---:|");
        for (bucket, n) in &t.refusal_delay {
            let label = if *bucket == u64::MAX { "more".to_owned() } else { format!("{bucket} ms") };
            let _ = writeln!(w, "| {label} | {n} |");
        }
    }

    // Memory.
    let (steady, flat) = memory(run);
    let peak = run.series.iter().map(|x| x.rss).max().unwrap_or(0).max(run.rss_end);
    let first = run.series.first().map(|x| x.rss).unwrap_or(run.rss_start);
    let growth = if steady > 0 { run.rss_end as f64 / steady as f64 - 1.0 } else { 0.0 };
    let _ = writeln!(w, "\ntoolgate's resident memory (VmRSS, sampled every second, {} samples):\n", run.series.len());
    let _ = writeln!(w, "| point | MiB |\n|---|---:|");
    let _ = writeln!(w, "| started | {:.1} |", mib(run.rss_start.min(first)));
    let _ = writeln!(w, "| sessions open | {:.1} |", mib(run.rss_open));
    let _ = writeln!(w, "| steady (a quarter of the calls done) | {:.1} |", mib(steady));
    let _ = writeln!(w, "| peak | {:.1} |", mib(peak));
    let _ = writeln!(
        w,
        "| end | {:.1} ({:+.1}% vs steady: {}) |",
        mib(run.rss_end),
        growth * 100.0,
        if flat { "flat" } else { "NOT flat" }
    );
    let _ = writeln!(w, "\nRSS and open file descriptors by progress: {}", series_line(&run.series, s.calls));
    let _ = writeln!(
        w,
        "\nOpen file descriptors: {} after the sessions opened, {} at the end.",
        opt(run.fds_open),
        opt(run.fds_end)
    );

    // Processes.
    let procs_ok = run.tree_end.len() == run.expected_children && run.left_behind.is_empty();
    let _ = writeln!(
        w,
        "\nProcesses under toolgate: {} after the sessions opened, {} at the end (expected {}: the shared stdio child); \
         SIGTERM took {:.2} s; left behind after it: {}.",
        run.tree_open.len(),
        run.tree_end.len(),
        run.expected_children,
        run.shutdown_secs,
        run.left_behind.len()
    );
    for (pid, cmd) in run.tree_end.iter().chain(&run.left_behind) {
        let _ = writeln!(w, "- {pid}: {cmd}");
    }

    // The bar: nothing lost or mismatched, flat memory, no leaked
    // process. Other errors are clear answers, but not the outage codes
    // expected: they are reported, and listed below, without failing the run.
    let passed = lost == 0 && mismatched == 0 && flat && procs_ok && calls >= s.calls;
    let _ = writeln!(
        w,
        "\nVerdict: **{}** (lost {lost}, mismatched {mismatched}, memory {}, processes {}){}",
        if passed { "PASS" } else { "FAIL" },
        if flat { "flat" } else { "growing" },
        if procs_ok { "as expected" } else { "NOT as expected" },
        if other > 0 {
            format!("; {other} answers were errors other than the outage codes (listed below)")
        } else {
            String::new()
        }
    );
    if !t.incidents.is_empty() {
        let _ = writeln!(w, "\nIncidents (first 30 of {}):\n", t.incidents.len());
        let mut incidents = t.incidents.clone();
        incidents.sort_by_key(|i| i.done_ms);
        for i in incidents.iter().take(30) {
            incident(w, i);
        }
    }
    if !t.late_examples.is_empty() {
        let _ = writeln!(w, "\nRefusals while `ht` was back (first {}):\n", t.late_examples.len());
        for i in &t.late_examples {
            incident(w, i);
        }
    }
    (out, passed)
}

/// The steady RSS (the first sample once a quarter of the calls were
/// done; the end if none) and whether the end is within the tolerance.
fn memory(run: &Run) -> (u64, bool) {
    let quarter = run.settings.calls / 4;
    let steady = run.series.iter().find(|x| x.calls >= quarter && x.calls > 0).map(|x| x.rss).unwrap_or(run.rss_end);
    let flat = steady == 0 || run.rss_end as f64 <= steady as f64 * (1.0 + FLAT_TOLERANCE);
    (steady, flat)
}

/// One sample per tenth of the calls.
fn series_line(series: &[Sample], total: u64) -> String {
    let mut parts = Vec::new();
    let mut step = 0;
    for x in series {
        if x.calls * 10 >= total * step {
            parts.push(format!("{}k calls {:.1} MiB {} fds", x.calls / 1000, mib(x.rss), x.fds));
            step = x.calls * 10 / total.max(1) + 1;
        }
    }
    if let Some(x) = series.last() {
        parts.push(format!("last ({:.0} s) {:.1} MiB {} fds", x.secs, mib(x.rss), x.fds));
    }
    parts.join(", ")
}

fn incident(w: &mut String, i: &Incident) {
    let since_kill = match i.last_kill_ms {
        Some(k) => format!("{} ms after the last kill", i.done_ms as i64 - k as i64),
        None => "before any kill".into(),
    };
    let _ = writeln!(
        w,
        "- {} {}: sent at {:.3} s, answered at {:.3} s ({since_kill}): {}",
        match i.leg {
            Leg::Stdio => "stdio",
            Leg::Http => "http",
        },
        i.outcome.key(),
        i.sent_ms as f64 / 1000.0,
        i.done_ms as f64 / 1000.0,
        i.detail.as_deref().unwrap_or("").chars().take(300).collect::<String>()
    );
}

fn opt(v: Option<usize>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}
