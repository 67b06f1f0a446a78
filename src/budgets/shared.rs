//! Budgets kept in Redis, shared by every replica: one script run per call
//! checks every budget the call takes from and, only if all allow it,
//! takes from each, atomically. Time is Redis's own (`TIME`), so replicas
//! with skewed clocks agree.
//!
//! Per-minute budgets are GCRA, as `governor` counts them in one process: a
//! key holds the theoretical arrival time in milliseconds. Daily and breaker
//! budgets are counters that expire at the end of their window (UTC
//! midnight, or the breaker's window after the first call).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::local::exceeded;
use super::{Check, Exceeded, Kind};
use crate::shared::{Connection, Unavailable};

/// After Redis failed to answer, how long calls are counted locally before
/// it is asked again: an outage must not add a timeout to every call.
const RETRY_REDIS_AFTER: Duration = Duration::from_secs(1);

/// KEYS: one per budget. ARGV: per budget, its kind (`m` minute, `d` UTC
/// day, `w` window), its most calls, the window in ms (`w`), and how many
/// calls the request makes (`m` only; windows count one).
/// Answers `{0, 0}` when every budget took the call, else `{i, wait_ms}`
/// for the first budget `i` (1-based) that refused it, and takes nothing.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local period = 60000
local tats = {}
for i = 1, #KEYS do
  local kind, max = ARGV[4 * i - 3], tonumber(ARGV[4 * i - 2])
  if kind == 'm' then
    local tat = tonumber(redis.call('GET', KEYS[i]) or '0')
    if tat < now then tat = now end
    local next = tat + tonumber(ARGV[4 * i]) * period / max
    if next - now > period then
      return {i, math.ceil(next - now - period)}
    end
    tats[i] = next
  else
    local count = tonumber(redis.call('GET', KEYS[i]) or '0')
    if count >= max then
      local ttl = redis.call('PTTL', KEYS[i])
      if ttl < 0 then ttl = 1000 end
      return {i, ttl}
    end
  end
end
for i = 1, #KEYS do
  local kind = ARGV[4 * i - 3]
  if kind == 'm' then
    redis.call('SET', KEYS[i], tostring(tats[i]), 'PX', math.ceil(tats[i] - now) + 1)
  elseif redis.call('INCR', KEYS[i]) == 1 then
    if kind == 'd' then
      redis.call('PEXPIREAT', KEYS[i], (math.floor(now / 86400000) + 1) * 86400000)
    else
      redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[4 * i - 1]))
    end
  end
end
return {0, 0}
";

pub(super) struct Shared {
    connection: Arc<Connection>,
    prefix: String,
    take: redis::Script,
    /// Until when Redis is not asked (it failed to answer lately).
    resting: Mutex<Option<Instant>>,
}

impl Shared {
    pub(super) fn new(connection: Arc<Connection>, key_prefix: &str) -> Self {
        Self {
            connection,
            prefix: format!("{key_prefix}limit:"),
            take: redis::Script::new(TAKE),
            resting: Mutex::new(None),
        }
    }

    /// Takes one call from each of `checks` in Redis; `Err` when Redis did
    /// not answer (the caller counts locally then).
    pub(super) async fn take(&self, checks: &[Check]) -> Result<Result<(), Exceeded>, Unavailable> {
        self.take_n(checks, 1).await
    }

    /// Takes `n` calls from each per-minute budget of `checks` (one from
    /// the others).
    pub(super) async fn take_n(&self, checks: &[Check], n: u32) -> Result<Result<(), Exceeded>, Unavailable> {
        if self.resting.lock().is_some_and(|until| Instant::now() < until) {
            return Err(Unavailable::new("Redis failed lately; counting locally for now"));
        }
        let mut invocation = self.take.prepare_invoke();
        for check in checks {
            invocation.key(format!("{}{}", self.prefix, check.key));
            let (kind, window) = match check.kind {
                Kind::Minute => ("m", 0),
                Kind::Day => ("d", 0),
                Kind::Window(w) => ("w", u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
            };
            invocation.arg(kind).arg(check.max).arg(window).arg(n);
        }
        match self.connection.query::<(usize, u64)>(invocation).await {
            Ok((0, _)) => {
                *self.resting.lock() = None;
                Ok(Ok(()))
            }
            Ok((i, wait_ms)) => {
                *self.resting.lock() = None;
                let check = checks.get(i - 1).unwrap_or(&checks[0]);
                Ok(Err(exceeded(check, Duration::from_millis(wait_ms))))
            }
            Err(e) => {
                *self.resting.lock() = Some(Instant::now() + RETRY_REDIS_AFTER);
                Err(e)
            }
        }
    }
}
