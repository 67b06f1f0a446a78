//! A retry of a call held on another replica (shared `[mrtr] key` and
//! shared sessions): the replica the retry reached checks the state (all
//! but where the call is held) and passes the retry to the replica its state
//! names, over Redis pub/sub ([`crate::shared::exchange`]); that replica
//! resumes its held call exactly as for a retry of its own (the state is
//! verified again there, taken once from its table, and bound to the same
//! client and request), relays the call's notifications back while the
//! round lasts, says every [`HEARTBEAT`] that it is still at it, and sends
//! the round's outcome, which the first replica answers the client with
//! under the client's own JSON-RPC id.
//!
//! A replica gone before the retry (no one hears the call) or silent for
//! [`SILENCE`] (killed mid-round) makes the retry fail at once or within
//! [`SILENCE`] with `-32602` ("its call is no longer held": the client starts
//! over), never hang; Redis unavailable, with `-32019`.
//!
//! The rate limit asks the holding replica whether the call is held for
//! this client and request ([`holds`]), as it asks its own table for a call
//! held here: only then is the retry the same call as its first round.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Failure, Sink, Translator, Waiter};
use crate::gateway::views::Views;
use crate::jsonrpc::{Notification, Outcome};
use crate::mrtr::{Binding, MrtrError, StateError};
use crate::shared::{ExchangeError, STORE_TIMEOUT, SharedSessions};
use crate::upstream::UpstreamError;

/// How often the holding replica says it is still driving the round.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long the asking replica waits without hearing from the holding one
/// before it gives the retry up (three heartbeats).
const SILENCE: Duration = Duration::from_secs(3);

/// What a replica asks the one holding a call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Ask {
    /// Whether the call `token` names is held there for `binding`.
    Holds {
        /// The client's `requestState`.
        token: String,
        /// The retry's binding (its client and request).
        binding: Binding,
    },
    /// Resume the call `token` names with `answers`.
    Resume {
        /// The client's `requestState`.
        token: String,
        /// The retry's binding (its client and request).
        binding: Binding,
        /// The retry's `inputResponses`.
        answers: Map<String, Value>,
        /// The capabilities the client declared in the retry's envelope.
        capabilities: Value,
    },
    /// The client of the exchange `exchange` gave its retry up.
    Cancel {
        /// The exchange id of the `Resume`.
        exchange: String,
    },
}

/// What the holding replica replies.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Answer {
    /// To [`Ask::Holds`].
    Holds {
        /// Whether the call is held for that client and request.
        held: bool,
    },
    /// Still driving the round.
    Working,
    /// A notification of the held call (progress, logs) for the client.
    Notification {
        /// Its method.
        method: String,
        /// Its params.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<Value>,
    },
    /// The round's outcome: the JSON-RPC `result` or `error` member.
    Done {
        /// The result, if it succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// The error, if it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
    },
}

/// Rounds this replica drives for retries that reached others, by the
/// asker's exchange id (what cancels them).
#[derive(Default)]
pub(super) struct Rounds(Mutex<HashMap<String, CancellationToken>>);

/// Whether replica `replica` holds the call `token` names for `binding`;
/// `false` when it is gone or does not answer within [`STORE_TIMEOUT`].
pub(super) async fn holds(shared: &SharedSessions, replica: &str, token: &str, binding: &Binding) -> bool {
    let ask = Ask::Holds { token: token.to_owned(), binding: binding.clone() };
    let Ok(mut waiting) = shared.ask(replica, encode(&ask)).await else { return false };
    let answer = waiting.next(STORE_TIMEOUT).await.ok().and_then(|v| serde_json::from_value(v).ok());
    matches!(answer, Some(Answer::Holds { held: true }))
}

/// Passes a retry to the replica `replica` holding its call and waits for
/// the round's outcome there.
pub(super) async fn resume(
    shared: &Arc<SharedSessions>,
    replica: &str,
    token: &str,
    binding: &Binding,
    answers: Map<String, Value>,
    waiter: &Waiter,
) -> Result<Result<Outcome, UpstreamError>, Failure> {
    let gone = || Failure::Mrtr(MrtrError::InvalidState(StateError::ReplicaGone));
    let ask = Ask::Resume {
        token: token.to_owned(),
        binding: binding.clone(),
        answers,
        capabilities: waiter.capabilities.clone(),
    };
    let mut waiting = match shared.ask(replica, encode(&ask)).await {
        Ok(waiting) => waiting,
        Err(ExchangeError::Unavailable(e)) => {
            tracing::warn!(error = %e, "a retry could not be passed to the replica holding its call");
            return Ok(Ok(Outcome::error(e.to_error())));
        }
        Err(e) => {
            tracing::info!(replica, error = %e, "a retry's call was held by a replica that is gone");
            return Err(gone());
        }
    };
    tracing::debug!(replica, "a retry passed to the replica holding its call");
    // The holding replica stops the round if the client goes away here.
    let mut cancel_there = CancelThere { shared, replica, exchange: waiting.id().to_owned(), armed: true };
    loop {
        let reply = tokio::select! {
            reply = waiting.next(SILENCE) => reply,
            () = waiter.cancel.cancelled() => return Err(Failure::Upstream(UpstreamError::Cancelled)),
        };
        let Ok(reply) = reply else {
            cancel_there.armed = false;
            tracing::info!(replica, "the replica holding a retry's call stopped answering");
            return Err(gone());
        };
        match serde_json::from_value::<Answer>(reply) {
            Ok(Answer::Working | Answer::Holds { .. }) => {}
            Ok(Answer::Notification { method, params }) => waiter.sink.send(Notification::new(method, params)),
            Ok(Answer::Done { result, error }) => {
                cancel_there.armed = false;
                return Ok(Ok(match (result, error) {
                    (Some(result), None) => Outcome::Result(result),
                    (_, Some(error)) => Outcome::Error(error),
                    (None, None) => return Err(gone()),
                }));
            }
            Err(e) => tracing::debug!(error = %e, "a reply from another replica that is none of toolgate's ignored"),
        }
    }
}

