//! Live sessions by id, with idle expiry and a cap on how many may live.
//!
//! A moka cache holds the sessions; every lookup counts as activity and
//! restarts a session's idle clock, except for sessions pinned to their
//! connection (stdio: the session lives as long as its pipe), which never
//! expire on their own. Whatever removes a session (expiry, `DELETE`, the
//! end of its connection, shutdown) sends it down one channel, so the
//! application releases it in exactly one place.
//!
//! The count of live sessions is kept exactly (moka's own is eventually
//! consistent): a place is reserved before a session is created, so
//! concurrent `initialize`s cannot overshoot [`Limits::max_sessions`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use moka::Expiry;
use moka::notification::RemovalCause;
use moka::sync::Cache;
use tokio::sync::mpsc;

use super::backend::{Local, SessionBackend};
use super::limits::Limits;
use super::session::Session;

/// The live sessions of one server.
pub struct SessionStore<S: Send + Sync + 'static> {
    /// foldhash: looked up on every request (see the workspace Cargo.toml).
    cache: Cache<Arc<str>, Arc<Session<S>>, foldhash::fast::RandomState>,
    idle: Duration,
    limits: Limits,
    /// Live sessions plus places reserved for sessions being created.
    live: Arc<AtomicUsize>,
    /// Told of every lookup (activity), if the application asked
    /// ([`SessionStore::on_touch`]).
    touched: OnceLock<Touched<S>>,
    /// Where sessions live besides this process ([`Local`] unless the
    /// application sets one, [`SessionStore::share_with`]).
    backend: OnceLock<Arc<dyn SessionBackend<S>>>,
}

/// What the application does when a session is looked up.
type Touched<S> = Box<dyn Fn(&Arc<Session<S>>) + Send + Sync>;

/// Idle expiry, except for pinned sessions.
struct IdleExpiry(Duration);

impl IdleExpiry {
    fn of<S>(&self, session: &Session<S>) -> Option<Duration> {
        (!session.is_pinned()).then_some(self.0)
    }
}

impl<S> Expiry<Arc<str>, Arc<Session<S>>> for IdleExpiry {
    fn expire_after_create(&self, _: &Arc<str>, session: &Arc<Session<S>>, _: Instant) -> Option<Duration> {
        self.of(session)
    }

    fn expire_after_read(
        &self,
        _: &Arc<str>,
        session: &Arc<Session<S>>,
        _: Instant,
        _: Option<Duration>,
        _: Instant,
    ) -> Option<Duration> {
        self.of(session)
    }

    fn expire_after_update(
        &self,
        _: &Arc<str>,
        session: &Arc<Session<S>>,
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        self.of(session)
    }
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
        let (tx, rx) = mpsc::unbounded_channel();
        let live = Arc::new(AtomicUsize::new(0));
        let count = live.clone();
        let cache = Cache::builder()
            .expire_after(IdleExpiry(idle))
            .eviction_listener(move |_id, session: Arc<Session<S>>, cause| {
                if cause == RemovalCause::Replaced {
                    return;
                }
                count.fetch_sub(1, Ordering::AcqRel);
                session.close();
                // The receiver lives as long as the server; nothing to do if it is gone.
                let _ = tx.send(session);
            })
            .build_with_hasher(foldhash::fast::RandomState::default());
        (Self { cache, idle, limits, live, touched: OnceLock::new(), backend: OnceLock::new() }, rx)
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
        // Expired sessions still count until moka applies their removal.
        self.cache.run_pending_tasks();
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
        // The place now belongs to the session: the eviction listener gives it back.
        std::mem::forget(reservation);
        self.cache.insert(session.id_arc(), session);
    }

    /// Looks a session up; counts as activity.
    pub fn get(&self, id: &str) -> Option<Arc<Session<S>>> {
        let session = self.cache.get(id);
        if let (Some(session), Some(touched)) = (&session, self.touched.get()) {
            touched(session);
        }
        session
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
        // Every read restarts the idle clock (see `IdleExpiry`).
        let _ = self.cache.get(id);
    }

    /// Pins a session to its connection: it no longer expires when idle and
    /// ends only when removed (its connection ended).
    pub fn pin(&self, session: &Session<S>) {
        session.set_pinned();
        // A read makes moka ask `IdleExpiry` again, which now says never.
        self.touch(session.id());
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

#[cfg(test)]
mod tests;
