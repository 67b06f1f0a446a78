//! The tool catalog as served: the gateway-wide one, rebuilt whenever an
//! upstream's tools change, the views of clients whose `[[auth.clients]]`
//! policy hides some tools, and the catalogs of sessions whose own upstream
//! sessions list different tools (servers with per-session toolsets).
//!
//! Every view has an epoch of its own (the gateway-wide catalog, each
//! client policy's view of it, each session's own catalog): caches of what a
//! view answers (the disclosure layer's rendered descriptions) are keyed by
//! it, so one client's answer is never served to a client whose view differs.

// foldhash: these maps are looked up on every call (see Cargo.toml).
use foldhash::{HashMap, HashMapExt as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;

use super::approved::Approved;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::auth::{ClientPolicy, Principal};
use crate::catalog::{Catalog, UpstreamTools};
use crate::concerns::{Declared, Filter};
use crate::config::DisclosureConfig;
use crate::jsonrpc::{Message, Notification};
use crate::protocol::method;
use crate::upstream::{Peer, crawl};

/// A catalog and the epoch it was built in.
pub struct CatalogView {
    /// The merged catalog.
    pub catalog: Catalog,
    /// Bumped on every rebuild; keys cached description bodies.
    pub epoch: u64,
}

/// A catalog [`Catalogs::rebuild`] made current; other rebuilds wait
/// while it is held.
pub(crate) struct Rebuilt<'a> {
    _guard: MutexGuard<'a, ()>,
    /// The upstream slots it was built from.
    pub upstreams: Arc<Vec<Arc<UpstreamHandle>>>,
    /// The new catalog.
    pub view: Arc<CatalogView>,
    /// The catalog it replaced.
    pub old: Arc<CatalogView>,
    /// Whether the served list changed.
    pub changed: bool,
    /// How the upstreams' tools differ from the lock's.
    pub drift: Vec<super::approved::Reported>,
}

/// The gateway-wide catalog and how to rebuild it.
pub struct Catalogs {
    current: ArcSwap<CatalogView>,
    /// Serializes rebuilds (several upstreams may change at once).
    rebuilding: Mutex<()>,
    /// Source of epochs, gateway-wide, per client policy and per session alike.
    epochs: AtomicU64,
    disclosure: DisclosureConfig,
    /// The concerns declared (`[[concerns]]`, fixed until a restart).
    concerns: Arc<Declared>,
    /// Listings of views filtered by a client's concerns, by the view's
    /// epoch and the filter, for the gateway-wide epoch they were made in.
    listings: EpochCache<(u64, Filter), Arc<CatalogView>>,
    /// The views of restricted client policies of the current catalog, by
    /// policy ([`PolicyKey`]), and the gateway-wide epoch they were made from.
    visible: EpochCache<PolicyKey, PolicyView>,
    /// The lock in effect, which decides what of each upstream's tools is served.
    approved: Approved,
}

impl Catalogs {
    /// An empty catalog (before any upstream has listed its tools).
    pub fn new(disclosure: DisclosureConfig, concerns: Arc<Declared>, approved: Approved) -> Self {
        Self {
            current: ArcSwap::from_pointee(CatalogView { catalog: Catalog::empty(), epoch: 0 }),
            rebuilding: Mutex::new(()),
            epochs: AtomicU64::new(1),
            disclosure,
            concerns,
            listings: EpochCache::default(),
            visible: EpochCache::default(),
            approved,
        }
    }

    /// The lock in effect.
    pub fn approved(&self) -> &Approved {
        &self.approved
    }

    /// The concerns declared.
    pub fn concerns(&self) -> &Arc<Declared> {
        &self.concerns
    }

    /// What a client with `filter` is shown of `view`, a view the gateway
    /// shares (the gateway-wide catalog, or a client policy's view of it):
    /// the tools whose concern values match. Cached per view and filter
    /// until the gateway-wide catalog changes; there are as many as client
    /// policies times concern filters.
    fn listing(&self, view: &Arc<CatalogView>, filter: &Filter) -> Arc<CatalogView> {
        if filter.is_open() {
            return view.clone();
        }
        let global = self.current.load().epoch;
        self.listings.get_or_insert_with(global, (view.epoch, filter.clone()), || self.filtered(view, filter))
    }

