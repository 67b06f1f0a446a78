//! Live sessions by id, with idle expiry and a cap on how many may live.
//!
//! A map holds the sessions, each with the time it was last used; every
//! lookup counts as activity and restarts a session's idle clock, except
//! for sessions pinned to their connection (stdio: the session lives as
//! long as its pipe), which never expire on their own. A session idle past
//! the timeout is no longer found, and the engine's periodic
//! [`SessionStore::run_pending`] removes it. Whatever removes a session
//! (expiry, `DELETE`, the end of its connection, shutdown) sends it down one
//! channel, so the application releases it in exactly one place.
//!
//! Not a cache (moka, which held them before, cost about 1,000
//! instructions per lookup, 1.2% of a proxied call): nothing is evicted for
//! room, and expiry is one timestamp per session checked on lookup and
//! swept on the engine's tick.
//!
//! The count of live sessions is kept exactly: a place is reserved before a
//! session is created, so concurrent `initialize`s cannot overshoot
//! [`Limits::max_sessions`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::mpsc;

use super::backend::{Local, SessionBackend};
use super::limits::Limits;
use super::session::Session;

/// The live sessions of one server.
pub struct SessionStore<S: Send + Sync + 'static> {
    /// foldhash: looked up on every request (see the workspace Cargo.toml).
    sessions: RwLock<HashMap<Arc<str>, Entry<S>, foldhash::fast::RandomState>>,
    /// What the entries' last-use times count from.
    epoch: Instant,
    idle: Duration,
    limits: Limits,
    /// Live sessions plus places reserved for sessions being created.
    live: Arc<AtomicUsize>,
    /// Where removed sessions go (closed) for the application to release.
    ended: mpsc::UnboundedSender<Arc<Session<S>>>,
    /// Told of every lookup (activity), if the application asked
    /// ([`SessionStore::on_touch`]).
    touched: OnceLock<Touched<S>>,
    /// Where sessions live besides this process ([`Local`] unless the
    /// application sets one, [`SessionStore::share_with`]).
    backend: OnceLock<Arc<dyn SessionBackend<S>>>,
}

/// What the application does when a session is looked up.
type Touched<S> = Box<dyn Fn(&Arc<Session<S>>) + Send + Sync>;

/// One live session and when it was last used.
struct Entry<S> {
    session: Arc<Session<S>>,
    /// Milliseconds since the store's epoch.
    used: AtomicU64,
}

/// A place for one session, taken before it is created
/// ([`SessionStore::reserve`]). Dropped unused, it is given back.
pub struct Reservation {
    live: Arc<AtomicUsize>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S: Send + Sync + 'static> SessionStore<S> {
    /// A store whose sessions expire after `idle` without activity, with the
    /// default [`Limits`]. Removed sessions are closed and sent to the
    /// returned receiver.
    pub fn new(idle: Duration) -> (Self, mpsc::UnboundedReceiver<Arc<Session<S>>>) {
        Self::with_limits(idle, Limits::default())
    }

    /// As [`SessionStore::new`], with `limits`.
    pub fn with_limits(idle: Duration, limits: Limits) -> (Self, mpsc::UnboundedReceiver<Arc<Session<S>>>) {
        let (ended, rx) = mpsc::unbounded_channel();
        let store = Self {
            sessions: RwLock::new(HashMap::with_hasher(foldhash::fast::RandomState::default())),
            epoch: Instant::now(),
            idle,
            limits,
            live: Arc::new(AtomicUsize::new(0)),
            ended,
            touched: OnceLock::new(),
            backend: OnceLock::new(),
        };
        (store, rx)
    }

    /// A fresh, unguessable session id (122 random bits, visible ASCII):
    /// 32 lowercase hexadecimal digits, the only form [`Self::is_issued_form`]
    /// accepts.
    pub fn new_id() -> Arc<str> {
        Arc::from(uuid::Uuid::new_v4().simple().to_string())
    }

    /// Whether `id` has the form of the ids [`Self::new_id`] issues. A
    /// session id of any other form names no session, here or in a store
    /// shared with other processes, so it is refused before either is asked.
    pub fn is_issued_form(id: &str) -> bool {
        id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }

    /// How long a session may stay idle.
    pub fn idle_timeout(&self) -> Duration {
        self.idle
    }

    /// The limits sessions are held to.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Takes a place for a new session, or `None` when
    /// [`Limits::max_sessions`] sessions live (expired ones are let go first).
    pub fn reserve(&self) -> Option<Reservation> {
        if let Some(r) = self.try_reserve() {
            return Some(r);
        }
        // Expired sessions still count until they are swept.
        self.run_pending();
        self.try_reserve()
    }

