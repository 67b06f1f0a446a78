//! Per-client limits: the `calls_per_minute` token bucket ([`CallLimiter`])
//! and the `max_sessions` cap ([`SessionLimiter`]).
//!
//! Both are keyed by [`PrincipalId`], so each JWT subject covered by the
//! `default` entry has its own bucket and its own session count, with the
//! entry's numbers.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use parking_lot::Mutex;

use super::principal::{Principal, PrincipalId};

/// A refused call: how long until the next one is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub Duration);

impl RetryAfter {
    /// The wait, in whole seconds rounded up and at least 1, for an HTTP
    /// `Retry-After` header.
    pub fn header_secs(&self) -> u64 {
        let secs = self.0.as_secs() + u64::from(self.0.subsec_nanos() > 0);
        secs.max(1)
    }
}

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rate limit exceeded: retry in {} s", self.header_secs())
    }
}

type Bucket<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// A bucket idle this long is full again (the refill takes one minute), so
/// dropping it loses nothing; this bounds memory for many JWT subjects.
const IDLE_BUCKET_TTL: Duration = Duration::from_secs(120);
/// Most buckets kept at once.
const MAX_BUCKETS: u64 = 100_000;

/// The `calls_per_minute` token bucket of every client: a burst of
/// `calls_per_minute`, refilled evenly over a minute (GCRA, `governor`).
/// Count `tools/call` and description fetches (`resources/read` of the
/// descriptions resource, `describe_tools`) with [`CallLimiter::check`].
pub struct CallLimiter<C: Clock = DefaultClock> {
    buckets: moka::sync::Cache<(PrincipalId, NonZeroU32), Arc<Bucket<C>>>,
    clock: C,
}

impl CallLimiter<DefaultClock> {
    /// A limiter on the monotonic clock.
    pub fn new() -> Self {
        Self::with_clock(DefaultClock::default())
    }
}

impl Default for CallLimiter<DefaultClock> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C> CallLimiter<C>
where
    C: Clock + Clone + Send + Sync + 'static,
    C::Instant: Send + Sync,
{
    /// A limiter on `clock` (tests use governor's `FakeRelativeClock`).
    pub fn with_clock(clock: C) -> Self {
        let buckets = moka::sync::Cache::builder().time_to_idle(IDLE_BUCKET_TTL).max_capacity(MAX_BUCKETS).build();
        Self { buckets, clock }
    }

    /// Takes one call from `principal`'s bucket; `Err` with the wait when it
    /// is empty. Always `Ok` for a principal without `calls_per_minute`.
    pub fn check(&self, principal: &Principal) -> Result<(), RetryAfter> {
        self.check_n(principal, NonZeroU32::MIN)
    }

    /// Takes `n` calls at once from `principal`'s bucket (a request that
    /// makes `n` upstream calls); `Err` with the wait when it holds fewer.
    /// More than a whole minute's calls are never allowed at once: the wait
    /// is then a minute.
    pub fn check_n(&self, principal: &Principal, n: NonZeroU32) -> Result<(), RetryAfter> {
        let Some(rate) = principal.policy().calls_per_minute else { return Ok(()) };
        let bucket = self.buckets.get_with((principal.id().clone(), rate), || {
            Arc::new(RateLimiter::direct_with_clock(Quota::per_minute(rate), self.clock.clone()))
        });
        match bucket.check_n(n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(RetryAfter(not_until.wait_time_from(self.clock.now()))),
            Err(_) => Err(RetryAfter(Duration::from_secs(60))),
        }
    }
}

impl<C: Clock> fmt::Debug for CallLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallLimiter").field("buckets", &self.buckets.entry_count()).finish()
    }
}

/// A new session refused by `max_sessions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many sessions: this client may hold at most {limit} at once")]
pub struct TooManySessions {
    /// The client's `max_sessions`.
    pub limit: u32,
}

type Counts = Arc<Mutex<HashMap<PrincipalId, u32>>>;

/// Open sessions per client, against each client's `max_sessions`.
#[derive(Debug, Clone, Default)]
pub struct SessionLimiter {
    counts: Counts,
}

impl SessionLimiter {
    /// No sessions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a new session of `principal`, or refuses it when the client
    /// already holds `max_sessions`. Keep the guard as long as the session
    /// lives: dropping it releases the slot.
    pub fn acquire(&self, principal: &Principal) -> Result<SessionGuard, TooManySessions> {
        let mut counts = self.counts.lock();
        let count = counts.entry(principal.id().clone()).or_insert(0);
        if let Some(limit) = principal.policy().max_sessions
            && *count >= limit.get()
        {
            return Err(TooManySessions { limit: limit.get() });
        }
        *count += 1;
        Ok(SessionGuard { counts: self.counts.clone(), id: principal.id().clone() })
    }

    /// Sessions `id` holds now.
    pub fn count(&self, id: &PrincipalId) -> u32 {
        self.counts.lock().get(id).copied().unwrap_or(0)
    }
}

/// One counted session; releases its slot when dropped.
#[derive(Debug)]
#[must_use = "the session slot is released when the guard is dropped"]
pub struct SessionGuard {
    counts: Counts,
    id: PrincipalId,
}

impl SessionGuard {
    /// The client holding the slot.
    pub fn principal(&self) -> &PrincipalId {
        &self.id
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        let mut counts = self.counts.lock();
        if let Some(count) = counts.get_mut(&self.id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.id);
            }
        }
    }
}

#[cfg(test)]
mod tests;
