//! Results of a modern upstream for clients of older revisions: the
//! modern-only result fields are removed, and an `InputRequiredResult` is
//! answered by asking the client ordinary server-to-client requests
//! (elicitation, sampling, roots) over the session's own path, then
//! retrying upstream with `inputResponses` and the byte-exact
//! `requestState`, under a new JSON-RPC id, for a bounded number of rounds.
//! A modern client gets the upstream's result untouched and retries itself.

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::super::error::UpstreamError;
use super::super::peer::{Call, Returned};
use super::super::service::Step;
use crate::jsonrpc::members;
use crate::jsonrpc::{ErrorObject, Object, Outcome, codes};
use crate::protocol::method;
use crate::protocol::modern::{input, meta, result};

/// Most rounds one request may take (the TypeScript SDK's shim allows 8).
pub const MAX_ROUNDS: usize = 8;
/// How long the client may take to answer one round's requests.
pub const ROUND_TIMEOUT: Duration = Duration::from_secs(600);

/// Removes the fields only the modern era has from a result (`resultType`,
/// `ttlMs`, `cacheScope`, and `_meta`'s `serverInfo`, which names the
/// upstream, not the server the client talks to), for a client of an older
/// revision.
pub fn strip_modern_fields(outcome: &mut Outcome) {
    if read_raw(outcome, false) {
        strip_tree(outcome);
    }
}

/// A modern upstream's answer, for a client of an older revision: the
/// `InputRequiredResult` it is, or `None` once `outcome` is the final
/// result, its modern-only fields stripped ([`strip_modern_fields`]).
pub fn settle_answer(outcome: &mut Outcome) -> Option<InputRequired> {
    if !read_raw(outcome, true) {
        return None;
    }
    let asked = input_required(outcome);
    if asked.is_none() {
        strip_tree(outcome);
    }
    asked
}

/// The raw-text part of [`strip_modern_fields`] and [`settle_answer`]:
/// whether `outcome` is (now) a tree still to be read. A result decoded
/// from a peer stays text, its members found as it was decoded: an input
/// request (when the caller `asks`) is told from a final result by its
/// `resultType`, and a final one's fields are dropped from the text, the
/// rest (the content) never parsed into a tree. (The text is not searched
/// for `resultType` first: a modern upstream's results carry it, so the
/// search cost a scan of the whole text, about 900 instructions a call,
/// before the members were read anyway.)
fn read_raw(outcome: &mut Outcome, asks: bool) -> bool {
    let Outcome::Prepared(raw) = outcome else { return true };
    let stripped = match raw.object_mut() {
        Some(top) => strip_object(top, asks),
        None => Stripped::Unread,
    };
    match stripped {
        Stripped::Done => false,
        // An input request, or text this does not read: as a tree.
        Stripped::Asks | Stripped::Unread => match serde_json::from_str::<Value>(raw.get()) {
            Ok(v) => {
                *outcome = Outcome::Result(v);
                true
            }
            Err(_) => false,
        },
    }
}

/// [`strip_modern_fields`] on a result that is a tree.
fn strip_tree(outcome: &mut Outcome) {
    if let Outcome::Result(Value::Object(r)) = outcome {
        for key in result::MODERN_ONLY {
            r.remove(key);
        }
        if let Some(Value::Object(m)) = r.get_mut("_meta") {
            m.remove(meta::SERVER_INFO);
            if m.is_empty() {
                r.remove("_meta");
            }
        }
    }
}

/// What [`strip_object`] made of a result.
enum Stripped {
    /// A final result, stripped in place (if it had anything to strip).
    Done,
    /// An input request (when the caller asks): the caller reads it.
    Asks,
    /// Text this does not handle: the caller parses it instead.
    Unread,
}

