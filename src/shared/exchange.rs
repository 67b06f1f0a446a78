//! Request/answer exchanges between two replicas over pub/sub: the asker
//! sends a [`BusMessage::Call`] on the other replica's channel under a fresh
//! correlation id, and waits for the [`BusMessage::Reply`]s that come back
//! on its own channel under that id ([`Waiting`]). This module owns the
//! table of exchanges waiting for replies; what is asked and answered is
//! its users' business.
//!
//! Pub/sub tells the asker at once when no one hears the call (`PUBLISH`
//! counts 0: the replica is gone); a replica that heard it but then stops
//! replying (killed mid-way) is noticed by the asker's own timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use super::connection::Unavailable;

/// Why an exchange got no (further) reply.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// No replica listens on the channel asked: it is gone.
    #[error("the replica asked is gone")]
    Gone,
    /// The replica said nothing within the time allowed.
    #[error("the replica asked did not reply in time")]
    Silent,
    /// Redis did not take the call.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
}

/// The exchanges of this replica waiting for replies, by correlation id.
#[derive(Default)]
pub struct Exchanges {
    pending: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
}

impl Exchanges {
    /// Registers a new exchange under a fresh id.
    pub fn open(self: &Arc<Self>) -> Waiting {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (tx, rx) = mpsc::unbounded_channel();
        self.pending.lock().insert(id.clone(), tx);
        Waiting { id, rx, table: Arc::downgrade(self) }
    }

    /// Hands a reply to the exchange `id` waits on; `false` if none does
    /// (it ended: answered, timed out, or its client went away).
    pub fn deliver(&self, id: &str, reply: Value) -> bool {
        self.pending.lock().get(id).is_some_and(|tx| tx.send(reply).is_ok())
    }

    /// How many exchanges wait.
    pub fn len(&self) -> usize {
        self.pending.lock().len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One exchange waiting for replies; dropping it forgets the exchange (a
/// late reply is then ignored).
pub struct Waiting {
    id: String,
    rx: mpsc::UnboundedReceiver<Value>,
    table: std::sync::Weak<Exchanges>,
}

impl Waiting {
    /// The correlation id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The next reply, if one comes within `within`.
    pub async fn next(&mut self, within: Duration) -> Result<Value, ExchangeError> {
        match tokio::time::timeout(within, self.rx.recv()).await {
            Ok(Some(reply)) => Ok(reply),
            // The sender lives in the table until this is dropped.
            Ok(None) | Err(_) => Err(ExchangeError::Silent),
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            table.pending.lock().remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests;
