//! Per-client series: requests by client and outcome. Client names come
//! from `[[auth.clients]]` (or a JWT claim, which can take many values), so
//! at most [`MAX_CLIENTS`] names get series of their own; later ones are
//! counted as `other`.

// foldhash: these maps are looked up on every call (see Cargo.toml).
use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;

use parking_lot::RwLock;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::cells::Cells;
use super::labels::{Label, Labels, Outcome};

/// Most client names with series of their own.
pub const MAX_CLIENTS: usize = 100;

/// The label of clients past [`MAX_CLIENTS`].
pub const OTHER: &str = "other";

/// Requests by client.
pub struct Clients {
    family: Family<Labels<2>, Counter>,
    /// Client name → its slot in `cells`.
    slots: RwLock<HashMap<Arc<str>, usize>>,
    /// `[slot][outcome]`; slot [`MAX_CLIENTS`] is `other`.
    cells: Cells<Counter>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").field("named", &self.slots.read().len()).finish_non_exhaustive()
    }
}

impl Clients {
    pub fn register(registry: &mut Registry) -> Self {
        let family = Family::<Labels<2>, Counter>::default();
        registry.register(
            "toolgate_client_requests",
            "Client requests answered, by client (authenticated name, or anonymous) and outcome",
            family.clone(),
        );
        Self { family, slots: RwLock::new(HashMap::new()), cells: Cells::new((MAX_CLIENTS + 1) * Outcome::COUNT) }
    }

    /// Counts a request of `client`.
    pub fn request(&self, client: &str, outcome: Outcome) {
        let slot = self.slot(client);
        let label = || if slot == MAX_CLIENTS { Label::Static(OTHER) } else { Label::Name(Arc::from(client)) };
        let counter = self.cells.get(slot * Outcome::COUNT + outcome as usize, || {
            self.family.get_or_create_owned(&[("client", label()), ("outcome", Label::Static(outcome.as_str()))])
        });
        if let Some(c) = counter {
            c.inc();
        }
    }

    /// The slot of `client`, given one on its first request while there is room.
    fn slot(&self, client: &str) -> usize {
        if let Some(&slot) = self.slots.read().get(client) {
            return slot;
        }
        let mut slots = self.slots.write();
        let next = slots.len();
        if next >= MAX_CLIENTS {
            return MAX_CLIENTS;
        }
        *slots.entry(Arc::from(client)).or_insert(next)
    }

    /// The label a scrape gives `client`'s other series: its own name if it
    /// has a slot, else `other`.
    pub fn label_of(&self, client: &str) -> Label {
        let slots = self.slots.read();
        match slots.get_key_value(client) {
            Some((name, _)) => Label::Name(name.clone()),
            None if slots.len() < MAX_CLIENTS => Label::Name(Arc::from(client)),
            None => Label::Static(OTHER),
        }
    }
}
