//! The pause before reconnecting to an upstream, one rule for every
//! reconnection of the client: the control connection's supervisor, and a
//! 2026-07-28 upstream's listen stream.

use std::time::Duration;

/// The first pause.
pub const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// The longest pause.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The pause before reconnection attempt `n` (0-based): doubling from
/// [`MIN_BACKOFF`], capped at [`MAX_BACKOFF`].
pub fn backoff(attempt: u32) -> Duration {
    MIN_BACKOFF.saturating_mul(1u32 << attempt.min(16)).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests;