    /// `view` without the tools `filter` does not show (not cached).
    fn filtered(&self, view: &CatalogView, filter: &Filter) -> Arc<CatalogView> {
        let catalog = view.catalog.visible(|e| filter.shows(&e.concerns));
        Arc::new(CatalogView { catalog, epoch: self.epochs.fetch_add(1, Ordering::Relaxed) })
    }

    /// What `session` is shown of its catalog under `filter` (its
    /// listing): from the shared cache when its catalog is a shared view,
    /// else kept in the session beside its own catalog (see
    /// [`SessionTools::listing`](super::state::SessionTools::listing)).
    pub(crate) fn listing_for(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        session: &GwSession,
        filter: &Filter,
    ) -> Arc<CatalogView> {
        let (view, own) = self.catalog_of(upstreams, session);
        if !own || filter.is_open() {
            return self.listing(&view, filter);
        }
        let mut tools = session.state.tools.lock();
        if let Some((epoch, kept, listing)) = &tools.listing
            && *epoch == view.epoch
            && kept == filter
        {
            return listing.clone();
        }
        let listing = self.filtered(&view, filter);
        tools.listing = Some((view.epoch, filter.clone(), listing.clone()));
        listing
    }

    /// The gateway-wide catalog.
    pub fn current(&self) -> Arc<CatalogView> {
        self.current.load_full()
    }