/// Tells the holding replica, when the retry waiting on it is given up
/// here (its client went away), to stop the round as a local client's
/// going away would.
struct CancelThere<'a> {
    shared: &'a Arc<SharedSessions>,
    replica: &'a str,
    exchange: String,
    armed: bool,
}

impl Drop for CancelThere<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let ask = encode(&Ask::Cancel { exchange: std::mem::take(&mut self.exchange) });
        let message =
            crate::shared::BusMessage::Call { id: String::new(), from: self.shared.replica().to_string(), call: ask };
        let (to, shared) = (self.replica.to_owned(), self.shared.clone());
        crate::spawn(async move {
            let _ = shared.send_to(&to, &message).await;
        });
    }
}

impl Translator {
    /// A call another replica passed here (see the module's documentation);
    /// a resumed call's upstream is found in `views`.
    pub(crate) fn answer_call(self: &Arc<Self>, views: &Views, from: String, exchange: String, call: Value) {
        let ask = match serde_json::from_value::<Ask>(call) {
            Ok(ask) => ask,
            Err(e) => {
                tracing::debug!(error = %e, "a call from another replica that is none of toolgate's ignored");
                return;
            }
        };
        let Some(shared) = self.shared.clone() else { return };
        match ask {
            Ask::Holds { token, binding } => {
                let checked = self.codec.check(&token, &binding, SystemTime::now());
                let held = checked.is_ok_and(|state| self.holds_here(&state));
                crate::spawn(async move {
                    let _ = shared.reply(&from, &exchange, encode(&Answer::Holds { held })).await;
                });
            }
            Ask::Resume { token, binding, answers, capabilities } => {
                let (translator, views) = (self.clone(), views.clone());
                crate::spawn(async move {
                    drive_for(&translator, &views, &shared, &from, &exchange, &token, &binding, answers, capabilities)
                        .await;
                });
            }
            Ask::Cancel { exchange } => {
                if let Some(cancel) = self.remote_rounds.0.lock().remove(&exchange) {
                    tracing::debug!("a retry passed here was given up by its client: stopping its round");
                    cancel.cancel();
                }
            }
        }
    }
}

/// Drives the round of a retry the replica `from` passed here, relaying its
/// notifications and a heartbeat, then its outcome.
#[expect(clippy::too_many_arguments, reason = "one exchange's fields, used once")]
async fn drive_for(
    translator: &Translator,
    views: &Views,
    shared: &Arc<SharedSessions>,
    from: &str,
    exchange: &str,
    token: &str,
    binding: &Binding,
    answers: Map<String, Value>,
    capabilities: Value,
) {
    let (notes_tx, mut notes) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    translator.remote_rounds.0.lock().insert(exchange.to_owned(), cancel.clone());
    let waiter = Waiter { sink: Sink::Remote(notes_tx), cancel: cancel.clone(), capabilities };
    let round = async {
        // Verified again here: this replica's table is what single use,
        // expiry and the binding are held against.
        let hold = translator.codec.verify(token, binding, SystemTime::now()).map_err(MrtrError::InvalidState)?;
        let upstreams = views.upstreams();
        let up = upstreams.iter().find(|u| !u.is_retired() && *u.label == *binding.upstream);
        let up = up.ok_or(MrtrError::InvalidState(StateError::NotHeld))?;
        translator.resume(&waiter, up, &hold, answers).await
    };
    let mut round = std::pin::pin!(round);
    let mut beat = tokio::time::interval(HEARTBEAT);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let outcome = loop {
        tokio::select! {
            outcome = &mut round => break outcome,
            Some(note) = notes.recv() => {
                let answer = Answer::Notification { method: note.method, params: note.params };
                if let Ok(false) = shared.reply(from, exchange, encode(&answer)).await {
                    cancel.cancel();
                }
            }
            _ = beat.tick() => {
                // The asking replica gone: its client's request went with it.
                if let Ok(false) = shared.reply(from, exchange, encode(&Answer::Working)).await {
                    cancel.cancel();
                }
            }
        }
    };
    translator.remote_rounds.0.lock().remove(exchange);
    let outcome = match outcome {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => Outcome::error(e.to_error_object()),
        Err(Failure::Mrtr(e)) => {
            tracing::debug!(error = %e, "multi-round-trip retry passed from another replica refused");
            Outcome::error(e.to_error_object())
        }
        Err(Failure::Upstream(e)) => Outcome::error(e.to_error_object()),
    };
    let answer = match outcome {
        Outcome::Error(error) => Answer::Done { result: None, error: Some(error) },
        other => Answer::Done { result: Some(other.result_value().unwrap_or_else(|| json!({}))), error: None },
    };
    match shared.reply(from, exchange, encode(&answer)).await {
        Ok(true) => tracing::debug!(replica = from, "a retry passed from another replica answered"),
        Ok(false) => tracing::info!(replica = from, "the replica that passed a retry here is gone; its answer dropped"),
        Err(e) => tracing::warn!(error = %e, "the answer to a retry passed from another replica could not be sent"),
    }
}

fn encode<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
