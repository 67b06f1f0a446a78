//! `calls_per_minute`, counted where the per-tool budgets are: in this
//! process (`governor`, [`CallLimiter`]) or, once the gateway shares a
//! Redis, in Redis with the same GCRA, so that a client's calls count
//! against one budget on every replica.

use std::num::NonZeroU32;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::rules::{Check, Kind, Limit};
use super::shared::Shared;
use crate::auth::{CallLimiter, Principal, RetryAfter};
use crate::shared::Connection;
use prometheus_client::metrics::counter::Counter;

/// Every client's `calls_per_minute`.
#[derive(Default)]
pub struct CallRate {
    local: CallLimiter,
    /// Redis, and the count of calls counted here alone when it did not answer.
    shared: OnceLock<(Shared, Counter)>,
}

impl CallRate {
    /// Counts in Redis from now on (the local buckets are the fallback,
    /// each use of which goes into `fallbacks`).
    pub fn share(&self, connection: Arc<Connection>, key_prefix: &str, fallbacks: Counter) {
        let _ = self.shared.set((Shared::new(connection, key_prefix), fallbacks));
    }

    /// Takes `n` calls from `principal`'s `calls_per_minute`. Always `Ok`
    /// for a client without the limit.
    pub async fn take(&self, principal: &Principal, n: NonZeroU32) -> Result<(), RetryAfter> {
        let Some(rate) = principal.policy().calls_per_minute else { return Ok(()) };
        if let Some((shared, fallbacks)) = self.shared.get() {
            let check = Check {
                key: format!("{}:calls_per_minute:{rate}", principal.id()),
                kind: Kind::Minute,
                limit: Limit::PerMinute,
                max: rate.get(),
                tools: Arc::from("*"),
            };
            match shared.take_n(std::slice::from_ref(&check), n.get()).await {
                Ok(Ok(())) => return Ok(()),
                // More than a minute's calls at once wait a minute, as here.
                Ok(Err(exceeded)) => return Err(RetryAfter(exceeded.retry_after.min(Duration::from_secs(60)))),
                Err(e) => {
                    tracing::debug!(error = %e, "counting calls_per_minute here: the shared store does not answer")
                }
            }
            fallbacks.inc();
        }
        self.local.check_n(principal, n)
    }
}
