//! Layers over the forwarder.
//!
//! Every client request goes through the gateway's layers in order, then to
//! the [`Forwarder`](super::forward::Forwarder), which routes it, transparently,
//! to the upstream that owns it. A layer serves what it owns itself, changes
//! a request or its outcome, or refuses it, and passes the rest on with
//! [`Next::run`]. A layer the configuration does not need is `None`
//! (`Option<L>` is a layer that passes everything on): `mode = "passthrough"`
//! everywhere is the forwarder alone; progressive disclosure is one layer
//! ([`Disclosure`](super::disclosure::Disclosure)).
//!
//! The chain is static ([`Then`]), so a request's future holds every
//! layer's state inline: no allocation or copy per layer on the hot path.
//!
//! A request is [resolved](super::resolve) once before the chain: the
//! [`Exchange`] carries the result, so no layer parses the tool name, looks
//! the tool up or verifies a multi-round-trip state again. A layer holds
//! its own dependencies (the catalog views, the pager, the metrics, the
//! rate limiter); only the end of the chain, the forwarder, sees the whole
//! gateway ([`Forwarding`]), whose upstream connections it drives.

use std::future::Future;
use std::sync::Arc;

use futures::future::Either;

use super::note::RequestNote;
use super::resolve::Resolved;
use super::state::GwSession;
use crate::jsonrpc::{Outcome, Request};
use crate::server::{RequestCtx, ServerOffer};

/// One client request's surroundings, as every layer sees them.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    pub session: &'a Arc<GwSession>,
    pub ctx: &'a RequestCtx,
    /// The request resolved once before the layers (the tool called, the
    /// caller, a retry's checked state): layers read it, never re-parse.
    pub resolved: &'a Resolved,
    /// What the layers learn about the request, for its metrics.
    pub note: &'a RequestNote,
}

/// A layer over the forwarder.
pub trait Layer: Send + Sync + 'static {
    /// Serves `request`, or passes it on with `next.run`.
    fn serve<'a, N: Next<'a>>(
        &'a self,
        cx: Exchange<'a>,
        request: Request,
        next: N,
    ) -> impl Future<Output = Outcome> + Send + 'a;

    /// Adds what the layer offers to toolgate's `initialize` answer.
    fn offer(&self, offer: &mut ServerOffer) {
        let _ = offer;
    }
}

/// The rest of the chain after a layer.
pub trait Next<'a>: Send + 'a {
    /// Passes `request` on to the next layer (or the forwarder).
    fn run(self, cx: Exchange<'a>, request: Request) -> impl Future<Output = Outcome> + Send + 'a;
}

/// `layer`, then `next`.
pub struct Then<'a, L, N> {
    pub layer: &'a L,
    pub next: N,
}

impl<'a, L: Layer, N: Next<'a>> Next<'a> for Then<'a, L, N> {
    fn run(self, cx: Exchange<'a>, request: Request) -> impl Future<Output = Outcome> + Send + 'a {
        self.layer.serve(cx, request, self.next)
    }
}

/// A layer the configuration may leave out: absent, it passes everything on.
impl<L: Layer> Layer for Option<L> {
    /// Not an `async fn`: the layer's (or the next one's) future is returned
    /// as it is, not wrapped in one more that would be moved into its
    /// parent and then move it again on its first poll (the chain's futures
    /// are kilobytes each; see benches/README.md).
    fn serve<'a, N: Next<'a>>(
        &'a self,
        cx: Exchange<'a>,
        request: Request,
        next: N,
    ) -> impl Future<Output = Outcome> + Send + 'a {
        match self {
            Some(layer) => Either::Left(layer.serve(cx, request, next)),
            None => Either::Right(next.run(cx, request)),
        }
    }

    fn offer(&self, offer: &mut ServerOffer) {
        if let Some(layer) = self {
            layer.offer(offer);
        }
    }
}