    fn try_reserve(&self) -> Option<Reservation> {
        let max = self.limits.max_sessions;
        self.live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Reservation { live: self.live.clone() })
    }

    /// Whether a session could be created now (for transports that refuse a
    /// connection before its `initialize` arrives).
    #[cfg(any(test, feature = "test-util"))]
    pub fn has_room(&self) -> bool {
        self.reserve().is_some()
    }

    /// Adds a session in the place reserved for it.
    pub fn insert(&self, reservation: Reservation, session: Arc<Session<S>>) {
        let entry = Entry { used: AtomicU64::new(self.now()), session };
        let replaced = self.sessions.write().insert(entry.session.id_arc(), entry);
        // The place now belongs to the session: ending it gives it back.
        std::mem::forget(reservation);
        // The same id again (ids are random: an expired entry not yet swept,
        // adopted again from the store shared with another replica that kept
        // it alive): the old one ends as an expired one would.
        if let Some(old) = replaced {
            self.end(old.session);
        }
    }

    /// Looks a session up; counts as activity.
    pub fn get(&self, id: &str) -> Option<Arc<Session<S>>> {
        let session = self.find(id)?;
        if let Some(touched) = self.touched.get() {
            touched(&session);
        }
        Some(session)
    }

    /// The live session `id`, its idle clock restarted.
    fn find(&self, id: &str) -> Option<Arc<Session<S>>> {
        let now = self.now();
        let sessions = self.sessions.read();
        let entry = sessions.get(id)?;
        if self.expired(entry, now) {
            return None;
        }
        entry.used.store(now, Ordering::Relaxed);
        Some(entry.session.clone())
    }

    /// Has `touched` told of every activity of a session (every lookup,
    /// and the keep-alive ticks of its open streams), e.g. to keep a copy
    /// of it elsewhere alive. Set once; later calls are ignored.
    pub fn on_touch(&self, touched: impl Fn(&Arc<Session<S>>) + Send + Sync + 'static) {
        let _ = self.touched.set(Box::new(touched));
    }

    /// Shares the sessions with other processes through `backend` (set
    /// once, before the engine serves: the engine reads its request tag
    /// when it starts).
    pub fn share_with(&self, backend: Arc<dyn SessionBackend<S>>) {
        let _ = self.backend.set(backend);
    }

    /// Where sessions live besides this process.
    pub fn backend(&self) -> &dyn SessionBackend<S> {
        match self.backend.get() {
            Some(backend) => backend.as_ref(),
            None => &Local,
        }
    }

    /// Counts as activity on session `id` (its idle clock restarts).
    pub fn touch(&self, id: &str) {
        let _ = self.find(id);
    }

    /// Pins a session to its connection: it no longer expires when idle and
    /// ends only when removed (its connection ended).
    pub fn pin(&self, session: &Session<S>) {
        session.set_pinned();
        self.touch(session.id());
    }

    /// Ends a session. Returns whether it existed.
    pub fn remove(&self, id: &str) -> bool {
        let removed = self.sessions.write().remove(id);
        match removed {
            Some(entry) => {
                self.end(entry.session);
                true
            }
            None => false,
        }
    }

    /// Every live session (for broadcasts such as `list_changed`).
    pub fn sessions(&self) -> Vec<Arc<Session<S>>> {
        let now = self.now();
        self.sessions.read().values().filter(|e| !self.expired(e, now)).map(|e| e.session.clone()).collect()
    }

    /// How many sessions are live.
    pub fn len(&self) -> u64 {
        self.run_pending();
        self.sessions.read().len() as u64
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes the sessions idle past the timeout (the engine calls it on
    /// a tick).
    pub fn run_pending(&self) {
        let now = self.now();
        let any = self.sessions.read().values().any(|e| self.expired(e, now));
        if !any {
            return;
        }
        let mut expired = Vec::new();
        // Checked again under the write lock: a lookup may have used one meanwhile.
        self.sessions.write().retain(|_, e| {
            let keep = !self.expired(e, now);
            if !keep {
                expired.push(e.session.clone());
            }
            keep
        });
        for session in expired {
            self.end(session);
        }
    }

    /// Ends every session (shutdown).
    pub fn clear(&self) {
        let all: Vec<_> = self.sessions.write().drain().map(|(_, e)| e.session).collect();
        for session in all {
            self.end(session);
        }
    }

    /// A removed session: its place given back, closed, and handed to the
    /// application.
    fn end(&self, session: Arc<Session<S>>) {
        self.live.fetch_sub(1, Ordering::AcqRel);
        session.close();
        // The receiver lives as long as the server; nothing to do if it is gone.
        let _ = self.ended.send(session);
    }

    /// Whether `entry` is idle past the timeout (never if pinned).
    fn expired(&self, entry: &Entry<S>, now: u64) -> bool {
        !entry.session.is_pinned()
            && Duration::from_millis(now.saturating_sub(entry.used.load(Ordering::Relaxed))) >= self.idle
    }

    /// Milliseconds since the store's epoch.
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests;
