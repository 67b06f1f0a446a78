//! Budgets counted in this process: per-minute budgets are `governor`'s
//! token buckets (GCRA), as `calls_per_minute` is; daily and breaker counts
//! are windows with an end. Idle budgets are dropped (a per-minute bucket
//! idle for two minutes is full again; a window outlives its end by
//! nothing), which bounds memory for many clients and argument digests.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use governor::clock::{Clock, DefaultClock};
use governor::{Quota, RateLimiter};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{Check, Exceeded, Kind};

type Bucket = governor::DefaultDirectRateLimiter;

/// Most budgets of each sort kept at once; the least recently used go
/// first (a dropped per-minute bucket is a full one; a dropped window
/// forgets its count, which only a flood of distinct budgets can cause).
const MAX_BUDGETS: u64 = 200_000;
const IDLE_BUCKET: Duration = Duration::from_secs(120);
const ONE_DAY: Duration = Duration::from_secs(86_400);

/// A count that starts over when its window ends.
struct Window {
    ends: Instant,
    count: u32,
}

pub(super) struct Local {
    buckets: moka::sync::Cache<String, Arc<Bucket>>,
    windows: moka::sync::Cache<String, Arc<Mutex<Window>>>,
}

impl Default for Local {
    fn default() -> Self {
        Self {
            buckets: moka::sync::Cache::builder().time_to_idle(IDLE_BUCKET).max_capacity(MAX_BUDGETS).build(),
            // No window is longer than a day: one idle longer has ended.
            windows: moka::sync::Cache::builder().time_to_idle(ONE_DAY).max_capacity(MAX_BUDGETS).build(),
        }
    }
}

impl Local {
    /// Takes one call from each of `checks`, all or none.
    pub(super) fn take(&self, checks: &[Check]) -> Result<(), Exceeded> {
        let now = Instant::now();
        let mut counted: Vec<Arc<Mutex<Window>>> = Vec::new();
        let undo = |counted: &[Arc<Mutex<Window>>]| {
            for w in counted {
                let mut w = w.lock();
                w.count = w.count.saturating_sub(1);
            }
        };
        // Windows first: they can be given back if a bucket refuses.
        for check in checks {
            let length = match check.kind {
                Kind::Minute => continue,
                Kind::Day => until_utc_midnight(),
                Kind::Window(length) => length,
            };
            let window = self
                .windows
                .get_with_by_ref(&check.key, || Arc::new(Mutex::new(Window { ends: now + length, count: 0 })));
            let mut w = window.lock();
            if w.ends <= now {
                *w = Window { ends: now + length, count: 0 };
            }
            if w.count >= check.max {
                let retry_after = w.ends - now;
                drop(w);
                undo(&counted);
                return Err(exceeded(check, retry_after));
            }
            w.count += 1;
            drop(w);
            counted.push(window);
        }
        for check in checks.iter().filter(|c| c.kind == Kind::Minute) {
            let Some(max) = NonZeroU32::new(check.max) else { continue };
            let bucket =
                self.buckets.get_with_by_ref(&check.key, || Arc::new(RateLimiter::direct(Quota::per_minute(max))));
            if let Err(not_until) = bucket.check() {
                undo(&counted);
                return Err(exceeded(check, not_until.wait_time_from(DefaultClock::default().now())));
            }
        }
        Ok(())
    }
}

pub(super) fn exceeded(check: &Check, retry_after: Duration) -> Exceeded {
    let window = match check.kind {
        Kind::Window(w) => Some(w),
        _ => None,
    };
    Exceeded { limit: check.limit, max: check.max, window, tools: check.tools.clone(), retry_after }
}

/// Time left in the current UTC day.
fn until_utc_midnight() -> Duration {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let into_day = Duration::from_millis(u64::try_from(now.as_millis() % ONE_DAY.as_millis()).unwrap_or(0));
    ONE_DAY.saturating_sub(into_day).max(Duration::from_millis(1))
}
