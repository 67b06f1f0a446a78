//! The budgets layer, innermost: a call of a catalog tool that the gate let
//! through takes from its client's per-tool budgets (see
//! [`crate::budgets`]); over one, it is answered with a tool error the
//! model can read, and never reaches the upstream.
//!
//! It sits below the gate, so a call refused until its description is
//! fetched costs no budget, and above the forwarder's argument check, so a
//! call with bad arguments costs one, as a guess costs a call in
//! `calls_per_minute`.

use std::sync::Arc;

use serde_json::Value;

use super::layer::{Exchange, Layer, Next};
use super::resolve::Target;
use crate::budgets::{self, Budgets};
use crate::jsonrpc::{Outcome, Request};
use crate::metrics::Metrics;

/// The budgets layer.
pub struct BudgetLayer {
    budgets: Budgets,
    metrics: Arc<Metrics>,
}

impl BudgetLayer {
    pub fn new(budgets: Budgets, metrics: Arc<Metrics>) -> Self {
        Self { budgets, metrics }
    }
}

impl Layer for BudgetLayer {
    async fn serve<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        let Some(call) = cx.resolved.call() else { return next.run(cx, request).await };
        // The retry of a held call took its budgets in its first round.
        let retry = call.retry.as_ref().is_some_and(|state| state.own);
        let Target::Tool(entry) = &call.target else { return next.run(cx, request).await };
        if retry {
            return next.run(cx, request).await;
        }
        let arguments = request.params.as_ref().and_then(|p| p.get("arguments")).filter(|a| !Value::is_null(a));
        let principal = cx.resolved.caller();
        match self.budgets.take(principal, entry, arguments).await {
            Ok(()) => next.run(cx, request).await,
            Err(exceeded) => {
                let limit = exceeded.limit.as_str();
                let retry_after = exceeded.retry_after;
                tracing::info!(client = %principal.id(), tool = %entry.exposed, limit, ?retry_after, "call refused: over a per-tool budget");
                cx.note.refused(super::note::Refusal::Budget);
                self.metrics.limit_refused(principal.name(), limit);
                Outcome::Result(budgets::refusal::result(&entry.exposed, principal.name(), &exceeded))
            }
        }
    }
}
