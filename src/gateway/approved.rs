//! The lock in effect (`[disclosure] lock`): what of each upstream's tools
//! is served under it, which calls it holds, and the drift it reports (a
//! log line when first seen, and `toolgate_tool_drift`). A reload reads
//! the file again, so an approval (`toolgate lock --approve`) takes effect
//! without a restart and without dropping sessions.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use serde_json::Value;

use crate::audit::{Audit, Event, Kind};
use crate::config::DisclosureConfig;
use crate::lock::{self, DriftKind, LockError, Lockfile, OnDrift};

/// One drift as reported: upstream, tool, kind.
pub type Reported = (Arc<str>, String, DriftKind);

/// The lock in effect, if any.
pub struct Approved {
    path: Option<PathBuf>,
    mode: OnDrift,
    lock: ArcSwapOption<Lockfile>,
    /// Calls refused, by upstream index and the upstream's tool name.
    held: ArcSwap<HashSet<(usize, String)>>,
    /// Whether any call is held (the call path's one check without a lock).
    holds: AtomicBool,
    /// Drift already logged.
    logged: Mutex<HashSet<Reported>>,
}

impl Approved {
    /// Reads the lock `disclosure` names, if any.
    pub fn load(disclosure: &DisclosureConfig) -> Result<Self, LockError> {
        let lock = disclosure.lock.as_deref().map(Lockfile::read).transpose()?;
        Ok(Self {
            path: disclosure.lock.clone(),
            mode: disclosure.on_drift,
            lock: ArcSwapOption::from(lock.map(Arc::new)),
            held: ArcSwap::from_pointee(HashSet::new()),
            holds: AtomicBool::new(false),
            logged: Mutex::new(HashSet::new()),
        })
    }

    /// Reads the lock file again (a reload checks it before anything
    /// changes); `None` when no lock is configured.
    pub fn reread(&self) -> Result<Option<Lockfile>, LockError> {
        self.path.as_deref().map(Lockfile::read).transpose()
    }

    /// Puts `lock` (from [`Approved::reread`]) in effect for the next build.
    pub fn replace(&self, lock: Lockfile) {
        self.lock.store(Some(Arc::new(lock)));
    }

    /// What to serve of upstream `name`'s tools `listed`: as listed without
    /// a lock, else as the lock and `on_drift` say.
    pub fn serve(&self, name: &str, listed: Arc<Vec<Value>>) -> (Arc<Vec<Value>>, Option<lock::Served>) {
        let Some(lock) = self.lock.load_full() else { return (listed, None) };
        // Nothing listed yet (an upstream still starting, or down): nothing
        // to compare, and no approved tool is reported removed for it.
        if listed.is_empty() {
            return (listed, None);
        }
        let mut served = lock::serve(lock.upstreams.get(name), &listed, self.mode);
        // The definitions go into the catalog; the rest is what `built` reads.
        let tools = std::mem::take(&mut served.tools);
        (Arc::new(tools), Some(served))
    }

    /// Takes in what the gateway-wide catalog was built with: the calls
    /// held and the drift, by upstream index and name. Returns the drift.
    /// Drift seen for the first time also goes to the audit trail.
    pub fn built(&self, upstreams: Vec<(usize, Arc<str>, lock::Served)>, audit: Option<&Audit>) -> Vec<Reported> {
        let mut held = HashSet::new();
        let mut reported = Vec::new();
        for (index, name, served) in upstreams {
            held.extend(served.held_calls.into_iter().map(|tool| (index, tool)));
            for drift in served.drift {
                let from = drift.from.clone();
                let key: Reported = (name.clone(), drift.tool, drift.kind);
                if self.logged.lock().insert(key.clone()) {
                    let (upstream, tool, kind) = (&key.0, &key.1, key.2.as_str());
                    let mode = match self.mode {
                        OnDrift::Hold => "hold",
                        OnDrift::Warn => "warn",
                    };
                    tracing::warn!(upstream = %upstream, tool = %tool, kind, from = ?from, on_drift = mode, schema_changed = drift.schema_changed, "a tool definition drifted from the lock; `toolgate lock --diff` shows it");
                    if let Some(audit) = audit {
                        let event = Kind::Drift { upstream: upstream.clone(), tool: tool.clone(), kind };
                        audit.emit(Event::now(event));
                    }
                }
                reported.push(key);
            }
        }
        self.holds.store(!held.is_empty(), Ordering::Release);
        self.held.store(Arc::new(held));
        reported
    }

    /// Whether calls of upstream `index`'s tool `tool` (its own name) are held.
    pub fn is_held(&self, index: usize, tool: &str) -> bool {
        self.holds.load(Ordering::Acquire) && self.held.load().contains(&(index, tool.to_owned()))
    }
}
