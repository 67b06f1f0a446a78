//! The listener's places: which connections are open, whose they are (the
//! peer's address, or the address a trusted proxy forwards), and what each
//! peer has been refused lately.
//!
//! A place is what a connection holds against `max_connections` and
//! `max_connections_per_peer`. When either cap is reached, the connection
//! that has been idle longest (no request in progress, no stream open; of
//! the same peer when that peer's cap is the one reached) is asked to close,
//! and the new one takes its place. Only when every candidate is busy is the
//! new connection refused. An idle connection costs its holder nothing to
//! lose (a client reconnects), so a peer can hold places only with work in
//! progress, which the per-session and per-client limits bound. nginx frees
//! worker connections the same way (its "reusable" keep-alive connections).
//!
//! A peer refused often (401, 403, 429) is told to go: past
//! [`REFUSALS_BEFORE_CLOSE`] refusals within [`REFUSAL_WINDOW`], each
//! further refusal closes its connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::Activity;

/// Refusals a peer may have within [`REFUSAL_WINDOW`] before each further
/// one closes its connection: a client that mistyped a key, or ran into a
/// limit, keeps its connection for a retry or two.
pub const REFUSALS_BEFORE_CLOSE: u32 = 3;
/// The window over which a peer's refusals are counted.
pub const REFUSAL_WINDOW: Duration = Duration::from_secs(10);

/// The open connections and the peers that hold them.
pub(super) struct Places {
    max: usize,
    /// Most connections of one peer; `0` for no cap.
    per_peer: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The server is shutting down: every connection is asked to close,
    /// one given a place from now on too.
    closing: bool,
    next: u64,
    open: HashMap<u64, Open, foldhash::fast::RandomState>,
    peers: HashMap<IpAddr, Peer, foldhash::fast::RandomState>,
}

/// One open connection.
struct Open {
    peer: IpAddr,
    activity: Arc<Activity>,
}

/// What is known of one peer: its connections, and its recent refusals.
#[derive(Default)]
struct Peer {
    connections: usize,
    refusals: u32,
    /// When the current refusal window began.
    window: Option<Instant>,
}

impl Peer {
    /// Whether nothing needs keeping: no connection, and no refusal that
    /// still counts.
    fn forgettable(&self, now: Instant) -> bool {
        self.connections == 0 && self.window.is_none_or(|w| now.duration_since(w) >= REFUSAL_WINDOW)
    }
}

/// Why a connection was not given a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// `max_connections` connections are open, each busy.
    Total,
    /// The peer holds `max_connections_per_peer`, each busy.
    Peer,
}

impl Places {
    pub(super) fn new(max: usize, per_peer: usize) -> Self {
        Self { max: max.max(1), per_peer, state: Mutex::new(State::default()) }
    }

    /// How many connections are open (those asked to close included, until
    /// they have).
    pub(super) fn open(&self) -> usize {
        self.state.lock().open.len()
    }

    /// Gives a new connection of `peer` a place, asking the longest-idle
    /// connection to close if a cap is reached; the place's number. A
    /// trusted proxy's connection is not held to the per-peer cap (`capped`
    /// false): it carries other clients, and moves to each in turn.
    pub(super) fn admit(&self, peer: IpAddr, capped: bool, activity: &Arc<Activity>) -> Result<u64, Full> {
        let mut state = self.state.lock();
        if state.closing {
            activity.close();
        }
        let at_peer = capped && self.at_cap(&state, peer);
        // Connections already asked to close still count until they have:
        // each over the cap needs a victim of its own.
        let at_total = state.open.len() >= self.max;
        if at_peer || at_total {
            let full = if at_peer { Full::Peer } else { Full::Total };
            state.evict_longest_idle(at_peer.then_some(peer)).ok_or(full)?;
        }
        let id = state.next;
        state.next += 1;
        state.open.insert(id, Open { peer, activity: activity.clone() });
        state.peers.entry(peer).or_default().connections += 1;
        Ok(id)
    }

    /// Moves place `id` to `peer` (a trusted proxy's connection now carries
    /// a request of another client), if that peer's cap allows (`capped`:
    /// the proxy itself is not held to it); otherwise the place stays where
    /// it was.
    pub(super) fn move_to(&self, id: u64, peer: IpAddr, capped: bool) -> Result<(), Full> {
        let mut state = self.state.lock();
        let Some(from) = state.open.get(&id).map(|o| o.peer) else { return Ok(()) };
        if from == peer {
            return Ok(());
        }
        if capped && self.at_cap(&state, peer) {
            state.evict_longest_idle(Some(peer)).ok_or(Full::Peer)?;
        }
        let now = Instant::now();
        state.release_peer(from, now);
        state.peers.entry(peer).or_default().connections += 1;
        if let Some(open) = state.open.get_mut(&id) {
            open.peer = peer;
        }
        Ok(())
    }

    fn at_cap(&self, state: &State, peer: IpAddr) -> bool {
        self.per_peer > 0 && state.peers.get(&peer).is_some_and(|p| p.connections >= self.per_peer)
    }

    /// Asks every connection, open now or given a place later, to close once
    /// what it has in progress is answered (the server's shutdown). Through
    /// each one's [`Activity`], which its task watches anyway: a shutdown
    /// signal of its own would be one more future that task polls on every
    /// wake-up, several times per request.
    pub(super) fn close_all(&self) {
        let mut state = self.state.lock();
        state.closing = true;
        for open in state.open.values() {
            open.activity.close();
        }
    }

    /// Frees place `id`: its connection has closed.
    pub(super) fn release(&self, id: u64) {
        let mut state = self.state.lock();
        if let Some(open) = state.open.remove(&id) {
            state.release_peer(open.peer, Instant::now());
        }
    }

