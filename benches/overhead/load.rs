//! The load generator: N workers, one session each, each looping verified
//! `tools/call echo` requests for a warm-up and then a measured window.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::client::{Session, echo_body, verify_echo};
use crate::procs;

/// Latencies are recorded in nanoseconds, 1 ns to 60 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// What one measured run produced.
pub struct RunResult {
    /// Calls completed inside the measured window.
    pub calls: u64,
    /// The measured window.
    pub window: Duration,
    /// Latencies of those calls.
    pub hist: Histogram<u64>,
    /// Failed or mismatched answers (warm-up included), by kind.
    pub failures: BTreeMap<&'static str, u64>,
    /// The first failure, in full.
    pub first_failure: Option<String>,
    /// CPU seconds each watched process used during the window.
    pub cpu: Vec<f64>,
}

impl RunResult {
    pub fn throughput(&self) -> f64 {
        self.calls as f64 / self.window.as_secs_f64()
    }

    /// Microseconds at quantile `q`.
    pub fn us(&self, q: f64) -> f64 {
        self.hist.value_at_quantile(q) as f64 / 1000.0
    }

    /// CPU microseconds per call of watched process `i`.
    pub fn cpu_us_per_call(&self, i: usize) -> Option<f64> {
        let cpu = *self.cpu.get(i)?;
        (self.calls > 0).then(|| cpu * 1e6 / self.calls as f64)
    }

    pub fn failed(&self) -> u64 {
        self.failures.values().sum()
    }
}

struct WorkerResult {
    calls: u64,
    hist: Histogram<u64>,
    failures: BTreeMap<&'static str, u64>,
    first_failure: Option<String>,
}

/// Runs `sessions.len()` workers for `warmup`, then measures for `window`.
/// `watch` are pids whose CPU time is read at the window's edges.
pub async fn run(
    sessions: &[Arc<Session>],
    warmup: Duration,
    window: Duration,
    watch: &[u32],
    ticks_per_sec: u64,
) -> RunResult {
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start + warmup;
    let end = measure_from + window;
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run_no = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let workers: Vec<_> = sessions
        .iter()
        .enumerate()
        .map(|(w, session)| {
            let session = session.clone();
            tokio::spawn(async move { worker(run_no, w, session, start, measure_from, end).await })
        })
        .collect();
    tokio::time::sleep_until(measure_from).await;
    let before: Vec<_> = watch.iter().map(|&p| procs::cpu_ticks(p)).collect();
    tokio::time::sleep_until(end).await;
    let after: Vec<_> = watch.iter().map(|&p| procs::cpu_ticks(p)).collect();
    let cpu = before
        .iter()
        .zip(&after)
        .map(|(b, a)| match (b, a) {
            (Some(b), Some(a)) => a.saturating_sub(*b) as f64 / ticks_per_sec as f64,
            _ => f64::NAN,
        })
        .collect();
    let mut result =
        RunResult { calls: 0, window, hist: histogram(), failures: BTreeMap::new(), first_failure: None, cpu };
    for w in workers {
        match w.await {
            Ok(r) => {
                result.calls += r.calls;
                result.hist.add(&r.hist).expect("same histogram bounds");
                for (k, n) in r.failures {
                    *result.failures.entry(k).or_default() += n;
                }
                if result.first_failure.is_none() {
                    result.first_failure = r.first_failure;
                }
            }
            Err(e) => {
                *result.failures.entry("worker-panic").or_default() += 1;
                result.first_failure.get_or_insert_with(|| e.to_string());
            }
        }
    }
    result
}

async fn worker(
    run_no: u64,
    w: usize,
    session: Arc<Session>,
    start: Instant,
    measure_from: Instant,
    end: Instant,
) -> WorkerResult {
    let mut r = WorkerResult { calls: 0, hist: histogram(), failures: BTreeMap::new(), first_failure: None };
    tokio::time::sleep_until(start).await;
    // Ids start high so they never collide with set-up requests.
    let mut id: u64 = 1_000_000;
    loop {
        if Instant::now() >= end {
            return r;
        }
        id += 1;
        let text = format!("r{run_no}-w{w}-{id}");
        let outcome = match session.send(echo_body(id, &text)).await {
            Ok(answer) => verify_echo(&answer, id, &text).map(|()| answer.elapsed),
            Err(e) => Err(e),
        };
        let done = Instant::now();
        match outcome {
            Ok(elapsed) => {
                if done >= measure_from && done <= end {
                    r.calls += 1;
                    let _ = r.hist.record((elapsed.as_nanos() as u64).max(1));
                }
            }
            Err(e) => {
                *r.failures.entry(e.kind()).or_default() += 1;
                r.first_failure.get_or_insert_with(|| e.to_string());
            }
        }
    }
}
