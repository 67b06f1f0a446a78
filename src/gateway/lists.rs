//! Merged `resources/list`, `resources/templates/list` and `prompts/list`,
//! and the maps that route reads, prompts and completions back to the
//! upstream that listed them (the forwarder's).
//!
//! Every upstream page is followed and the merge is served as one page (as
//! `tools/list` is): clients that never follow `nextCursor` still see
//! everything, and toolgate never has to translate cursors.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{Value, json};
use toolgate_mcp::uri_template::UriTemplate;

use super::state::GwSession;
use super::upstreams::UpstreamHandle;
use crate::catalog;
use crate::config::Sharing;
use crate::protocol::method;
use crate::upstream::{Peer, crawl};

/// Which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Resources,
    Templates,
    Prompts,
    /// `tasks/list` (see [`super::tasks`]): crawled, never merged here.
    Tasks,
}

impl ListKind {
    /// The list a method asks for.
    pub fn of(method: &str) -> Option<ListKind> {
        match method {
            crate::protocol::method::RESOURCES_LIST => Some(ListKind::Resources),
            crate::protocol::method::RESOURCES_TEMPLATES_LIST => Some(ListKind::Templates),
            crate::protocol::method::PROMPTS_LIST => Some(ListKind::Prompts),
            _ => None,
        }
    }

    pub fn method(self) -> &'static str {
        match self {
            ListKind::Resources => crate::protocol::method::RESOURCES_LIST,
            ListKind::Templates => crate::protocol::method::RESOURCES_TEMPLATES_LIST,
            ListKind::Prompts => crate::protocol::method::PROMPTS_LIST,
            ListKind::Tasks => method::TASKS_LIST,
        }
    }

    /// The key of the items in the result.
    pub fn key(self) -> &'static str {
        match self {
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
            ListKind::Prompts => "prompts",
            ListKind::Tasks => "tasks",
        }
    }

    /// The capability an upstream needs to have the list.
    pub fn capability(self) -> &'static str {
        match self {
            ListKind::Resources | ListKind::Templates => "resources",
            ListKind::Prompts => "prompts",
            ListKind::Tasks => "tasks",
        }
    }
}

/// What the last merges taught about ownership.
#[derive(Default)]
pub struct RouteMaps {
    /// Resource URI → upstream index.
    resources: RwLock<HashMap<String, usize>>,
    /// (upstream index, URI template).
    templates: RwLock<Vec<(usize, String)>>,
    /// Exposed prompt name → (upstream index, upstream's name).
    prompts: RwLock<HashMap<String, (usize, String)>>,
    /// Upstreams an item of whose lists carried `_meta.concerns` (an update
    /// of a session's concerns may change those lists).
    concerned: RwLock<std::collections::HashSet<usize>>,
}

/// One upstream's page of a list, as crawled.
pub struct Crawled {
    pub upstream: usize,
    pub items: Vec<Value>,
}

/// Crawls list `kind` of every upstream that has it and `session`'s client
/// may use: over the session's own upstream session when it has one (lists
/// may be per session), else the control connection. An upstream that fails
/// is left out of the list (and logged).
pub async fn crawl_all(upstreams: &[Arc<UpstreamHandle>], session: &GwSession, kind: ListKind) -> Vec<Crawled> {
    let owners = upstreams.iter().filter(|u| u.has(kind.capability()) && session.state.uses(u.index));
    let crawls = owners.map(|up| async move {
        let Some(peer) = list_peer(up, session) else { return Crawled { upstream: up.index, items: Vec::new() } };
        match crawl(&peer, up.config.timeout, kind.method(), kind.key()).await {
            Ok(items) => Crawled { upstream: up.index, items },
            Err(e) => {
                tracing::warn!(upstream = %peer.label(), error = %e.report(), list = kind.method(), "leaving this upstream out of the list");
                Crawled { upstream: up.index, items: Vec::new() }
            }
        }
    });
    futures::future::join_all(crawls).await
}

/// The connection to list with: the session's own upstream session if it
/// has one, else the control connection.
fn list_peer(up: &UpstreamHandle, session: &GwSession) -> Option<Arc<Peer>> {
    if up.config.sharing == Sharing::PerSession
        && let Some((_, peer)) = session.state.live_connections().into_iter().find(|(i, _)| *i == up.index)
    {
        return Some(peer);
    }
    up.control()
}

