//! [`SessionLink`]: what ties one live session of this replica to its
//! record in the shared store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::connection::Unavailable;
use super::record::Record;
use super::sessions::{Refresh, SharedSessions};

/// How often, at most, one replica starts a session's time over in Redis.
pub const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// One shared session, as this replica holds it.
pub struct SessionLink {
    /// The store.
    pub sessions: Arc<SharedSessions>,
    /// The session id.
    pub id: Arc<str>,
    /// What never changes: caller, revision, capabilities, client info (the
    /// rest of the record is the session's live state).
    base: Record,
    /// When this replica last started the record's time over, in ms since
    /// [`epoch`] (0: never).
    refreshed: AtomicU64,
    /// The record needs writing back whole (a write failed or found it gone).
    stale: AtomicBool,
}

/// The instant refresh times count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    // +1: 0 means "never".
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX).saturating_add(1)
}

impl SessionLink {
    /// The link of session `id`, whose unchanging part is `base` (its
    /// grants and live state are ignored). Counts as refreshed now: it was
    /// just written or read.
    pub fn new(sessions: Arc<SharedSessions>, id: Arc<str>, mut base: Record) -> Self {
        base.grants.clear();
        base.tasks.clear();
        base.state = Default::default();
        Self { sessions, id, base, refreshed: AtomicU64::new(now_ms()), stale: AtomicBool::new(false) }
    }

    /// The record's unchanging part.
    pub fn base(&self) -> &Record {
        &self.base
    }

    /// Whether the record's time is due to start over (at most every
    /// [`REFRESH_EVERY`]); if so, it counts as started over from now.
    pub fn refresh_due(&self) -> bool {
        let now = now_ms();
        let last = self.refreshed.load(Ordering::Relaxed);
        let every = u64::try_from(REFRESH_EVERY.as_millis()).unwrap_or(u64::MAX);
        now.saturating_sub(last) >= every
            && self.refreshed.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Makes the next use start the record's time over (and so find out
    /// whether it still exists).
    pub fn refresh_now(&self) {
        self.refreshed.store(0, Ordering::Relaxed);
    }

    /// Marks the record for writing back whole.
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Relaxed);
    }

    /// What a write of part of the record found: a record found missing
    /// (expired, or lost with Redis's data), or a write that failed, is
    /// written back whole once Redis answers.
    pub fn settle(&self, written: Result<Refresh, Unavailable>) {
        match written {
            Ok(Refresh::Kept | Refresh::Ended) => {}
            Ok(Refresh::Missing) | Err(_) => self.mark_stale(),
        }
    }

    /// Whether the record needs writing back; clears the mark.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }
}
