//! The per-client policy layer, outermost, present when `[auth]` configures
//! credentials: each client's `calls_per_minute`.
//!
//! What a client may see and reach is not decided here but by the catalog
//! view and routes every layer below already uses: the session's catalog
//! holds only the tools its client may see ([`Catalogs`](super::Catalogs)),
//! and the forwarder routes only to the upstreams it may use. So a hidden
//! tool is unknown to the disclosure layer, the describe tool, completions
//! and the forwarder alike, without a check of its own in any of them.
//!
//! The rate limit counts `tools/call` (the describe tool and unknown names
//! included: guessing costs like calling), reads of the descriptions
//! resource and `resources/subscribe` (a `subscriptions/listen` stream
//! takes one call per resource it subscribes to as it opens). A call over the limit is refused here, before any layer below
//! and any upstream sees it, with [`codes::RATE_LIMITED`] and the wait in
//! `data`: a JSON-RPC error rather than an HTTP 429, because the refusal
//! concerns one request (a batch may mix refused and served ones) and
//! reaches the client the same way on every transport (a JSON answer, an
//! SSE stream, legacy SSE, stdio).

use std::sync::Arc;

use super::layer::{Exchange, Layer, Next};
use super::mrtr::Translator;
use crate::budgets::CallRate;
use crate::jsonrpc::{Outcome, Request};
use crate::metrics::Metrics;
use crate::protocol::method;

/// The policy layer.
pub struct Policy {
    /// Each client's `calls_per_minute` (shared with the listen streams,
    /// which count their resource subscriptions in it).
    calls: Arc<CallRate>,
    /// Held calls: whether a retry resumes one held for its client.
    mrtr: Arc<Translator>,
    /// Counts the calls counted here alone (the shared store did not answer).
    metrics: Arc<Metrics>,
}

impl Policy {
    pub fn new(calls: Arc<CallRate>, mrtr: Arc<Translator>, metrics: Arc<Metrics>) -> Self {
        Self { calls, mrtr, metrics }
    }
}

impl Layer for Policy {
    async fn serve<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        if counts(&cx, &request) && !self.resumes_held_call(&cx).await {
            let principal = cx.resolved.caller();
            if let Err(wait) = self.calls.take(principal, std::num::NonZeroU32::MIN).await {
                tracing::info!(client = %principal.id(), retry_after = ?wait.0, "request refused: calls_per_minute");
                self.metrics.limit_refused(principal.name(), "calls_per_minute");
                cx.note.refused_with_error(super::note::Refusal::RateLimit);
                return Outcome::error(super::clients::rate_limited(principal, wait));
            }
        }
        next.run(cx, request).await
    }
}

impl Policy {
    /// Whether the request is the retry of a call held for this very client
    /// and request (a sessionless client answering a handshake-era
    /// upstream's question): the same call, counted in its first round. Only
    /// a call of a catalog tool can be one (the request's resolution checked
    /// its state); the describe tool and the descriptions resource never
    /// are, whatever `requestState` they carry. A call held on another
    /// replica is asked about there.
    async fn resumes_held_call(&self, cx: &Exchange<'_>) -> bool {
        match cx.resolved.retry() {
            Some(retry) => self.mrtr.resumes(retry).await,
            None => false,
        }
    }
}

/// Whether `request` takes from the client's `calls_per_minute`: a tool
/// call, a fetch of tool descriptions, or a resource subscription (each
/// costs a call upstream; a listen stream's count as many as it names).
fn counts(cx: &Exchange<'_>, request: &Request) -> bool {
    match request.method.as_str() {
        method::TOOLS_CALL | method::RESOURCES_SUBSCRIBE => true,
        method::RESOURCES_READ => cx.resolved.descriptions().is_some(),
        _ => false,
    }
}
