//! Hot reload: a new configuration swapped in under running sessions.
//!
//! Upstreams are matched by name ([`diff`]). An added upstream gets a new
//! slot (or the retired slot of an upstream of that name) and starts; a
//! removed one is retired: its supervisor stops, its control connection and
//! every session's own connection to it (its per-session children) are shut
//! down, calls to its tools get an error naming it, and its tools leave the
//! catalog. A changed upstream (any setting: target, tool overrides, mode,
//! prefix...) is retired and replaced in its slot by one with the new
//! settings, seeded with the old tools so lists do not flap while it
//! connects. Unchanged upstreams keep their slot, their connections and the
//! sessions' children: slot indices never move, so what sessions keep by
//! index stays right. Sessions hear `tools/list_changed` where their list
//! changed (the catalog rebuild), and `resources/list_changed` /
//! `prompts/list_changed` where an upstream they use with those lists went
//! or came.
//!
//! A change of `[[auth.clients]]` (keys, tool policies, limits) applies to
//! the requests that follow and to running sessions: each session gets its
//! client's new policy (what it sees, the upstreams it may use, its limits)
//! and `list_changed` where its lists changed; a session whose client's API
//! key entry is gone is ended.
//!
//! Requests in flight finish on what they started with: they hold their
//! upstream's handle and connection, and a retired connection ends them with
//! the transport's error. The sections of [`diff::RESTART_ONLY`] keep their
//! running values (logged). [`watch`] reloads on SIGHUP and on file change.

mod diff;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;

pub use diff::Changes;
pub use watch::watch;

use super::Gateway;
use super::state::GwSession;
use super::supervise::supervise_one;
use super::upstreams::UpstreamHandle;
use crate::auth::{Authenticator, PrincipalId, PrincipalKind};
use crate::config::{ClientConfig, Config, DEFAULT_CLIENT, TargetError};
use crate::identity::Identity;
use crate::jsonrpc::{Message, Notification};
use crate::protocol::method;

/// Why a reload was refused (the running configuration stays).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The new `[[auth.clients]]` cannot be set up.
    #[error("cannot set up the new [auth] clients: {0}")]
    Auth(#[from] crate::auth::BuildError),
    /// An upstream's configuration names no usable target.
    #[error("upstream `{upstream}` has no usable target: {source}")]
    Target {
        upstream: String,
        #[source]
        source: TargetError,
    },
    /// The lockfile (`[disclosure] lock`) cannot be read.
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
}

/// What the gateway keeps for reloads.
#[derive(Default)]
pub(super) struct ReloadState {
    /// One reload at a time.
    lock: tokio::sync::Mutex<()>,
}

/// A slot whose upstream this reload stops.
struct Retired {
    index: usize,
    handle: Arc<UpstreamHandle>,
    /// Removed (rather than replaced by a changed configuration).
    removed: bool,
}

