//! What the layers learn about a client request on its way down, for its
//! metrics: the upstream that answered it, and whether the gate refused it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Filled in by the layers and the forwarder while a request runs; read
/// once it is answered.
#[derive(Debug)]
pub struct RequestNote {
    /// The index of the upstream the request was last forwarded to;
    /// `usize::MAX` while none.
    upstream: AtomicUsize,
    refused: AtomicBool,
}

impl Default for RequestNote {
    fn default() -> Self {
        Self { upstream: AtomicUsize::new(usize::MAX), refused: AtomicBool::new(false) }
    }
}

impl RequestNote {
    /// The request went to upstream `index`.
    pub fn forwarded_to(&self, index: usize) {
        self.upstream.store(index, Ordering::Relaxed);
    }

    /// The disclosure gate refused the request.
    pub fn refused(&self) {
        self.refused.store(true, Ordering::Relaxed);
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