impl RouteMaps {
    /// Whether upstream `up`'s prompts and resources may be filtered by
    /// concerns: it maps them itself, or one of its items carried
    /// `_meta.concerns`.
    pub(crate) fn maps_concerns(&self, up: &UpstreamHandle) -> bool {
        !up.config.concerns.is_empty() || self.carries_concerns(up.index)
    }

    /// Merges crawled pages into one list, in upstream order, learning who
    /// owns what and exposing prompt names under the gateway's naming rule.
    pub fn merge(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        kind: ListKind,
        pages: Vec<Crawled>,
        shown: impl Fn(usize, &Value) -> bool,
    ) -> Vec<Value> {
        let count = upstreams.len();
        let mut items = Vec::new();
        for Crawled { upstream: i, items: page } in pages {
            for mut item in page {
                if item.pointer("/_meta/concerns").is_some() {
                    self.concerned.write().insert(i);
                }
                match kind {
                    ListKind::Resources => {
                        if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                            self.resources.write().insert(uri.to_owned(), i);
                        }
                    }
                    ListKind::Templates => {
                        if let Some(t) = item.get("uriTemplate").and_then(Value::as_str) {
                            let mut templates = self.templates.write();
                            if !templates.iter().any(|(j, u)| *j == i && u == t) {
                                templates.push((i, t.to_owned()));
                            }
                        }
                    }
                    ListKind::Prompts => {
                        let Some(name) = item.get("name").and_then(Value::as_str).map(str::to_owned) else { continue };
                        let exposed = catalog::natural_name(&upstreams[i].config, count, &name);
                        self.prompts.write().insert(exposed.clone(), (i, name));
                        item["name"] = json!(exposed);
                    }
                    ListKind::Tasks => {}
                }
                if shown(i, &item) {
                    items.push(item);
                }
            }
        }
        items
    }

    /// Whether an item upstream `index` listed carried `_meta.concerns`.
    pub fn carries_concerns(&self, index: usize) -> bool {
        self.concerned.read().contains(&index)
    }

    /// The upstreams among those `allowed` that may own resource `uri`,
    /// most likely first: the one that listed it, one whose template matches
    /// it, else every upstream with resources, in order. What only a
    /// refused upstream listed resolves as if it were unknown.
    pub fn resource_candidates(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        uri: &str,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        if let Some(&i) = self.resources.read().get(uri).filter(|&&i| allowed(i)) {
            return vec![i];
        }
        let by_template: Vec<usize> = self
            .templates
            .read()
            .iter()
            .filter(|(i, t)| allowed(*i) && template_matches(t, uri))
            .map(|(i, _)| *i)
            .collect();
        if !by_template.is_empty() {
            return by_template;
        }
        upstreams.iter().filter(|u| u.has("resources") && allowed(u.index)).map(|u| u.index).collect()
    }

    /// The upstreams among those `allowed` that may own resource template
    /// `template`.
    pub fn template_candidates(
        &self,
        upstreams: &[Arc<UpstreamHandle>],
        template: &str,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let listed: Vec<usize> =
            self.templates.read().iter().filter(|(i, t)| allowed(*i) && t == template).map(|(i, _)| *i).collect();
        if listed.is_empty() { self.resource_candidates(upstreams, template, allowed) } else { listed }
    }

    /// The upstream and upstream name of an exposed prompt name.
    pub fn resolve_prompt(&self, upstreams: &[Arc<UpstreamHandle>], exposed: &str) -> Option<(usize, String)> {
        if let Some(found) = self.prompts.read().get(exposed) {
            return Some(found.clone());
        }
        let count = upstreams.len();
        // Not listed yet: undo the naming rule.
        let mut unprefixed = None;
        for up in upstreams {
            // The exposed name of "" is the bare prefix (`p__`), or "" when unprefixed.
            let prefix = catalog::natural_name(&up.config, count, "");
            if prefix.is_empty() {
                unprefixed = unprefixed.or(Some(up.index));
            } else if let Some(rest) = exposed.strip_prefix(&prefix).filter(|r| !r.is_empty()) {
                return Some((up.index, rest.to_owned()));
            }
        }
        unprefixed.map(|i| (i, exposed.to_owned()))
    }
}

/// Whether `uri` could be an expansion of RFC 6570 `template` (see
/// [`UriTemplate`]); a template that does not parse matches only itself.
pub fn template_matches(template: &str, uri: &str) -> bool {
    UriTemplate::parse(template).map_or(template == uri, |t| t.is_match(uri))
}

#[cfg(test)]
mod tests;