    /// Counts a refusal (401, 403, 429) of the peer holding place `id`;
    /// whether its connection should now close.
    pub(super) fn refused(&self, id: u64) -> bool {
        let now = Instant::now();
        let mut state = self.state.lock();
        let Some(peer) = state.open.get(&id).map(|o| o.peer) else { return false };
        let entry = state.peers.entry(peer).or_default();
        match entry.window {
            Some(w) if now.duration_since(w) < REFUSAL_WINDOW => entry.refusals += 1,
            _ => {
                entry.window = Some(now);
                entry.refusals = 1;
            }
        }
        entry.refusals > REFUSALS_BEFORE_CLOSE
    }
}

impl State {
    /// Asks the connection idle longest (of `peer`, if given) to close;
    /// `None` when every candidate is busy or asked already.
    fn evict_longest_idle(&self, peer: Option<IpAddr>) -> Option<()> {
        let victim = self
            .open
            .values()
            .filter(|o| peer.is_none_or(|p| o.peer == p) && o.activity.evictable())
            .min_by_key(|o| o.activity.idle_at())?;
        victim.activity.evict();
        Some(())
    }

    /// One connection of `peer` less; forgets the peer when nothing of it
    /// needs keeping. Peers kept only for their refusals are bounded: once
    /// they outnumber the open connections, the stale ones are swept, and
    /// if that is not enough (refusals from many addresses at once), every
    /// peer without a connection is forgotten.
    fn release_peer(&mut self, peer: IpAddr, now: Instant) {
        if let Some(p) = self.peers.get_mut(&peer) {
            p.connections = p.connections.saturating_sub(1);
            if p.forgettable(now) {
                self.peers.remove(&peer);
            }
        }
        let kept = 2 * self.open.len() + 64;
        if self.peers.len() > kept {
            self.peers.retain(|_, p| !p.forgettable(now));
            if self.peers.len() > kept {
                self.peers.retain(|_, p| p.connections > 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn busy() -> Arc<Activity> {
        let a = Arc::new(Activity::new());
        a.in_flight.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        a
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_connection_gives_way_and_busy_ones_never_do() {
        let places = Places::new(3, 0);
        let old_idle = Arc::new(Activity::new());
        tokio::time::sleep(Duration::from_millis(5)).await;
        let newer_idle = Arc::new(Activity::new());
        let working = busy();
        places.admit(ip(1), true, &working).unwrap();
        places.admit(ip(1), true, &old_idle).unwrap();
        places.admit(ip(2), true, &newer_idle).unwrap();
        places.admit(ip(3), true, &Arc::new(Activity::new())).unwrap();
        assert!(old_idle.eviction_wanted(), "the longest idle is asked to close");
        assert!(!newer_idle.eviction_wanted() && !working.eviction_wanted());
        // The next one takes the next idle one, never one already asked.
        places.admit(ip(3), true, &busy()).unwrap();
        assert!(newer_idle.eviction_wanted());
        // Every remaining one busy or already asked: refused.
        let all_busy = Places::new(2, 0);
        all_busy.admit(ip(1), true, &busy()).unwrap();
        all_busy.admit(ip(1), true, &busy()).unwrap();
        assert_eq!(all_busy.admit(ip(2), true, &busy()), Err(Full::Total));
        assert_eq!(all_busy.open(), 2);
    }

    #[test]
    fn a_peer_at_its_cap_gives_way_only_to_itself() {
        let places = Places::new(100, 2);
        let other_idle = Arc::new(Activity::new());
        places.admit(ip(9), true, &other_idle).unwrap();
        let (a, b) = (busy(), Arc::new(Activity::new()));
        places.admit(ip(1), true, &a).unwrap();
        places.admit(ip(1), true, &b).unwrap();
        places.admit(ip(1), true, &busy()).unwrap();
        assert!(b.eviction_wanted(), "its own idle connection gives way");
        assert!(!other_idle.eviction_wanted(), "another peer's never does");
        assert_eq!(places.admit(ip(1), true, &busy()), Err(Full::Peer));
        // Another peer is not held back by it.
        assert!(places.admit(ip(2), true, &busy()).is_ok());
    }

    #[test]
    fn a_proxied_connection_moves_to_the_client_it_carries_within_that_clients_cap() {
        let places = Places::new(100, 1);
        let first = places.admit(ip(1), true, &busy()).unwrap();
        let second = places.admit(ip(1), true, &busy());
        assert_eq!(second, Err(Full::Peer));
        let proxied = places.admit(ip(200), false, &busy()).unwrap();
        assert_eq!(places.move_to(proxied, ip(1), true), Err(Full::Peer), "ip 1 holds its one busy place");
        places.release(first);
        assert_eq!(places.move_to(proxied, ip(1), true), Ok(()));
        // The proxy's own address is free again.
        assert!(places.admit(ip(200), false, &busy()).is_ok());
    }

    #[test]
    fn refusals_past_the_allowance_close_and_peers_are_forgotten() {
        let places = Places::new(100, 0);
        let id = places.admit(ip(1), true, &busy()).unwrap();
        for n in 1..=REFUSALS_BEFORE_CLOSE {
            assert!(!places.refused(id), "refusal {n} keeps the connection");
        }
        assert!(places.refused(id), "the next one closes it");
        places.release(id);
        // Kept for its refusals, but bounded: many short-lived peers are swept.
        for last in 0..=255u8 {
            let id = places.admit(IpAddr::from([10, 0, 0, last]), true, &busy()).unwrap();
            places.refused(id);
            places.release(id);
        }
        assert!(places.state.lock().peers.len() <= 64 + 1, "{}", places.state.lock().peers.len());
    }
}
