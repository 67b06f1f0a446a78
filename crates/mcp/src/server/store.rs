//! Live sessions by id, with idle expiry.
//!
//! A moka cache with time-to-idle holds the sessions; every lookup counts as
//! activity. Whatever removes a session (expiry, `DELETE`, shutdown) sends it
//! down one channel, so the application releases it in exactly one place.

use std::sync::Arc;
use std::time::Duration;

use moka::notification::RemovalCause;
use moka::sync::Cache;
use tokio::sync::mpsc;

use super::session::Session;

/// The live sessions of one server.
pub struct SessionStore<S: Send + Sync + 'static> {
    cache: Cache<Arc<str>, Arc<Session<S>>>,
    idle: Duration,
}

impl<S: Send + Sync + 'static> SessionStore<S> {
    /// A store whose sessions expire after `idle` without activity. Removed
    /// sessions are closed and sent to the returned receiver.
    pub fn new(idle: Duration) -> (Self, mpsc::UnboundedReceiver<Arc<Session<S>>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let cache = Cache::builder()
            .time_to_idle(idle)
            .eviction_listener(move |_id, session: Arc<Session<S>>, cause| {
                if cause == RemovalCause::Replaced {
                    return;
                }
                session.close();
                // The receiver lives as long as the server; nothing to do if it is gone.
                let _ = tx.send(session);
            })
            .build();
        (Self { cache, idle }, rx)
    }

    /// A fresh, unguessable session id (122 random bits, visible ASCII).
    pub fn new_id() -> Arc<str> {
        Arc::from(uuid::Uuid::new_v4().simple().to_string())
    }

    /// How long a session may stay idle.
    pub fn idle_timeout(&self) -> Duration {
        self.idle
    }

    /// Adds a session.
    pub fn insert(&self, session: Arc<Session<S>>) {
        self.cache.insert(session.id_arc(), session);
    }

    /// Looks a session up; counts as activity.
    pub fn get(&self, id: &str) -> Option<Arc<Session<S>>> {
        self.cache.get(id)
    }

    /// Counts as activity on session `id` (its idle clock restarts).
    pub fn touch(&self, id: &str) {
        // moka restarts time-to-idle on every read.
        let _ = self.cache.get(id);
    }

    /// Ends a session. Returns whether it existed.
    pub fn remove(&self, id: &str) -> bool {
        let existed = self.cache.remove(id).is_some();
        self.cache.run_pending_tasks();
        existed
    }

    /// Every live session (for broadcasts such as `list_changed`).
    pub fn sessions(&self) -> Vec<Arc<Session<S>>> {
        self.cache.iter().map(|(_, s)| s).collect()
    }

    /// How many sessions are live.
    pub fn len(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.entry_count()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Applies pending expiries now (moka has no background thread).
    pub fn run_pending(&self) {
        self.cache.run_pending_tasks();
    }

    /// Ends every session (shutdown).
    pub fn clear(&self) {
        self.cache.invalidate_all();
        self.cache.run_pending_tasks();
    }
}
