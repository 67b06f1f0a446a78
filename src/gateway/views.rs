//! What the layers and the forwarder read of the gateway's live state, and
//! nothing more: the upstream slots, the catalog a session sees (and
//! lists), the start-up wait, the tools a reload removed, and the audit
//! trail they report to. One cheap handle, shared by the gateway, the
//! layers and the forwarder, so each holds its own dependencies instead of
//! the whole [`Gateway`](super::Gateway).

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Mutex, MutexGuard};

use super::catalogs::{CatalogView, Catalogs};
use super::startup;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::audit::Audit;
use crate::auth::Principal;
use crate::config::Config;

/// Exposed tool name → the removed upstream it belonged to and its natural
/// name, for the error of a call to it.
pub(super) type RemovedTools = HashMap<String, (Arc<str>, String)>;

/// The gateway's live state as the layers read it (clones share it).
#[derive(Clone)]
pub struct Views {
    /// The configuration in effect (a reload swaps it).
    config: Arc<ArcSwap<Config>>,
    /// The upstream slots (a reload swaps them; see [`super::reload`]).
    upstreams: Arc<ArcSwap<Vec<Arc<UpstreamHandle>>>>,
    catalogs: Arc<Catalogs>,
    /// The audit trail, with `[audit] enabled`.
    audit: Option<Arc<Audit>>,
    /// The tools of upstreams a reload removed (see [`Views::removed_tool`]).
    removed: Arc<Mutex<RemovedTools>>,
}

impl Views {
    pub(super) fn new(
        config: Config,
        upstreams: Vec<Arc<UpstreamHandle>>,
        catalogs: Catalogs,
        audit: Option<Arc<Audit>>,
    ) -> Self {
        Self {
            config: Arc::new(ArcSwap::from_pointee(config)),
            upstreams: Arc::new(ArcSwap::from_pointee(upstreams)),
            catalogs: Arc::new(catalogs),
            audit,
            removed: Arc::default(),
        }
    }

    /// The audit trail, if it is written.
    pub fn audit(&self) -> Option<&Arc<Audit>> {
        self.audit.as_ref()
    }

    /// The configuration in effect.
    pub fn config(&self) -> Arc<Config> {
        self.config.load_full()
    }

    /// The upstream slots, by index: the configured upstreams in order,
    /// then those a reload added; a slot whose upstream a reload removed is
    /// retired ([`UpstreamHandle::is_retired`]).
    pub fn upstreams(&self) -> Arc<Vec<Arc<UpstreamHandle>>> {
        self.upstreams.load_full()
    }

    /// The merged tool catalog.
    pub fn catalogs(&self) -> &Catalogs {
        &self.catalogs
    }

    /// A reload's new configuration and upstream slots.
    pub(super) fn replace(&self, config: Config, upstreams: Arc<Vec<Arc<UpstreamHandle>>>) {
        self.upstreams.store(upstreams);
        self.config.store(Arc::new(config));
    }

    /// The upstream a tool `name` belonged to, if a reload removed it and
    /// `principal` was allowed that tool (to any other client it was never
    /// there: the hint would tell of a tool and upstream it may not know).
    pub(crate) fn removed_tool(&self, name: &str, principal: &Principal) -> Option<Arc<str>> {
        let removed = self.removed.lock();
        let (upstream, natural) = removed.get(name)?;
        principal.tools().allows_tool(name, natural, upstream).then(|| upstream.clone())
    }

    /// The record of removed tools, for a reload to update.
    pub(super) fn removed_tools(&self) -> MutexGuard<'_, RemovedTools> {
        self.removed.lock()
    }

    /// The catalog as `session` sees it.
    pub(crate) fn catalog_for(&self, session: &GwSession) -> Arc<CatalogView> {
        self.catalogs.for_session(&self.upstreams(), session)
    }

    /// What `session`'s `tools/list` shows: its catalog, without the tools
    /// its concern configuration filters out (they stay callable: see
    /// [`crate::concerns`]).
    pub(crate) fn listing_for(&self, session: &GwSession) -> Arc<CatalogView> {
        match session.state.concerns() {
            Some(configured) => self.catalogs.listing_for(&self.upstreams(), session, configured.filter()),
            None => self.catalog_for(session),
        }
    }

    /// Waits for upstreams still starting, within the session's one
    /// start-up wait: `initialize` waits up to `server.startup_timeout`,
    /// and whatever the session asks later waits no longer than that
    /// wait's end (see [`startup`]).
    pub(crate) async fn wait_ready(&self, session: &GwSession) {
        startup::wait(&self.upstreams(), session.state.startup_deadline(), &self.config().server).await;
    }
}
