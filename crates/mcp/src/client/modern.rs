//! toolgate as a client of the sessionless 2026-07-28 revision ("modern"):
//! the era probe ([`probe`]), the per-request envelope ([`envelope`]), the
//! routing headers and the `x-mcp-header` rules ([`headers`]), results for
//! clients of older revisions and the multi-round-trip loop ([`rounds`]),
//! and the `subscriptions/listen` stream that replaces unsolicited
//! notifications ([`listen`]). Names come from [`crate::protocol::modern`].

pub mod envelope;
pub mod headers;
pub(crate) mod listen;
pub mod probe;
pub mod rounds;
pub mod subscriptions;

use std::sync::Arc;

use parking_lot::Mutex;

pub use envelope::ClientContext;
pub use headers::{ToolHeaders, ToolRouting};

use super::peer::ServerHello;

/// What one upstream's connections share about its era: the last probe's
/// answer (so a session's own connection needs no probe of its own) and the
/// `x-mcp-header` table of its tools.
#[derive(Default)]
pub struct UpstreamEra {
    known: Mutex<Option<ServerHello>>,
    /// The routing headers of the upstream's tools.
    pub tools: ToolHeaders,
    /// The resource URIs toolgate's clients subscribed to there.
    pub resources: subscriptions::ResourceSubscriptions,
}

impl UpstreamEra {
    /// A fresh, shared record.
    pub fn shared() -> Arc<Self> {
        Arc::default()
    }

    /// What the last probe found (`modern` tells the era).
    pub(crate) fn known(&self) -> Option<ServerHello> {
        self.known.lock().clone()
    }

    /// Remembers what the last probe found (a legacy answer clears a
    /// modern one).
    pub(crate) fn remember(&self, hello: &ServerHello) {
        *self.known.lock() = Some(hello.clone());
    }
}
