//! The messages replicas route to each other over Redis pub/sub, and the
//! subscriber that hears them.
//!
//! Each replica listens on the bus (every replica hears it) and on its own
//! channel ([`SharedSessions::replica_channel`](super::SharedSessions::replica_channel)).
//! The subscriber has a connection of its own (a subscribed connection
//! takes no other command), pings it every second, and connects again with
//! backoff when it breaks or stops answering. Pub/sub delivers to whoever
//! listens at the time: a message for a replica that is gone is heard by no
//! one, which the sender learns from `PUBLISH`'s count.

use std::time::Duration;

use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::{Connection, STORE_TIMEOUT};

/// How often the subscriber checks its connection.
const PING_EVERY: Duration = Duration::from_secs(1);
/// The longest wait between two attempts to subscribe again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// One message between replicas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub enum BusMessage {
    /// The client ended the session (on the bus).
    Ended {
        /// The session.
        #[serde(rename = "s")]
        session: String,
        /// The replica that ended it.
        from: String,
    },
    /// The client cancelled one of its requests, which did not run where the
    /// cancellation arrived (on the bus).
    Cancel {
        /// The session.
        #[serde(rename = "s")]
        session: String,
        /// The client's id of the request (`requestId`).
        id: Value,
        /// The replica the cancellation arrived at.
        from: String,
    },
    /// The client's answer to a request the receiving replica sent it
    /// (sampling, elicitation, roots), which arrived at another replica.
    Answer {
        /// The session.
        #[serde(rename = "s")]
        session: String,
        /// The JSON-RPC response, as the client sent it (its text, decoded
        /// once by the replica it is for).
        #[serde(deserialize_with = "text_or_json")]
        response: String,
    },
    /// A request for the receiving replica (on its channel), which answers
    /// with [`BusMessage::Reply`]s under the same id on the asker's channel
    /// (see [`super::exchange`]). What is asked is the asking module's
    /// business (a retry of a held call: `gateway/mrtr/remote.rs`).
    Call {
        /// The exchange's correlation id.
        id: String,
        /// The replica that asks (where the replies go).
        from: String,
        /// What is asked.
        call: Value,
    },
    /// One reply to a [`BusMessage::Call`] (an exchange may have several:
    /// signs of life, then its answer).
    Reply {
        /// The exchange's correlation id.
        id: String,
        /// The replica that replies.
        from: String,
        /// The reply.
        reply: Value,
    },
    /// A notification for a session's standalone stream (`GET`), produced by
    /// a replica that holds no such stream for it (on the bus): the replica
    /// that holds one delivers it.
    Notify {
        /// The session.
        #[serde(rename = "s")]
        session: String,
        /// The JSON-RPC notification (its text, decoded once by the replica
        /// that delivers it).
        #[serde(deserialize_with = "text_or_json")]
        message: String,
        /// The replica that produced it.
        from: String,
    },
}

/// A JSON-RPC message carried on the bus: its text, or (from a replica of an
/// earlier release, during a rolling deploy) the message itself.
fn text_or_json<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

impl BusMessage {
    /// The message as sent.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A message as received, if it is one (anything else is dropped).
    pub fn decode(payload: &[u8]) -> Option<Self> {
        serde_json::from_slice(payload).ok()
    }

    /// The replica that sent it, where the message says (bus messages).
    pub fn sender(&self) -> Option<&str> {
        match self {
            Self::Ended { from, .. }
            | Self::Cancel { from, .. }
            | Self::Call { from, .. }
            | Self::Reply { from, .. }
            | Self::Notify { from, .. } => Some(from),
            Self::Answer { .. } => None,
        }
    }
}

/// What the subscriber hands the gateway.
#[derive(Debug)]
pub enum Inbound {
    /// A message from another replica.
    Message(BusMessage),
    /// The subscriber is (again) listening: messages sent while it was not
    /// are lost, so whatever depends on them is worth checking again.
    Subscribed,
}

/// Listens on `channels` until `stop` fires, handing what it hears to `to`.
pub async fn listen(
    connection: std::sync::Arc<Connection>,
    channels: Vec<String>,
    to: mpsc::UnboundedSender<Inbound>,
    stop: CancellationToken,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let heard = tokio::select! {
            () = stop.cancelled() => return,
            heard = subscribe_and_hear(&connection, &channels, &to) => heard,
        };
        match heard {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(why) => tracing::debug!(%why, "the shared-state subscriber lost Redis; subscribing again"),
        }
        if to.is_closed() {
            return;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One subscription: until its connection breaks or stops answering.
async fn subscribe_and_hear(
    connection: &Connection,
    channels: &[String],
    to: &mpsc::UnboundedSender<Inbound>,
) -> Result<(), String> {
    let mut pubsub = connection.pubsub().await.map_err(|e| e.to_string())?;
    for channel in channels {
        tokio::time::timeout(STORE_TIMEOUT, pubsub.subscribe(channel))
            .await
            .map_err(|_| "SUBSCRIBE timed out".to_owned())?
            .map_err(|e| e.to_string())?;
    }
    let (mut sink, mut stream) = pubsub.split();
    if to.send(Inbound::Subscribed).is_err() {
        return Ok(());
    }
    let mut tick = tokio::time::interval(PING_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            message = stream.next() => {
                let Some(message) = message else { return Err("the subscription ended".into()) };
                match BusMessage::decode(message.get_payload_bytes()) {
                    Some(m) => {
                        if to.send(Inbound::Message(m)).is_err() {
                            return Ok(());
                        }
                    }
                    None => tracing::debug!(channel = message.get_channel_name(), "a message on the bus that is none of toolgate's ignored"),
                }
            }
            _ = tick.tick() => {
                match tokio::time::timeout(STORE_TIMEOUT, sink.ping::<redis::Value>()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(e.to_string()),
                    Err(_) => return Err("PING timed out".into()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
