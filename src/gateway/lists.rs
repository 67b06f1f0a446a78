//! Merged `resources/list`, `resources/templates/list` and `prompts/list`,
//! and the maps that route reads, prompts and completions back to the
//! upstream that listed them.
//!
//! Every upstream page is followed and the merge is served as one page (as
//! `tools/list` is): clients that never follow `nextCursor` still see
//! everything, and toolgate never has to translate cursors.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{Value, json};
use toolgate_mcp::uri_template::UriTemplate;

use super::{Gateway, GwSession};
use crate::catalog;
use crate::config::Sharing;
use crate::disclosure;
use crate::jsonrpc::{ErrorObject, Outcome, codes};
use crate::upstream::Peer;

/// Which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Resources,
    Templates,
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Resources => crate::protocol::method::RESOURCES_LIST,
            ListKind::Templates => crate::protocol::method::RESOURCES_TEMPLATES_LIST,
            ListKind::Prompts => crate::protocol::method::PROMPTS_LIST,
        }
    }

    fn key(self) -> &'static str {
        match self {
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    fn capability(self) -> &'static str {
        match self {
            ListKind::Resources | ListKind::Templates => "resources",
            ListKind::Prompts => "prompts",
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
}

impl Gateway {
    /// Serves a merged list.
    pub(crate) async fn merged_list(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        kind: ListKind,
        params: Option<&Value>,
    ) -> Outcome {
        // A bad cursor fails before any upstream is asked.
        if let Err(e) = self.pager.offset(kind.key(), params) {
            return Outcome::error(e);
        }
        let owners: Vec<usize> = self.upstreams.iter().filter(|u| u.has(kind.capability())).map(|u| u.index).collect();
        let crawls = owners.iter().map(|&i| async move {
            let Some(peer) = self.list_peer(session, i) else { return (i, Vec::new()) };
            match super::upstreams::crawl(&peer, kind.method(), kind.key()).await {
                Ok(items) => (i, items),
                Err(e) => {
                    tracing::warn!(upstream = %peer.label(), error = %e, list = kind.method(), "leaving this upstream out of the list");
                    (i, Vec::new())
                }
            }
        });
        let pages = futures::future::join_all(crawls).await;

        let view = self.catalog_for(session);
        let describe_tool = view.catalog.describe_tool_name();
        let mut items = Vec::new();
        if view.catalog.has_progressive() {
            match kind {
                ListKind::Resources => items.push(disclosure::resource_entry(describe_tool)),
                ListKind::Templates => items.push(disclosure::template_entry(describe_tool)),
                ListKind::Prompts => {}
            }
        }
        let count = self.upstreams.len();
        for (i, page) in pages {
            for mut item in page {
                match kind {
                    ListKind::Resources => {
                        if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                            self.lists.resources.write().insert(uri.to_owned(), i);
                        }
                    }
                    ListKind::Templates => {
                        if let Some(t) = item.get("uriTemplate").and_then(Value::as_str) {
                            let mut templates = self.lists.templates.write();
                            if !templates.iter().any(|(j, u)| *j == i && u == t) {
                                templates.push((i, t.to_owned()));
                            }
                        }
                    }
                    ListKind::Prompts => {
                        let Some(name) = item.get("name").and_then(Value::as_str).map(str::to_owned) else { continue };
                        let exposed = catalog::natural_name(&self.upstreams[i].config, count, &name);
                        self.lists.prompts.write().insert(exposed.clone(), (i, name));
                        item["name"] = json!(exposed);
                    }
                }
                items.push(item);
            }
        }
        match self.pager.page(kind.key(), kind.key(), &items, params) {
            Ok(page) => Outcome::Result(page),
            Err(e) => Outcome::error(e),
        }
    }

    /// The connection to list with: the session's own upstream session if it
    /// has one (lists may be per session), else the control connection.
    fn list_peer(&self, session: &GwSession, index: usize) -> Option<Arc<Peer>> {
        let up = &self.upstreams[index];
        if up.config.sharing == Sharing::PerSession
            && let Some((_, peer)) = session.state.live_connections().into_iter().find(|(i, _)| *i == index)
        {
            return Some(peer);
        }
        up.control()
    }

    /// The upstreams that may own resource `uri`, most likely first: the one
    /// that listed it, one whose template matches it, else every upstream
    /// with resources, in order.
    pub(crate) fn resource_candidates(&self, uri: &str) -> Vec<usize> {
        if let Some(&i) = self.lists.resources.read().get(uri) {
            return vec![i];
        }
        let by_template: Vec<usize> =
            self.lists.templates.read().iter().filter(|(_, t)| template_matches(t, uri)).map(|(i, _)| *i).collect();
        if !by_template.is_empty() {
            return by_template;
        }
        self.upstreams.iter().filter(|u| u.has("resources")).map(|u| u.index).collect()
    }

    /// The upstreams that may own resource template `template`.
    pub(crate) fn template_candidates(&self, template: &str) -> Vec<usize> {
        let listed: Vec<usize> =
            self.lists.templates.read().iter().filter(|(_, t)| t == template).map(|(i, _)| *i).collect();
        if listed.is_empty() { self.resource_candidates(template) } else { listed }
    }

    /// The upstream and upstream name of an exposed prompt name.
    pub(crate) fn resolve_prompt(&self, exposed: &str) -> Option<(usize, String)> {
        if let Some(found) = self.lists.prompts.read().get(exposed) {
            return Some(found.clone());
        }
        let count = self.upstreams.len();
        // Not listed yet: undo the naming rule.
        let mut unprefixed = None;
        for up in &self.upstreams {
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

    /// Forwards to each candidate in turn until one knows the resource.
    pub(crate) async fn forward_to_candidates(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        candidates: &[usize],
        method: &str,
        params: Option<Value>,
        ctx: &crate::server::RequestCtx,
    ) -> Outcome {
        let uri = params.as_ref().and_then(|p| p.get("uri")).cloned().unwrap_or(Value::Null);
        let mut last = Outcome::error(
            ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found").with_data(json!({"uri": uri})),
        );
        for (n, &i) in candidates.iter().enumerate() {
            let outcome = self.forward(session, i, method, params.clone(), ctx).await;
            let not_found = matches!(outcome.error_code(), Some(codes::RESOURCE_NOT_FOUND | codes::INVALID_PARAMS));
            if !not_found || n + 1 == candidates.len() {
                return outcome;
            }
            last = outcome;
        }
        last
    }
}

/// Whether `uri` could be an expansion of RFC 6570 `template` (see
/// [`UriTemplate`]); a template that does not parse matches only itself.
pub fn template_matches(template: &str, uri: &str) -> bool {
    UriTemplate::parse(template).map_or(template == uri, |t| t.is_match(uri))
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_their_expansions() {
        assert!(template_matches("test://template/{id}/data", "test://template/42/data"));
        assert!(!template_matches("test://template/{id}/data", "test://template/42/other"));
        assert!(!template_matches("test://template/{id}/data", "file://template/42/data"));
        assert!(template_matches("notes://{name}", "notes://todo"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches(
            "resource:///tool_descriptions?tools={tools}",
            "resource:///tool_descriptions?tools=a,b"
        ));
        assert!(template_matches("static://x", "static://x"));
        assert!(!template_matches("static://x", "static://y"));
    }
}
