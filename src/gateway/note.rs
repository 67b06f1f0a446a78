//! What the layers learn about a client request on its way down, for its
//! metrics and its audit event: the upstream that answered it, and whether
//! (and why) it was refused.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// Why a call was refused before it reached its upstream (for the audit
/// trail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Refusal {
    /// The description was not fetched (the disclosure gate).
    Gate = 1,
    /// The client's `calls_per_minute`.
    RateLimit = 2,
    /// A per-tool budget.
    Budget = 3,
    /// Arguments the tool's schema refuses.
    Arguments = 4,
    /// The tool's definition drifted and awaits approval (the lock).
    DriftHold = 5,
}

impl Refusal {
    /// Its name in the audit trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Gate => "gate",
            Refusal::RateLimit => "rate_limit",
            Refusal::Budget => "budget",
            Refusal::Arguments => "arguments",
            Refusal::DriftHold => "drift_hold",
        }
    }

    fn of(n: u8) -> Option<Self> {
        [Refusal::Gate, Refusal::RateLimit, Refusal::Budget, Refusal::Arguments, Refusal::DriftHold]
            .into_iter()
            .find(|r| *r as u8 == n)
    }
}

/// Filled in by the layers and the forwarder while a request runs; read
/// once it is answered.
#[derive(Debug)]
pub struct RequestNote {
    /// The index of the upstream the request was last forwarded to;
    /// `usize::MAX` while none.
    upstream: AtomicUsize,
    refused: AtomicBool,
    /// Why it was refused ([`Refusal`] as a number; 0: it was not).
    reason: AtomicU8,
}

impl Default for RequestNote {
    fn default() -> Self {
        Self { upstream: AtomicUsize::new(usize::MAX), refused: AtomicBool::new(false), reason: AtomicU8::new(0) }
    }
}

impl RequestNote {
    /// The request went to upstream `index`.
    pub fn forwarded_to(&self, index: usize) {
        self.upstream.store(index, Ordering::Relaxed);
    }

    /// A layer refused the request (counted as refused in the metrics).
    pub fn refused(&self, why: Refusal) {
        self.refused.store(true, Ordering::Relaxed);
        self.reason.store(why as u8, Ordering::Relaxed);
    }

    /// The request was refused with an error of its own (a rate limit, bad
    /// arguments): only the audit trail hears why.
    pub fn refused_with_error(&self, why: Refusal) {
        self.reason.store(why as u8, Ordering::Relaxed);
    }

    /// Why the request was refused, if it was.
    pub fn refusal(&self) -> Option<Refusal> {
        Refusal::of(self.reason.load(Ordering::Relaxed))
    }

    /// The upstream that answered, if toolgate did not answer itself (or
    /// merge several upstreams' answers).
    pub fn upstream(&self) -> Option<usize> {
        Some(self.upstream.load(Ordering::Relaxed)).filter(|&i| i != usize::MAX)
    }

    /// Whether the gate refused the request.
    pub fn was_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }
}