/// [`strip_modern_fields`] on a result's members, in its text: the
/// modern-only ones are cut out and `_meta` is cleaned, the rest of the
/// text left as it was; nothing is parsed into a tree unless `_meta` keeps
/// members besides the upstream's identity (then it is, as it is small). A
/// result without a top-level `resultType` has nothing to strip; a repeated
/// `_meta` or `resultType` is [`Stripped::Unread`].
fn strip_object(top: &mut Object, asks: bool) -> Stripped {
    // Without a `resultType`, neither an input request nor anything to strip.
    let Some(kind) = top.get(result::RESULT_TYPE) else { return Stripped::Done };
    // Repeated: the caller's tree keeps the last, as a parser would.
    if top.count("_meta") > 1 || top.count(result::RESULT_TYPE) > 1 {
        return Stripped::Unread;
    }
    if asks {
        // `"input_required"` as written, or written with escapes (rare:
        // the tree tells).
        let plain = kind.strip_prefix('"').and_then(|k| k.strip_suffix('"'));
        if plain == Some(result::INPUT_REQUIRED) || kind.contains('\\') {
            return Stripped::Asks;
        }
    }
    let meta = top.get("_meta").map(clean_meta);
    // From the last member to the first: an edit moves only what follows it.
    for index in (0..top.len()).rev() {
        let Some(key) = top.key_at(index) else { continue };
        let cut = result::MODERN_ONLY.contains(&key) || (key == "_meta" && matches!(meta, Some(Meta::Dropped)));
        let rewritten = match &meta {
            Some(Meta::Rewritten(m)) if key == "_meta" => Some(m),
            _ => None,
        };
        if cut {
            top.remove(index);
        } else if let Some(m) = rewritten {
            top.replace_value(index, m.get());
        }
    }
    Stripped::Done
}

/// What becomes of a result's `_meta`.
enum Meta {
    /// It held only the upstream's identity.
    Dropped,
    /// Not an object: kept as it came.
    Raw,
    /// Its other members, as JSON text (parsed and written again, as a
    /// tree would be).
    Rewritten(Box<RawValue>),
}

/// `_meta` (its text) without the upstream's identity (`serverInfo`), as a
/// tree would have it: dropped once empty, its other members written again.
fn clean_meta(value: &str) -> Meta {
    if !value.starts_with('{') {
        return Meta::Raw;
    }
    // The usual `_meta`: the identity alone, dropped without a tree.
    if let Some(members) = Object::parse(value)
        && members.iter().all(|(key, _)| key == meta::SERVER_INFO)
    {
        return Meta::Dropped;
    }
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(value) else { return Meta::Raw };
    m.remove(meta::SERVER_INFO);
    match m.is_empty() {
        true => Meta::Dropped,
        false => Meta::Rewritten(members::raw(&m)),
    }
}

/// An `InputRequiredResult`: the upstream's requests, by key, and its state.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// `inputRequests`: key → `{method, params}`.
    pub requests: Map<String, Value>,
    /// `requestState`, to echo exactly (never invented when absent).
    pub state: Option<Value>,
}

/// The `InputRequiredResult` in `outcome`, if it is one.
pub fn input_required(outcome: &Outcome) -> Option<InputRequired> {
    let parsed;
    let r = match outcome {
        Outcome::Result(v) => v,
        Outcome::Prepared(raw) if raw.get().contains(result::INPUT_REQUIRED) => {
            parsed = serde_json::from_str::<Value>(raw.get()).ok()?;
            &parsed
        }
        _ => return None,
    };
    if r.get(result::RESULT_TYPE).and_then(Value::as_str) != Some(result::INPUT_REQUIRED) {
        return None;
    }
    let requests = r.get(result::INPUT_REQUESTS).and_then(Value::as_object).cloned().unwrap_or_default();
    Some(InputRequired { requests, state: r.get(result::REQUEST_STATE).cloned() })
}

/// The params of the next round: the original request's, plus the answers
/// and the state (and nothing of an earlier round's).
pub fn retry_params(original: Option<&Value>, responses: Map<String, Value>, state: Option<&Value>) -> Value {
    let mut p = original.and_then(Value::as_object).cloned().unwrap_or_default();
    p.remove(result::INPUT_RESPONSES);
    p.remove(result::REQUEST_STATE);
    if !responses.is_empty() {
        p.insert(result::INPUT_RESPONSES.into(), Value::Object(responses));
    }
    if let Some(state) = state {
        p.insert(result::REQUEST_STATE.into(), state.clone());
    }
    Value::Object(p)
}

