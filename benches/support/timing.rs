//! Timings of the micro-benchmarks (`validation`, `limits`, `audit`): a
//! histogram in nanoseconds, and how its quantiles are printed.

use std::time::Duration;

use hdrhistogram::Histogram;

/// An empty histogram, 1 ns to 60 s, three significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Adds one timing.
pub fn record(histogram: &mut Histogram<u64>, took: Duration) {
    let _ = histogram.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1));
}

/// `d` in microseconds, one decimal.
pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// The p50, p90, p99 and maximum of `h`, and its sample count.
pub fn figures(h: &Histogram<u64>) -> String {
    let at = |q: f64| micros(Duration::from_nanos(h.value_at_quantile(q)));
    format!(
        "p50 {}, p90 {}, p99 {}, max {} ({} samples)",
        at(0.5),
        at(0.9),
        at(0.99),
        micros(Duration::from_nanos(h.max())),
        h.len()
    )
}

/// The p50 of `h`.
pub fn p50(h: &Histogram<u64>) -> Duration {
    Duration::from_nanos(h.value_at_quantile(0.5))
}
