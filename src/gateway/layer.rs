//! Layers over the forwarder.
//!
//! Every client request goes through the gateway's layers in order, then to
//! the [`Forwarder`](super::forward::Forwarder), which routes it, transparently,
//! to the upstream that owns it. A layer serves what it owns itself, changes
//! a request or its outcome, or refuses it, and passes the rest on with
//! [`Next::run`]. `mode = "passthrough"` everywhere is the forwarder alone;
//! progressive disclosure is one layer ([`Disclosure`](super::disclosure::Disclosure)).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::forward::Forwarder;
use super::note::RequestNote;
use super::{Gateway, GwSession};
use crate::jsonrpc::{Outcome, Request};
use crate::server::{RequestCtx, ServerOffer};

/// One client request's surroundings, as every layer sees them.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    pub gateway: &'a Arc<Gateway>,
    pub session: &'a Arc<GwSession>,
    pub ctx: &'a RequestCtx,
    /// What the layers learn about the request, for its metrics.
    pub note: &'a RequestNote,
}

/// A layer over the forwarder.
pub trait Layer: Send + Sync + 'static {
    /// Serves `request`, or passes it on with `next.run`.
    fn serve<'a>(&'a self, cx: Exchange<'a>, request: Request, next: Next<'a>) -> BoxFuture<'a, Outcome>;

    /// Adds what the layer offers to toolgate's `initialize` answer.
    fn offer(&self, gateway: &Gateway, offer: &mut ServerOffer) {
        let _ = (gateway, offer);
    }
}

/// The rest of the chain after a layer: the layers below it, then the forwarder.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    layers: &'a [Box<dyn Layer>],
    forwarder: &'a Forwarder,
}

impl<'a> Next<'a> {
    /// The whole chain.
    pub fn new(layers: &'a [Box<dyn Layer>], forwarder: &'a Forwarder) -> Self {
        Self { layers, forwarder }
    }

    /// Passes `request` on to the next layer (or the forwarder).
    pub async fn run(self, cx: Exchange<'a>, request: Request) -> Outcome {
        match self.layers.split_first() {
            Some((layer, rest)) => layer.serve(cx, request, Next { layers: rest, forwarder: self.forwarder }).await,
            None => self.forwarder.serve(cx, request).await,
        }
    }
}
