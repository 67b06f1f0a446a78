//! Per-tool budgets: `[[limits]]` for every client, each client's own
//! `limits`, the write-tool default and the identical-call breaker.
//!
//! A call of a catalog tool takes one from each budget that applies to its
//! client and tool ([`rules`]), all or none: a refused call takes nothing.
//! Budgets are kept per client ([`Principal`](crate::auth::Principal)),
//! never per session or replica, so a client that re-initializes gets no
//! fresh budget:
//! - in this process ([`local`]) without `[state] redis_url`;
//! - in Redis ([`shared`]) with it, one script run per call, so that every
//!   replica counts against the same budget. When Redis does not answer,
//!   each replica counts alone with the full limits, and says so in
//!   `toolgate_limit_fallbacks_total`.
//!
//! Over a budget, the call is answered with a tool error the model can read
//! ([`refusal`]): which limit, when it resets, and what to do.

mod calls;
mod local;
pub mod refusal;
pub mod rules;
mod shared;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::auth::Principal;
use crate::catalog::ToolEntry;
use crate::config::Config;
use crate::shared::Connection;
use prometheus_client::metrics::counter::Counter;

pub use calls::CallRate;
pub use rules::{Check, Kind, Limit, Rules};

/// A call over a budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exceeded {
    /// Which limit.
    pub limit: Limit,
    /// Its number (calls per minute, per day, or identical calls per window).
    pub max: u32,
    /// The identical-call breaker's window, for that limit.
    pub window: Option<Duration>,
    /// The glob the limit was set for (`*` for the defaults).
    pub tools: Arc<str>,
    /// How long until a call can succeed again.
    pub retry_after: Duration,
}

impl Exceeded {
    /// When the call can succeed again, on the wall clock, to the nearest
    /// second (a daily budget resets at 00:00:00 UTC, not a millisecond
    /// before).
    pub fn resets_at(&self) -> SystemTime {
        let at = (SystemTime::now() + self.retry_after).duration_since(UNIX_EPOCH).unwrap_or_default();
        let ms = u64::try_from(at.as_millis()).unwrap_or(u64::MAX);
        UNIX_EPOCH + Duration::from_secs(ms.saturating_add(500) / 1000)
    }
}

/// The budgets of every client.
pub struct Budgets {
    rules: Rules,
    local: local::Local,
    shared: Option<shared::Shared>,
    /// Calls counted here alone because Redis did not answer.
    fallbacks: Counter,
}

impl Budgets {
    /// The gateway-wide rules of `config`, kept in Redis when `connection`
    /// is the shared store. `None` when no client can have a budget: no
    /// `[[limits]]`, and no `[auth]` whose clients (now or after a reload)
    /// could set their own.
    /// Calls counted here alone because Redis did not answer go into
    /// `fallbacks` (`toolgate_limit_fallbacks_total`).
    pub fn new(config: &Config, connection: Option<Arc<Connection>>, fallbacks: Counter) -> Option<Self> {
        let rules = Rules::gateway(&config.limits);
        if rules.is_empty() && !config.auth.is_enabled() {
            return None;
        }
        let shared = connection.map(|c| shared::Shared::new(c, &config.state.key_prefix));
        Some(Self { rules, local: local::Local::default(), shared, fallbacks })
    }

    /// Takes one call of `entry` by `principal`, with `arguments`, from
    /// each budget that applies.
    pub async fn take(
        &self,
        principal: &Principal,
        entry: &ToolEntry,
        arguments: Option<&Value>,
    ) -> Result<(), Exceeded> {
        let checks = self.rules.checks(principal, entry, arguments);
        if checks.is_empty() {
            return Ok(());
        }
        if let Some(shared) = &self.shared {
            match shared.take(&checks).await {
                Ok(result) => return result,
                Err(e) => {
                    tracing::debug!(error = %e, "counting a call's budgets here: the shared store does not answer")
                }
            }
            self.fallbacks.inc();
        }
        self.local.take(&checks)
    }
}

#[cfg(test)]
mod tests;
