//! What the forwarder reaches upstreams with: the live state it reads
//! ([`Views`]), the HTTP client and identity service connections are made
//! with, the metrics calls are counted in, and [`Upward`], where what
//! upstreams send outside a call's answer goes. The forwarder, the
//! connections it opens and the held calls of sessionless clients share one
//! [`Reach`]; none of them holds the [`Gateway`](super::Gateway).

use std::sync::{Arc, Weak};

use super::state::GwSession;
use super::views::Views;
use crate::identity::Identity;
use crate::metrics::Metrics;
use crate::server::RequestCtx;
use crate::upstream::{PeerEvents, Route};

/// The forwarder's dependencies (see the module doc).
pub(crate) struct Reach {
    pub views: Views,
    pub http: reqwest::Client,
    pub identity: Arc<Identity>,
    pub metrics: Arc<Metrics>,
    pub upward: Arc<dyn Upward>,
}

/// Where upstream traffic goes back up to: the sessions, their streams and
/// the catalog (the gateway implements it, see
/// [`events`](super::events)). What the forwarder needs of the layers above
/// it, and nothing more.
pub(crate) trait Upward: Send + Sync {
    /// Where what an upstream sends about one forwarded call (progress,
    /// server-to-client requests) goes: onto the stream of `session`'s
    /// request `ctx`, which upstream `index` serves.
    fn route(&self, session: &Arc<GwSession>, ctx: &RequestCtx, index: usize) -> Arc<dyn Route>;

    /// Where the unsolicited traffic of an upstream session of upstream
    /// `index` opened for `session` goes (no session: a client's connection
    /// for its sessionless calls, which no one hears outside a call).
    fn session_events(&self, session: Weak<GwSession>, index: usize) -> Arc<dyn PeerEvents>;

    /// Everyone who hears about list changes and resource updates.
    fn audience(&self) -> Vec<Arc<GwSession>>;
}
