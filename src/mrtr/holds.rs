//! The table of held calls: each under a random id, counted against its
//! client's cap and the global one, taken out exactly once (a state is
//! single use), and dropped when its hold time passes or toolgate shuts
//! down. What dropping means (answering the upstream, cancelling its call)
//! is the held value's own `Drop`.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use aws_lc_rs::rand;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::MrtrError;

/// A held call's id: 128 random bits, base64url.
pub type HoldId = String;

struct Entry<T> {
    principal: String,
    value: T,
    /// Ends the entry's expiry timer when it is taken out.
    timer: CancellationToken,
}

struct Inner<T> {
    entries: HashMap<HoldId, Entry<T>>,
    per_principal: HashMap<String, usize>,
}

/// Held calls by id.
pub struct Holds<T> {
    inner: Mutex<Inner<T>>,
    hold_timeout: Duration,
    max_per_principal: usize,
    max: usize,
}

impl<T: Send + 'static> Holds<T> {
    /// A table whose entries last `hold_timeout`, at most
    /// `max_per_principal` per client and `max` in all.
    pub fn new(hold_timeout: Duration, max_per_principal: usize, max: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner { entries: HashMap::new(), per_principal: HashMap::new() }),
            hold_timeout,
            max_per_principal,
            max,
        })
    }

    /// How long an entry lasts.
    pub fn hold_timeout(&self) -> Duration {
        self.hold_timeout
    }

    /// How many calls are held.
    pub fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Holds `value` for `principal` under a new id, dropped after the hold
    /// time unless taken before. A full table refuses it (and hands it back
    /// with the error, for its owner to drop).
    pub fn insert(self: &Arc<Self>, principal: &str, value: T) -> Result<HoldId, (MrtrError, T)> {
        let id = new_id();
        let timer = CancellationToken::new();
        {
            let mut inner = self.inner.lock();
            let held = inner.entries.len();
            if held >= self.max {
                return Err((MrtrError::TooManyHeld { held, limit: self.max, whose: "" }, value));
            }
            let mine = inner.per_principal.get(principal).copied().unwrap_or(0);
            if mine >= self.max_per_principal {
                let e = MrtrError::TooManyHeld { held: mine, limit: self.max_per_principal, whose: " for this client" };
                return Err((e, value));
            }
            *inner.per_principal.entry(principal.to_owned()).or_default() += 1;
            let entry = Entry { principal: principal.to_owned(), value, timer: timer.clone() };
            inner.entries.insert(id.clone(), entry);
        }
        let (table, key, after) = (Arc::downgrade(self), id.clone(), self.hold_timeout);
        crate::spawn(expire_later(table, key, after, timer));
        Ok(id)
    }

    /// Whether a value is held under `id` now.
    pub fn contains(&self, id: &str) -> bool {
        self.inner.lock().entries.contains_key(id)
    }

    /// Takes the value held under `id` out (once: a second take finds nothing).
    pub fn take(&self, id: &str) -> Option<T> {
        let entry = {
            let mut inner = self.inner.lock();
            let entry = inner.entries.remove(id)?;
            release(&mut inner.per_principal, &entry.principal);
            entry
        };
        entry.timer.cancel();
        Some(entry.value)
    }

    /// Drops every held value (shutdown).
    pub fn clear(&self) {
        let entries: Vec<Entry<T>> = {
            let mut inner = self.inner.lock();
            inner.per_principal.clear();
            inner.entries.drain().map(|(_, e)| e).collect()
        };
        for entry in entries {
            entry.timer.cancel();
        }
    }
}

fn release(counts: &mut HashMap<String, usize>, principal: &str) {
    if let Some(n) = counts.get_mut(principal) {
        *n -= 1;
        if *n == 0 {
            counts.remove(principal);
        }
    }
}

/// Drops the entry `id` once `after` has passed, unless it was taken first.
async fn expire_later<T: Send + 'static>(table: Weak<Holds<T>>, id: HoldId, after: Duration, taken: CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(after) => {}
        _ = taken.cancelled() => return,
    }
    if let Some(table) = table.upgrade()
        && let Some(value) = table.take(&id)
    {
        tracing::debug!(hold = %id, "a held call expired: the client did not retry in time");
        drop(value);
    }
}

fn new_id() -> HoldId {
    let mut bytes = [0u8; 16];
    if rand::fill(&mut bytes).is_err() {
        // Unique is what matters here; the signature protects the state.
        bytes = uuid::Uuid::new_v4().into_bytes();
    }
    B64.encode(bytes)
}

#[cfg(test)]
mod tests;
