//! What the gateway tells the audit trail (see [`crate::audit`]): who a
//! request comes from, each call of a catalog tool once it is answered or
//! refused, and each change of a session's concern configuration. The
//! layers report their own events (description fetches, searches) through
//! [`Views::audit`](super::views::Views::audit).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::note::RequestNote;
use super::resolve::Resolved;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::audit::{Audit, Call, Event, Kind, Who};
use crate::concerns::Configuration;
use crate::config::Mode;
use crate::jsonrpc::Outcome;

/// Who `session` belongs to, for an event.
pub(super) fn who(session: &GwSession) -> Who {
    let principal = session.state.principal();
    Who {
        principal: Arc::from(principal.id().to_string()),
        client: Arc::from(session.state.client_name()),
        session: session.modern().is_none().then(|| session.id_arc()),
    }
}

/// Reports the call `resolved` names, answered with `outcome` after
/// `latency`, with the `arguments` it was sent.
pub(super) fn call(
    audit: &Audit,
    session: &GwSession,
    resolved: &Resolved,
    upstreams: &[Arc<UpstreamHandle>],
    arguments: Option<Value>,
    answer: (&Outcome, &RequestNote, Duration),
) {
    let (outcome, note, latency) = answer;
    let Some(call) = resolved.call() else { return };
    let Some(entry) = call.entry() else { return };
    let retry = call.retry.as_ref().is_some_and(|state| state.own);
    let refusal = note.refusal();
    let granted = match entry.mode {
        Mode::Progressive if !retry => Some(refusal != Some(super::note::Refusal::Gate)),
        _ => None,
    };
    let upstream = upstreams.get(entry.upstream).map_or_else(|| Arc::from(""), |u| u.label.clone());
    let (what, result_bytes) = match refusal {
        Some(why) => (why.as_str(), None),
        None => classify(outcome),
    };
    let event = Box::new(Call {
        who: who(session),
        entry: entry.clone(),
        upstream,
        granted,
        routed: resolved.is_routed(),
        arguments,
        outcome: what,
        result_bytes,
        latency,
    });
    audit.emit(Event::now(if refusal.is_some() { Kind::Refusal(event) } else { Kind::Call(event) }));
}

/// Reports that `session`'s concern configuration is now `configuration`.
pub(super) fn concerns(audit: &Audit, session: &GwSession, configuration: Option<&Configuration>) {
    let concerns = configuration.map(|c| c.values().clone());
    audit.emit(Event::now(Kind::Concerns { who: who(session), concerns }));
}

/// `ok`, `tool_error` or `protocol_error`, and the result's size when it
/// passed through as text.
fn classify(outcome: &Outcome) -> (&'static str, Option<usize>) {
    match outcome {
        Outcome::Error(_) => ("protocol_error", None),
        Outcome::Result(v) => (if v.get("isError") == Some(&Value::Bool(true)) { "tool_error" } else { "ok" }, None),
        Outcome::Prepared(raw) => {
            let failed = crate::metrics::labels::raw_says_tool_error(raw);
            (if failed { "tool_error" } else { "ok" }, Some(raw.get().len()))
        }
    }
}