impl Gateway {
    /// Puts `new` in effect (see the [module](self) documentation) and says
    /// what changed. `new` must be validated (the loader does).
    pub async fn reload(self: &Arc<Self>, new: Config) -> Result<Changes, ReloadError> {
        let _one_at_a_time = self.reload.lock.lock().await;
        let old = self.config();
        let changes = diff::diff(&old, &new);
        let new = diff::effective(&old, new);
        let recredentialed = recredentialed(&old, &new);
        // Every target first: one bad target refuses the whole reload.
        let mut targets = HashMap::new();
        for up in new.upstreams.iter().filter(|u| changes.starts(&u.name)) {
            let target = up
                .target()
                .map_err(|mut errors| ReloadError::Target { upstream: up.name.clone(), source: errors.remove(0) })?;
            targets.insert(up.name.clone(), target);
        }
        // The new clients, checked before anything changes.
        let authenticator = match changes.clients && new.auth.is_enabled() {
            true => Some(Arc::new(Authenticator::new(&new.auth)?)),
            false => None,
        };
        // The lockfile is read again (an approval since), checked first too.
        let lock = self.catalogs().approved().reread()?;

        // `[identity]` needs a restart: the running one signs.
        let old_identity_subject = old.identity.service_subject.clone();
        let mut slots: Vec<Arc<UpstreamHandle>> = self.upstreams().as_ref().clone();
        let live = |slots: &[Arc<UpstreamHandle>], name: &str| {
            slots.iter().position(|u| !u.is_retired() && u.config.name == name)
        };
        let mut retired = Vec::new();
        for name in &changes.removed {
            if let Some(index) = live(&slots, name) {
                retired.push(Retired { index, handle: slots[index].clone(), removed: true });
            }
        }
        let mut started = Vec::new();
        for cfg in &new.upstreams {
            let Some(target) = targets.remove(&cfg.name) else { continue };
            let (index, old) = match live(&slots, &cfg.name) {
                Some(index) => {
                    retired.push(Retired { index, handle: slots[index].clone(), removed: false });
                    (index, Some(slots[index].clone()))
                }
                None => {
                    let reused = slots.iter().position(|u| u.is_retired() && u.config.name == cfg.name);
                    (reused.unwrap_or(slots.len()), None)
                }
            };
            let target = self.identity().service_target(cfg, target, &old_identity_subject);
            let handle = Arc::new(UpstreamHandle::configured(index, cfg.clone(), target));
            if let Some(old) = old {
                handle.seed_from(&old);
            }
            match slots.get_mut(index) {
                Some(slot) => *slot = handle.clone(),
                None => slots.push(handle.clone()),
            }
            started.push(handle);
        }

        self.remember_removed_tools(&retired, &changes);
        // Which sessions hear that a resource or prompt list changed: those
        // that used a stopped upstream with such a list.
        // Listen streams are told like sessions (see `listeners`).
        let sessions = self.audience();
        // What each session sees and may use, to tell it what a policy
        // change changed.
        let before: Vec<_> = sessions
            .iter()
            .map(|s| {
                let uses: Vec<bool> = (0..slots.len()).map(|i| s.state.uses(i)).collect();
                (self.catalog_for(s), uses)
            })
            .collect();
        let mut told: Vec<(Arc<GwSession>, ListsChanged)> = sessions
            .iter()
            .map(|s| {
                let lists = retired.iter().filter(|r| s.state.uses(r.index)).map(|r| lists_of(&r.handle)).sum();
                (s.clone(), lists)
            })
            .collect();

        let mut peers = Vec::new();
        for r in &retired {
            let why = match r.removed {
                true => format!("upstream `{}` was removed from toolgate's configuration", r.handle.label),
                false => format!("upstream `{}` is restarting with its new configuration", r.handle.label),
            };
            peers.extend(r.handle.retire(&why));
        }
        let slots = Arc::new(slots);
        self.views.replace(new, slots.clone());
        if let Some(authenticator) = &authenticator {
            self.clients.replace_authenticator(authenticator.clone());
        }
        // Connections made with a client's old credentials end: the next
        // call opens one with the new ones.
        if !recredentialed.is_empty() {
            for up in slots.iter().filter(|u| !u.is_retired()) {
                peers.extend(up.take_connections_of(|id| recredentialed.iter().any(|c| c.covers(id))));
            }
        }
        for session in &sessions {
            if let Some(authenticator) = &authenticator {
                let before = session.state.principal();
                if recredentialed.iter().any(|c| c.covers(before.id())) {
                    for up in slots.iter().filter(|u| Identity::is_personal(&u.config, &before)) {
                        peers.extend(session.state.take_connection(up.index).await);
                    }
                }
                match authenticator.refreshed(&before) {
                    Some(principal) => session.state.set_principal(principal),
                    None => {
                        tracing::info!(
                            client = session.state.client_name(),
                            "ending a session: its client was removed from [auth]"
                        );
                        self.sessions().remove(session.id());
                        self.listeners().end(session.id());
                        continue;
                    }
                }
            }
            session.state.refit(&slots);
            for r in &retired {
                peers.extend(session.state.take_connection(r.index).await);
                let mut tools = session.state.tools.lock();
                if tools.overrides.remove(&r.index).is_some() {
                    tools.view = None;
                }
            }
        }
        for up in &started {
            supervise_one(self, up.clone());
        }
        // Tools of removed upstreams leave the list now; changed overrides
        // and the lock read again apply now (the replacement is seeded with
        // the old tools).
        if let Some(lock) = lock {
            self.catalogs().approved().replace(lock);
        }
        self.rebuild_catalog();
        for ((session, lists), (view, uses)) in told.iter_mut().zip(&before) {
            if authenticator.is_some() {
                // The policy may have changed what the session sees and uses.
                let now = self.catalog_for(session);
                if now.catalog.list_result_raw().get() != view.catalog.list_result_raw().get() {
                    session.notify(Message::Notification(Notification::new(method::TOOLS_LIST_CHANGED, None)));
                }
                for (index, used) in uses.iter().enumerate() {
                    if session.state.uses(index) != *used && !slots[index].is_retired() {
                        *lists = [*lists, lists_of(&slots[index])].into_iter().sum();
                    }
                }
            }
            lists.notify(session);
        }
        // The retired connections end (per-session children included);
        // calls still on them get the transport's error.
        futures::future::join_all(peers.iter().map(|p| p.shutdown())).await;
        for up in started {
            self.announce_lists(up);
        }
        Ok(changes)
    }