    /// Merges the tools of the upstream slots (`upstreams`, read once the
    /// rebuild's turn comes) into a new catalog, now current
    /// (the lock's drift recorded in `audit`). What it returns holds off
    /// other rebuilds until dropped, so what the gateway does with the new
    /// catalog (indexing it, telling sessions) happens in rebuild order.
    pub(crate) fn rebuild(
        &self,
        upstreams: impl FnOnce() -> Arc<Vec<Arc<UpstreamHandle>>>,
        audit: Option<&crate::audit::Audit>,
    ) -> Rebuilt<'_> {
        let guard = self.rebuilding.lock();
        // Read under the lock: a rebuild that waited behind a reload's
        // builds from the slots that reload put in place, not older ones.
        let upstreams = upstreams();
        let (view, served) = self.build(&upstreams, |_| None);
        let drift = self.approved.built(served, audit);
        let old = self.current.load_full();
        for p in view.catalog.problems() {
            if !old.catalog.problems().contains(p) {
                tracing::warn!("{p}");
            }
        }
        let changed = view.catalog.list_result_raw().get() != old.catalog.list_result_raw().get();
        let view = Arc::new(view);
        self.current.store(view.clone());
        Rebuilt { _guard: guard, upstreams, view, old, changed, drift }
    }

    /// Tells each session of `audience` whose list differs from what it saw
    /// in `old` that its tools changed: a client that cannot see the tools
    /// that changed (its policy hides them, or its concerns filter them
    /// out) hears nothing. Sessions with a toolset of their own compare
    /// their own catalog as it was with what it is now.
    pub(crate) fn notify_changed(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        audience: Vec<Arc<GwSession>>,
        old: &Arc<CatalogView>,
    ) {
        let new = self.current();
        // Whether what a client sees changed, by policy and concern filter.
        let mut changed_for: HashMap<(PolicyKey, Option<Filter>), bool> = HashMap::new();
        for session in audience {
            let principal = session.state.principal();
            let filter = session.state.concerns().map(|c| c.filter().clone());
            let own = {
                let tools = session.state.tools.lock();
                (!tools.overrides.is_empty()).then(|| tools.view.clone())
            };
            let sees = match own {
                Some(before) => {
                    let after = self.for_session(upstreams, &session);
                    // Never listed on the old catalog: nothing to compare with.
                    before.is_none_or(|(_, before)| {
                        self.shown(&before, filter.as_ref()) != self.shown(&after, filter.as_ref())
                    })
                }
                None => *changed_for.entry((policy_key(&principal), filter.clone())).or_insert_with(|| {
                    let (before, after) = match principal.tools().is_unrestricted() {
                        true => (old.clone(), new.clone()),
                        false => {
                            let epoch = self.epochs.fetch_add(1, Ordering::Relaxed);
                            let before = visible_to(&old.catalog, upstreams, &principal);
                            (
                                Arc::new(CatalogView { catalog: before, epoch }),
                                self.visible_view(&new, upstreams, &principal),
                            )
                        }
                    };
                    self.shown(&before, filter.as_ref()) != self.shown(&after, filter.as_ref())
                }),
            };
            if sees {
                session.notify(Message::Notification(Notification::new(method::TOOLS_LIST_CHANGED, None)));
            }
        }
    }

    /// The `tools/list` a client with `filter` is shown of `view` (not
    /// cached: compared once, as the catalog changes).
    fn shown(&self, view: &Arc<CatalogView>, filter: Option<&Filter>) -> Arc<str> {
        let listed = match filter.filter(|f| !f.is_open()) {
            Some(filter) => self.filtered(view, filter),
            None => view.clone(),
        };
        Arc::from(listed.catalog.list_result_raw().get())
    }

    /// `view` as a client with a restricted policy sees it (cached per
    /// gateway-wide epoch and policy).
    fn visible_view(
        &self,
        global: &Arc<CatalogView>,
        upstreams: &[Arc<UpstreamHandle>],
        principal: &Principal,
    ) -> Arc<CatalogView> {
        let (_, view) = self.visible.get_or_insert_with(global.epoch, policy_key(principal), || {
            let catalog = visible_to(&global.catalog, upstreams, principal);
            let view = Arc::new(CatalogView { catalog, epoch: self.epochs.fetch_add(1, Ordering::Relaxed) });
            (principal.policy_arc().clone(), view)
        });
        view
    }

    /// Builds a catalog from every upstream's tools, or `replaced(i)` where
    /// that gives a list.
    /// What the lock let through of each upstream comes back beside it.
    fn build(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        replaced: impl Fn(usize) -> Option<Arc<Vec<Value>>>,
    ) -> (CatalogView, Vec<(usize, Arc<str>, crate::lock::Served)>) {
        // Slots a reload retired are left out; entries keep naming slots.
        let live: Vec<_> = upstreams.iter().filter(|u| !u.is_retired()).collect();
        let mut served = Vec::new();
        let tools: Vec<_> = live
            .iter()
            .map(|u| {
                let listed = replaced(u.index).unwrap_or_else(|| u.tools());
                let (tools, approved) = self.approved.serve(&u.config.name, listed);
                if let Some(approved) = approved {
                    served.push((u.index, Arc::from(u.config.name.as_str()), approved));
                }
                tools
            })
            .collect();
        let inputs: Vec<UpstreamTools<'_>> = live
            .iter()
            .zip(&tools)
            .map(|(u, t)| UpstreamTools { config: &u.config, tools: t, extras: &u.extras })
            .collect();
        let ids: Vec<usize> = live.iter().map(|u| u.index).collect();
        let catalog = Catalog::build_with_ids(&inputs, Some(&ids), &self.disclosure, &self.concerns);
        (CatalogView { catalog, epoch: self.epochs.fetch_add(1, Ordering::Relaxed) }, served)
    }

    /// The catalog as `session` sees it: the gateway-wide one, unless one of
    /// its own upstream sessions reported a different tool list; either way
    /// without the tools its client's policy hides.
    pub(crate) fn for_session(&self, upstreams: &[Arc<UpstreamHandle>], session: &GwSession) -> Arc<CatalogView> {
        self.catalog_of(upstreams, session).0
    }

    /// The catalog as `session` sees it, and whether it is the session's
    /// own (`false`: a view the gateway shares).
    fn catalog_of(&self, upstreams: &[Arc<UpstreamHandle>], session: &GwSession) -> (Arc<CatalogView>, bool) {
        let global = self.current();
        let principal = &session.state.principal();
        let restricted = !principal.tools().is_unrestricted();
        let mut tools = session.state.tools.lock();
        if tools.overrides.is_empty() {
            let view = if restricted { self.visible_view(&global, upstreams, principal) } else { global };
            return (view, false);
        }
        if let Some((epoch, view)) = &tools.view
            && *epoch == global.epoch
        {
            return (view.clone(), true);
        }
        let (mut view, _) = self.build(upstreams, |i| tools.overrides.get(&i).cloned());
        if restricted {
            view.catalog = visible_to(&view.catalog, upstreams, principal);
        }
        let view = Arc::new(view);
        tools.view = Some((global.epoch, view.clone()));
        (view, true)
    }

    /// A session's own upstream session says its tools changed (or, with
    /// `peer` `None`, ended): list them there, and tell that session (only)
    /// if what it sees changed.
    pub(crate) async fn session_tools_changed(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        session: &Arc<GwSession>,
        index: usize,
        peer: Option<&Arc<Peer>>,
    ) {
        let before = self.for_session(upstreams, session);
        let tools = match peer {
            Some(peer) => match crawl(peer, upstreams[index].config.timeout, method::TOOLS_LIST, "tools").await {
                Ok(tools) => Some(tools),
                Err(e) => {
                    tracing::warn!(upstream = %peer.label(), error = %e.report(), "could not list the session's tools");
                    return;
                }
            },
            None => None,
        };
        {
            let mut state = session.state.tools.lock();
            let global = upstreams[index].tools();
            match tools.filter(|t| *t != *global) {
                Some(t) => state.overrides.insert(index, Arc::new(t)),
                None => state.overrides.remove(&index),
            };
            state.view = None;
        }
        let after = self.for_session(upstreams, session);
        if before.catalog.list_result_raw().get() != after.catalog.list_result_raw().get() {
            session.notify(Message::Notification(Notification::new(method::TOOLS_LIST_CHANGED, None)));
        }
    }
}

