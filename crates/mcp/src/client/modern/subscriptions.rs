//! The resource URIs toolgate holds a subscription to at one upstream, on
//! behalf of its clients, counted: 2026-07-28 listen streams that list a
//! URI in `resourceSubscriptions`, and handshake-era sessions whose
//! `resources/subscribe` went to a 2026-07-28 upstream (which has no such
//! method). The first holder of a URI subscribes it upstream, the last one
//! to let go unsubscribes it: a handshake-era upstream with
//! `resources/subscribe`/`unsubscribe` on its control connection (the
//! gateway does that), a 2026-07-28 upstream by the control connection's
//! listen stream, which is reopened with the new set whenever it changes
//! ([`listen`](super::listen) watches [`ResourceSubscriptions::watch`]).

use std::collections::BTreeMap;

use parking_lot::Mutex;
use tokio::sync::watch;

/// The counted URIs of one upstream.
pub struct ResourceSubscriptions {
    counts: Mutex<BTreeMap<String, usize>>,
    /// Bumped whenever the set of URIs (not just a count) changes.
    changed: watch::Sender<u64>,
}

impl Default for ResourceSubscriptions {
    fn default() -> Self {
        Self { counts: Mutex::new(BTreeMap::new()), changed: watch::Sender::new(0) }
    }
}

impl ResourceSubscriptions {
    /// Counts one more holder of `uri`; `true` when it is the first (the
    /// subscription must be taken upstream).
    pub fn acquire(&self, uri: &str) -> bool {
        let first = {
            let mut counts = self.counts.lock();
            let n = counts.entry(uri.to_owned()).or_insert(0);
            *n += 1;
            *n == 1
        };
        if first {
            self.changed.send_modify(|v| *v += 1);
        }
        first
    }

    /// Counts one holder of `uri` less; `true` when it was the last (the
    /// subscription must be dropped upstream). Releasing a URI nobody
    /// holds does nothing.
    pub fn release(&self, uri: &str) -> bool {
        let last = {
            let mut counts = self.counts.lock();
            match counts.get_mut(uri) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    counts.remove(uri);
                    true
                }
                None => false,
            }
        };
        if last {
            self.changed.send_modify(|v| *v += 1);
        }
        last
    }

    /// Whether anyone holds `uri`.
    pub fn holds(&self, uri: &str) -> bool {
        self.counts.lock().contains_key(uri)
    }

    /// The URIs held now, sorted.
    pub fn uris(&self) -> Vec<String> {
        self.counts.lock().keys().cloned().collect()
    }

    /// Changes whenever the set of URIs does.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests;
