//! The in-memory grant store: one process's grants, and which client
//! created which task, bounded in number.
//!
//! moka holds the entries and bounds them ([`CAPACITY`], least-used evicted
//! first; an evicted grant only means that client fetches the description
//! again). Each entry carries its own deadline, on tokio's clock, which is
//! what decides whether it still allows; moka's time-to-live only frees
//! expired entries nobody asks about again.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Scope;

/// Most grants kept at once (about 100 bytes each, plus the tool name).
pub const CAPACITY: u64 = 100_000;

/// One grant: the definition it is for, and until when.
#[derive(Clone, Copy)]
struct Grant {
    fingerprint: u64,
    expires: Instant,
}

/// Grants by (scope, tool), each lasting `ttl` from its grant or last use.
pub struct MemoryStore {
    ttl: Duration,
    /// foldhash: looked up on every call of a progressive tool.
    grants: moka::sync::Cache<(Scope, Box<str>), Grant, foldhash::fast::RandomState>,
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
        let grants = moka::sync::Cache::builder()
            .max_capacity(capacity)
            .time_to_live(ttl)
            .build_with_hasher(foldhash::fast::RandomState::default());
        let tasks = moka::sync::Cache::builder().max_capacity(capacity).time_to_live(ttl).build();
        Self { ttl, grants, tasks }
    }

    /// Whether `scope` holds a live grant for this definition of `tool`; if
    /// so, its time starts over.
    pub fn allows(&self, scope: &Scope, tool: &str, fingerprint: u64) -> bool {
        let key = (scope.clone(), Box::from(tool));
        let Some(grant) = self.grants.get(&key) else { return false };
        let now = Instant::now();
        if grant.expires <= now {
            self.grants.invalidate(&key);
            return false;
        }
        if grant.fingerprint != fingerprint {
            return false;
        }
        // Refreshed on use: writing it again also restarts moka's own clock.
        self.grants.insert(key, Grant { fingerprint, expires: now + self.ttl });
        true
    }

    /// Grants `scope` these definitions, for `ttl` from now.
    pub fn grant(&self, scope: &Scope, tools: &[(String, u64)]) {
        let expires = Instant::now() + self.ttl;
        for (tool, fingerprint) in tools {
            self.grants.insert((scope.clone(), Box::from(tool.as_str())), Grant { fingerprint: *fingerprint, expires });
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