    /// Notes the exposed tools of removed upstreams; forgets those of
    /// upstreams (re)started.
    fn remember_removed_tools(&self, retired: &[Retired], changes: &Changes) {
        let catalog = self.catalog();
        let mut removed = self.views.removed_tools();
        removed.retain(|_, (up, _)| !changes.starts(up));
        for r in retired.iter().filter(|r| r.removed) {
            for entry in catalog.catalog.tools().filter(|e| e.upstream == r.index) {
                removed.insert(entry.exposed.clone(), (r.handle.label.clone(), entry.natural.clone()));
            }
        }
    }

    /// Once a started upstream is up, tells the sessions that may use it
    /// that its resource and prompt lists joined theirs.
    fn announce_lists(self: &Arc<Self>, up: Arc<UpstreamHandle>) {
        let gateway = Arc::downgrade(self);
        crate::spawn(async move {
            up.wait_ready().await;
            let Some(gw) = gateway.upgrade() else { return };
            if up.is_retired() {
                return;
            }
            let lists = lists_of(&up);
            for s in gw.audience().iter().filter(|s| s.state.uses(up.index)) {
                lists.notify(s);
            }
        });
    }
}

/// Which list notifications a session gets.
#[derive(Default, Clone, Copy)]
struct ListsChanged {
    resources: bool,
    prompts: bool,
}

impl std::iter::Sum for ListsChanged {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |a, b| Self {
            resources: a.resources || b.resources,
            prompts: a.prompts || b.prompts,
        })
    }
}

impl ListsChanged {
    fn notify(&self, session: &GwSession) {
        for (yes, method) in
            [(self.resources, method::RESOURCES_LIST_CHANGED), (self.prompts, method::PROMPTS_LIST_CHANGED)]
        {
            if yes {
                session.notify(Message::Notification(Notification::new(method, None)));
            }
        }
    }
}

/// The lists `up` contributes besides tools.
fn lists_of(up: &UpstreamHandle) -> ListsChanged {
    ListsChanged { resources: up.has("resources"), prompts: up.has("prompts") }
}

/// A client entry whose credentials toward upstreams a reload changed or
/// removed.
struct Recredentialed {
    name: String,
    /// The `default` entry: every JWT client without an entry of its own.
    default: bool,
    /// The names of the entries that exist (for `default`).
    named: Arc<std::collections::HashSet<String>>,
}

impl Recredentialed {
    fn covers(&self, id: &PrincipalId) -> bool {
        match self.default {
            true => id.kind() == PrincipalKind::Jwt && !self.named.contains(id.name()),
            false => id.name() == self.name && id.kind() != PrincipalKind::Anonymous,
        }
    }
}

/// The client entries whose `upstream_headers`, `upstream_env` or
/// `identity_claims` differ between `old` and `new` (or that are gone).
fn recredentialed(old: &Config, new: &Config) -> Vec<Recredentialed> {
    let credentials =
        |c: &ClientConfig| (c.upstream_headers.clone(), c.upstream_env.clone(), c.identity_claims.clone());
    let named: Arc<std::collections::HashSet<String>> =
        Arc::new(new.auth.clients.iter().map(|c| c.name.clone()).collect());
    old.auth
        .clients
        .iter()
        .filter(|o| new.auth.clients.iter().find(|n| n.name == o.name).is_none_or(|n| credentials(n) != credentials(o)))
        .map(|o| Recredentialed { name: o.name.clone(), default: o.name == DEFAULT_CLIENT, named: named.clone() })
        .collect()
}
