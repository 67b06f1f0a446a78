//! The in-memory grant store: one process's grants, and which client
//! created which task, bounded in number.
//!
//! moka holds the entries and bounds them ([`CAPACITY`], least-used evicted
//! first; an evicted grant only means that client fetches the description
//! again). Each entry carries its own deadline, on tokio's clock, which is
//! what decides whether it still allows; moka's time-to-idle only frees
//! expired entries nobody asks about again. A grant's deadline is an atomic
//! moved forward in place when it is used: writing the entry again on every
//! call cost moka an insert (about 5,000 instructions a call).

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::Scope;

/// Most grants kept at once (about 100 bytes each, plus the tool name).
pub const CAPACITY: u64 = 100_000;

/// One grant: the definition it is for, and until when.
struct Grant {
    fingerprint: u64,
    /// Its deadline: nanoseconds after the store's epoch, on tokio's clock.
    expires: AtomicU64,
}

/// A grant's key: whose, and for which tool. Looked up through
/// [`KeyView`], so a call's lookup borrows its tool name instead of copying
/// it into a key of its own.
struct GrantKey(Scope, Box<str>);

/// A grant's key as borrowed parts (the stored key's, or a lookup's).
trait KeyView {
    fn parts(&self) -> (&str, &str);
}

impl KeyView for GrantKey {
    fn parts(&self) -> (&str, &str) {
        (self.0.as_str(), &self.1)
    }
}

impl KeyView for (&Scope, &str) {
    fn parts(&self) -> (&str, &str) {
        (self.0.as_str(), self.1)
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for GrantKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl Hash for dyn KeyView + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyView + '_ {}

// The stored key hashes and compares as its view does, as `Borrow` requires.
impl Hash for GrantKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for GrantKey {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for GrantKey {}

/// Grants by (scope, tool), each lasting `ttl` from its grant or last use.
pub struct MemoryStore {
    ttl: Duration,
    /// What grant deadlines count from.
    epoch: Instant,
    /// foldhash: looked up on every call of a progressive tool.
    grants: moka::sync::Cache<GrantKey, Arc<Grant>, foldhash::fast::RandomState>,
    /// The tasks sessionless clients created: (scope, task id) → the
    /// upstream that holds it, and until when the record lasts.
    tasks: moka::sync::Cache<(Scope, Box<str>), (Arc<str>, Instant)>,
}

impl MemoryStore {
    /// An empty store whose grants last `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self::with_capacity(ttl, CAPACITY)
    }

    /// An empty store of at most `capacity` grants.
    pub fn with_capacity(ttl: Duration, capacity: u64) -> Self {
        // Idle, not live: a grant in use is read, never written again.
        let grants = moka::sync::Cache::builder()
            .max_capacity(capacity)
            .time_to_idle(ttl)
            .build_with_hasher(foldhash::fast::RandomState::default());
        let tasks = moka::sync::Cache::builder().max_capacity(capacity).time_to_live(ttl).build();
        Self { ttl, epoch: Instant::now(), grants, tasks }
    }

    /// `ttl` from now, as a grant deadline.
    fn deadline(&self) -> u64 {
        self.deadline_from(self.now())
    }

    /// `ttl` from `now`, as a grant deadline.
    fn deadline_from(&self, now: u64) -> u64 {
        now.saturating_add(u64::try_from(self.ttl.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Now, in nanoseconds after the epoch.
    fn now(&self) -> u64 {
        u64::try_from(Instant::now().duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether `scope` holds a live grant for this definition of `tool`; if
    /// so, its time starts over.
    pub fn allows(&self, scope: &Scope, tool: &str, fingerprint: u64) -> bool {
        let key = (scope, tool);
        let key: &dyn KeyView = &key;
        let Some(grant) = self.grants.get(key) else { return false };
        // Read once: the check and the refresh count from the same now.
        let now = self.now();
        if grant.expires.load(Ordering::Relaxed) <= now {
            self.grants.invalidate(key);
            return false;
        }
        if grant.fingerprint != fingerprint {
            return false;
        }
        // Refreshed on use (moka's own clock restarted with the read).
        grant.expires.fetch_max(self.deadline_from(now), Ordering::Relaxed);
        true
    }

    /// Grants `scope` these definitions, for `ttl` from now.
    pub fn grant(&self, scope: &Scope, tools: &[(String, u64)]) {
        let expires = self.deadline();
        for (tool, fingerprint) in tools {
            let grant = Arc::new(Grant { fingerprint: *fingerprint, expires: AtomicU64::new(expires) });
            self.grants.insert(GrantKey(scope.clone(), Box::from(tool.as_str())), grant);
        }
    }

    /// Records that `scope` created task `id` at `upstream`.
    pub fn note_task(&self, scope: &Scope, id: &str, upstream: &str) {
        let expires = Instant::now() + self.ttl;
        self.tasks.insert((scope.clone(), Box::from(id)), (Arc::from(upstream), expires));
    }

    /// The upstream where `scope` created task `id`, if it did (and its
    /// record has not expired); a use starts its time over.
    pub fn task_upstream(&self, scope: &Scope, id: &str) -> Option<Arc<str>> {
        let key = (scope.clone(), Box::from(id));
        let (upstream, expires) = self.tasks.get(&key)?;
        let now = Instant::now();
        if expires <= now {
            self.tasks.invalidate(&key);
            return None;
        }
        self.tasks.insert(key, (upstream.clone(), now + self.ttl));
        Some(upstream)
    }

    /// How many grants are held (some perhaps expired), for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.grants.run_pending_tasks();
        self.grants.entry_count()
    }
}
