//! What the layers read of the gateway's live state, and nothing more: the
//! upstream slots, the catalog a session sees (and lists), the start-up
//! wait, and the audit trail they report to. One cheap handle, shared by the gateway and the layers, so a layer
//! holds its own dependencies instead of the whole [`Gateway`](super::Gateway).

use std::sync::Arc;

use arc_swap::ArcSwap;

use super::catalogs::{CatalogView, Catalogs};
use super::startup;
use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::audit::Audit;
use crate::config::Config;

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
