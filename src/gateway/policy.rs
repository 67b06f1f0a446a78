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
//! included: guessing costs like calling) and reads of the descriptions
//! resource. A call over the limit is refused here, before any layer below
//! and any upstream sees it, with [`codes::RATE_LIMITED`] and the wait in
//! `data`: a JSON-RPC error rather than an HTTP 429, because the refusal
//! concerns one request (a batch may mix refused and served ones) and
//! reaches the client the same way on every transport (a JSON answer, an
//! SSE stream, legacy SSE, stdio).

use std::sync::Arc;

use serde_json::json;

use super::layer::{Exchange, Layer, Next};
use super::mrtr::Translator;
use crate::auth::{CallLimiter, Principal, RetryAfter};
use crate::jsonrpc::{ErrorObject, Outcome, Request, codes};
use crate::protocol::method;

/// The policy layer.
pub struct Policy {
    calls: CallLimiter,
    /// Held calls: whether a retry resumes one held for its client.
    mrtr: Arc<Translator>,
}

impl Policy {
    pub fn new(mrtr: Arc<Translator>) -> Self {
        Self { calls: CallLimiter::default(), mrtr }
    }
}

impl Layer for Policy {
    async fn serve<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        if counts(&cx, &request) && !self.resumes_held_call(&cx).await {
            let principal = cx.resolved.caller();
            if let Err(wait) = self.calls.check(principal) {
                tracing::info!(client = %principal.id(), retry_after = ?wait.0, "request refused: calls_per_minute");
                return Outcome::error(rate_limited(principal, wait));
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
/// call, or a fetch of tool descriptions.
fn counts(cx: &Exchange<'_>, request: &Request) -> bool {
    match request.method.as_str() {
        method::TOOLS_CALL => true,
        method::RESOURCES_READ => cx.resolved.descriptions().is_some(),
        _ => false,
    }
}

/// The refusal of a call over the limit: what the limit is and when to retry.
fn rate_limited(principal: &Principal, wait: RetryAfter) -> ErrorObject {
    let limit = principal.policy().calls_per_minute.map_or(0, |n| n.get());
    let seconds = wait.header_secs();
    ErrorObject::new(
        codes::RATE_LIMITED,
        format!(
            "Rate limit exceeded: client `{}` may make {limit} tool calls and description fetches per minute; \
             retry in {seconds} s",
            principal.name()
        ),
    )
    .with_data(json!({
        "retryAfterSeconds": seconds,
        "retryAfterMs": u64::try_from(wait.0.as_millis()).unwrap_or(u64::MAX),
        "callsPerMinute": limit,
    }))
}