/// The server-to-client request one input request stands for: `(method, params)`.
pub fn as_client_request(request: &Value) -> Option<(String, Option<Value>)> {
    let method = request.get("method").and_then(Value::as_str)?;
    input::METHODS.contains(&method).then(|| (method.to_owned(), request.get("params").cloned()))
}

/// How a failed multi-round-trip request reaches a client of an older
/// revision: a tool error result for `tools/call` (the model sees why), a
/// JSON-RPC error otherwise.
pub fn failure(request_method: &str, why: String) -> Outcome {
    if request_method == method::TOOLS_CALL {
        Outcome::Result(json!({"content": [{"type": "text", "text": why}], "isError": true}))
    } else {
        Outcome::error(ErrorObject::new(codes::INTERNAL_ERROR, why))
    }
}

#[cfg(test)]
mod tests;

/// Calls `call` through `stack` (a modern upstream's, for a client of an
/// older revision): answers `InputRequiredResult`s by asking the client
/// through the call's route, retries with the answers, and strips the
/// modern-only fields of the final result.
pub(crate) async fn drive<S: Step<Call>>(stack: &S, mut call: Call) -> Result<Outcome, UpstreamError> {
    // All a failure needs to know of the request (see `failure`).
    let request_method = if call.method == method::TOOLS_CALL { method::TOOLS_CALL } else { "" };
    let route = call.route.clone();
    // Each round's request comes back from the peer with its answer (moved,
    // not copied up front: most calls take one round).
    call.hand_back = true;
    let template = call.resend();
    let mut current = call;
    for round in 0..=MAX_ROUNDS {
        let answered = stack.call(current).await.map_err(|f| f.error)?;
        let mut outcome = answered.outcome;
        let Some(asked) = settle_answer(&mut outcome) else {
            return Ok(outcome);
        };
        // The request as sent (its envelope is stamped again, the same).
        let Some(Returned { method: sent_method, params: original }) = answered.request else {
            return Ok(failure(request_method, "the upstream asked for input, but the request was lost".into()));
        };
        if round == MAX_ROUNDS {
            break;
        }
        let Some(route) = route.as_ref() else {
            return Ok(failure(request_method, "the upstream asked for input, but no client can be asked".into()));
        };
        // A call no one can cancel gets a token no one fires.
        let cancel = template.cancel().cloned().unwrap_or_default();
        let mut pending = Vec::with_capacity(asked.requests.len());
        for (key, request) in &asked.requests {
            let Some((method, params)) = as_client_request(request) else {
                let shown = request.get("method").map(Value::to_string).unwrap_or_default();
                return Ok(failure(
                    request_method,
                    format!("the upstream asked for input of an unknown kind ({shown})"),
                ));
            };
            let ask = route.ask(method.clone(), params, cancel.child_token());
            pending.push(async move { (key.clone(), method, tokio::time::timeout(ROUND_TIMEOUT, ask).await) });
        }
        let answers = tokio::select! {
            answers = futures::future::join_all(pending) => answers,
            _ = cancel.cancelled() => return Err(UpstreamError::Cancelled),
        };
        let mut responses = Map::new();
        for (key, method, answer) in answers {
            match answer {
                Err(_) => {
                    let why = format!("the client did not answer {method} within {}s", ROUND_TIMEOUT.as_secs());
                    return Ok(failure(request_method, why));
                }
                Ok(Outcome::Error(e)) => {
                    return Ok(failure(request_method, format!("the client could not answer {method}: {e}")));
                }
                Ok(ok) => {
                    responses.insert(key, ok.result_value().unwrap_or(Value::Null));
                }
            }
        }
        if asked.requests.is_empty() {
            // Only state to carry: retry at once, but not in a tight loop.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        current = template.clone().round(sent_method, retry_params(original.as_ref(), responses, asked.state.as_ref()));
    }
    Ok(failure(request_method, format!("the upstream still asked for input after {MAX_ROUNDS} rounds")))
}