/// `catalog` without the tools `principal`'s policy hides.
fn visible_to(catalog: &Catalog, upstreams: &[Arc<UpstreamHandle>], principal: &Principal) -> Catalog {
    let policy = principal.tools();
    catalog.visible(|entry| {
        upstreams
            .get(entry.upstream)
            .is_some_and(|up| policy.allows_tool(&entry.exposed, &entry.natural, &up.config.name))
    })
}

/// What identifies a client's policy: the policy itself (its address).
/// Clients of one `[[auth.clients]]` entry share it (JWT subjects without an
/// entry of their own share `default`'s), and a reload that changes the
/// clients makes new ones. Keying by the entry's *name* would let a request
/// admitted before a reload cache its old view under the new catalog.
type PolicyKey = usize;

/// A policy's view, and the policy itself, kept alive so that no other one
/// takes its address (its key) while the view is cached.
type PolicyView = (Arc<ClientPolicy>, Arc<CatalogView>);

fn policy_key(principal: &Principal) -> PolicyKey {
    Arc::as_ptr(principal.policy_arc()) as PolicyKey
}

/// Values made from one gateway-wide catalog, by key: all forgotten when
/// the catalog changes.
struct EpochCache<K, V>(Mutex<(u64, HashMap<K, V>)>);

impl<K, V> Default for EpochCache<K, V> {
    fn default() -> Self {
        Self(Mutex::new((0, HashMap::new())))
    }
}

impl<K: std::hash::Hash + Eq, V: Clone> EpochCache<K, V> {
    /// The value of `key` made from the catalog of `epoch`, made now by
    /// `make` if there is none.
    fn get_or_insert_with(&self, epoch: u64, key: K, make: impl FnOnce() -> V) -> V {
        let mut cache = self.0.lock();
        if cache.0 != epoch {
            *cache = (epoch, HashMap::new());
        }
        cache.1.entry(key).or_insert_with(make).clone()
    }
}
