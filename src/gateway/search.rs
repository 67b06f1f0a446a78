//! The search listing, for catalogs of hundreds of tools (`[disclosure]
//! listing = "search"`, or `"auto"` past `search_above` tools).
//!
//! `tools/list` then shows only the `pinned` tools (in their usual form),
//! the search tool and the describe tool, whatever the catalog holds; the
//! model searches the catalog by task, fetches the descriptions of what it
//! picks, and calls. The search tool ranks every tool the client may see
//! (its policy's view, filtered by its concerns) with the `toolgate-search`
//! index; searching authorizes nothing (the gate still wants the
//! description), and each search counts in `calls_per_minute` like any call.
//!
//! The index of the gateway-wide catalog is built in the background when the
//! catalog changes ([`Indexes::catalog_changed`]), so requests never wait
//! on it; a search waits up to half a second for the current catalog's
//! index, then uses the previous one, filtered by what the client sees. A
//! session whose own upstream sessions list other tools gets an index of
//! its own catalog, built in the background on its first search after a
//! change, at most every two seconds per session and one build at a time
//! gateway-wide; a search meanwhile uses the session's previous index.

use std::sync::Arc;

use globset::GlobSet;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use toolgate_search::{Document, Index};

use super::catalogs::CatalogView;
use super::layer::{Exchange, Layer, Next};
use super::pages::Pager;
use super::resolve::Target;
use super::state::GwSession;
use super::views::Views;
use crate::catalog::ToolEntry;
use crate::config::{Activation, DisclosureConfig, Listing};
use crate::jsonrpc::{Message, Notification, Outcome, Request};
use crate::protocol::method;
use crate::server::ServerOffer;

mod route;

pub use route::Routed;

/// Longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most results one search returns, and how many without `limit`.
pub const MAX_LIMIT: u64 = 50;
const DEFAULT_LIMIT: u64 = 10;
/// Per-session indexes kept (sessions with toolsets of their own).
const SESSION_INDEXES: u64 = 64;
/// How often, at most, one session's own catalog is indexed anew: a build
/// costs about 0.3 ms of CPU a tool, and a session can change its own
/// toolset at will. A search sooner uses its previous index, filtered by
/// what the session sees now.
const SESSION_REINDEX_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The search layer.
pub struct Search {
    /// The catalog views a session sees, and the start-up wait.
    views: Views,
    listing: Listing,
    /// Pages the search listing.
    pager: Arc<Pager>,
    above: usize,
    tool_name: String,
    /// The call tool's name (see [`route`]).
    call_tool: String,
    /// Whether clients with a session get the tools they described listed.
    activation: Activation,
    pinned: GlobSet,
    indexes: Arc<Indexes>,
    /// Search listings by the epoch of the listing view they were made from.
    listings: moka::sync::Cache<u64, Arc<RawValue>>,
}

/// An index and the catalog view it was built from (its documents are that
/// view's tools, in order).
struct Indexed {
    view: Arc<CatalogView>,
    index: Index,
}

/// How long a search waits for the index of the current catalog before it
/// settles for the previous one; when the previous one indexes no tools
/// (the first catalog is being indexed), up to [`FIRST_WAIT`].
const FRESH_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// See [`FRESH_WAIT`].
const FIRST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The indexes searches use.
pub struct Indexes {
    /// Of the gateway-wide catalog (maybe of an older epoch while the
    /// current one is built).
    global: watch::Sender<Option<Arc<Indexed>>>,
    /// Of sessions' own catalogs, by session.
    sessions: moka::sync::Cache<Arc<str>, Arc<SessionIndex>>,
    /// One build of a session's index at a time, gateway-wide: however many
    /// sessions change their toolsets, their indexing takes one core.
    session_builds: Arc<tokio::sync::Semaphore>,
}

/// The index of one session's own catalog: the newest built, and when its
/// last build started.
struct SessionIndex {
    built: watch::Sender<Option<Arc<Indexed>>>,
    /// When the last build started (`None`: never), and the epoch of the
    /// view it indexes.
    started: parking_lot::Mutex<Option<(tokio::time::Instant, u64)>>,
}

impl Search {
    /// The layer, when `disclosure` may show the search listing, paging it
    /// with `pager`.
    pub fn new(disclosure: &DisclosureConfig, pager: &Arc<Pager>, views: &Views) -> Option<Self> {
        if !disclosure.may_search() {
            return None;
        }
        let mut pinned = globset::GlobSetBuilder::new();
        for pattern in &disclosure.pinned {
            // Validated with the configuration.
            if let Ok(glob) = crate::config::compile_glob(pattern) {
                pinned.add(glob);
            }
        }
        Some(Self {
            views: views.clone(),
            listing: disclosure.listing,
            pager: pager.clone(),
            above: disclosure.search_above,
            tool_name: disclosure.search_tool_name.clone(),
            call_tool: disclosure.call_tool_name.clone(),
            activation: disclosure.activation,
            pinned: pinned.build().unwrap_or_else(|_| GlobSet::empty()),
            indexes: Arc::new(Indexes {
                global: watch::Sender::new(None),
                sessions: moka::sync::Cache::new(SESSION_INDEXES),
                session_builds: Arc::new(tokio::sync::Semaphore::new(1)),
            }),
            listings: moka::sync::Cache::new(1024),
        })
    }

    /// The gateway-wide catalog changed to `view`: index it in the
    /// background (the previous index serves meanwhile).
    pub fn catalog_changed(&self, view: &Arc<CatalogView>) {
        self.indexes.catalog_changed(&self.views, view);
    }

    /// `request` as the gateway serves it: a call of the call tool, where
    /// the search listing is in effect for `session`'s client, as the direct
    /// call it routes (or refused, for a call that names no tool to route
    /// to); anything else untouched.
    pub fn route(&self, session: &GwSession, request: Request) -> Routed {
        // Every request passes here: the catalog is read only for a call of
        // the call tool.
        if !route::calls(&request, &self.call_tool) || !self.searches(&self.views.listing_for(session)) {
            return Routed::Untouched(request);
        }
        let view = self.views.catalogs().current();
        let describe = view.catalog.describe_tool_name().unwrap_or_default();
        route::CallTool { name: &self.call_tool, synthesized: [&self.tool_name, describe] }.unwrap(request)
    }

    /// Whether `session`'s listing shows the tools it described
    /// (`activation = "list"`, for a client with a session).
    fn activates(&self, session: &GwSession) -> bool {
        self.activation == Activation::List && !session.is_sessionless()
    }

    /// The tools `session`'s listing shows besides the search listing's own:
    /// those it described, where the search listing is in effect (none
    /// unless [`Self::activates`]).
    fn activated(&self, session: &GwSession, view: &CatalogView) -> Vec<Arc<ToolEntry>> {
        if !self.activates(session) || !self.searches(view) {
            return Vec::new();
        }
        let granted = session.state.grants.known();
        let mut tools: Vec<Arc<ToolEntry>> = granted
            .keys()
            .filter_map(|name| view.catalog.get(name))
            .filter(|entry| !self.pinned.is_match(&entry.exposed))
            .cloned()
            .collect();
        tools.sort_by(|a, b| a.exposed.cmp(&b.exposed));
        tools
    }

    /// `listing` (the search listing of `view`) with the tools `session`
    /// activated, in their listed form, after it.
    fn with_activated(&self, listing: Arc<RawValue>, view: &CatalogView, session: &GwSession) -> Arc<RawValue> {
        let activated = self.activated(session, view);
        if activated.is_empty() {
            return listing;
        }
        let Ok(mut listed) = serde_json::from_str::<Value>(listing.get()) else { return listing };
        let Some(tools) = listed.get_mut("tools").and_then(Value::as_array_mut) else { return listing };
        tools.extend(activated.iter().map(|e| e.minimal.clone()));
        serde_json::value::to_raw_value(&listed).map(Arc::from).unwrap_or(listing)
    }

    /// Whether `view` (what a client may see) is served as the search listing.
    fn searches(&self, view: &CatalogView) -> bool {
        match self.listing {
            Listing::All => false,
            Listing::Search => true,
            Listing::Auto => view.catalog.len() > self.above,
        }
    }

    /// The search listing of `view`: its pinned tools as they are listed,
    /// the search tool, the describe tool.
    fn listing_of(&self, view: &CatalogView) -> Option<Arc<RawValue>> {
        self.listings.optionally_get_with(view.epoch, || {
            let listed = view.catalog.list_result().get("tools").and_then(Value::as_array);
            let describe = view.catalog.describe_tool_name();
            let mut tools: Vec<Value> = listed
                .into_iter()
                .flatten()
                .filter(|t| {
                    let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
                    self.pinned.is_match(name) && Some(name) != describe
                })
                .cloned()
                .collect();
            tools.push(search_tool_definition(&self.tool_name));
            tools.push(route::call_tool_definition(&self.call_tool, &self.tool_name, describe));
            if let Some(name) = describe {
                tools.push(crate::disclosure::describe_tool_definition(name));
            }
            serde_json::value::to_raw_value(&json!({"tools": tools})).ok().map(Arc::from)
        })
    }

    /// The search tool: ranks what `cx`'s client sees.
    async fn search(&self, cx: Exchange<'_>, arguments: Option<&Value>) -> Outcome {
        let (query, limit) = match parse_arguments(arguments) {
            Ok(args) => args,
            Err(why) => return tool_error(&why),
        };
        self.views.wait_ready(cx.session).await;
        let listing = self.views.listing_for(cx.session);
        let Some(indexed) = self.indexes.for_session(&self.views, cx.session).await else {
            return tool_error("the tool index is not available yet; try again in a moment");
        };
        let query_owned = query.clone();
        let span = tracing::Span::current();
        // The request's span, entered on the blocking thread.
        #[allow(clippy::disallowed_methods)]
        let found = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let visible = |doc: usize| listing.catalog.get(indexed.index.exposed(doc)).is_some();
            let hits = indexed.index.search(&query_owned, limit, visible);
            hits.into_iter()
                .filter_map(|hit| {
                    let entry = listing.catalog.get(indexed.index.exposed(hit.doc))?;
                    let mut found = Map::new();
                    found.insert("name".into(), json!(entry.exposed));
                    if let Some(title) = entry.minimal.get("title") {
                        found.insert("title".into(), title.clone());
                    }
                    let description = entry.minimal.get("description").cloned().unwrap_or_else(|| json!(""));
                    found.insert("description".into(), description);
                    found.insert("score".into(), json!((f64::from(hit.score) * 1000.0).round() / 1000.0));
                    Some(Value::Object(found))
                })
                .collect::<Vec<_>>()
        })
        .await;
        let tools = match found {
            Ok(tools) => tools,
            Err(e) => {
                tracing::error!(error = %e, "a search failed");
                return tool_error("the search failed; try again");
            }
        };
        tracing::debug!(query = ?query, results = tools.len(), "tools searched");
        if let Some(audit) = self.views.audit() {
            let returned = tools.iter().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect();
            let who = super::audited::who(cx.session);
            audit.emit(crate::audit::Event::now(crate::audit::Kind::Search { who, query: query.clone(), returned }));
        }
        let structured = json!({"tools": tools});
        Outcome::Result(json!({
            "content": [{"type": "text", "text": structured.to_string()}],
            "structuredContent": structured,
        }))
    }
}

impl Layer for Search {
    async fn serve<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        match request.method.as_str() {
            method::TOOLS_LIST => {
                self.views.wait_ready(cx.session).await;
                let view = self.views.listing_for(cx.session);
                match self.listing_of(&view).filter(|_| self.searches(&view)) {
                    Some(listing) => {
                        let listing = self.with_activated(listing, &view, cx.session);
                        self.pager.tools_page(&listing, request.params.as_ref())
                    }
                    None => next.run(cx, request).await,
                }
            }
            method::TOOLS_CALL if cx.resolved.tool_name() == Some(self.tool_name.as_str()) => {
                self.search(cx, request.params.as_ref().and_then(|p| p.get("arguments"))).await
            }
            // A description fetch may activate tools (`activation = "list"`).
            method::TOOLS_CALL | method::RESOURCES_READ if self.activates(cx.session) && fetches(&cx) => {
                let activated = || self.activated(cx.session, &self.views.listing_for(cx.session)).len();
                let before = activated();
                let outcome = next.run(cx, request).await;
                if activated() != before {
                    cx.session.notify(Message::Notification(Notification::new(method::TOOLS_LIST_CHANGED, None)));
                }
                outcome
            }
            _ => next.run(cx, request).await,
        }
    }

    fn offer(&self, offer: &mut ServerOffer) {
        let how = match self.listing {
            Listing::Auto => format!(
                "When tools/list shows `{}` (catalogs of more than {} tools), it holds only a few tools: ",
                self.tool_name, self.above
            ),
            _ => "tools/list shows only a few tools: ".to_owned(),
        };
        let workflow = format!(
            "{how}1. SEARCH the catalog with `{}` {{\"query\": \"what you need to do\"}}; \
             2. FETCH the full descriptions of the tools you pick; 3. CALL each by its exact name through `{}` \
             {{\"name\": \"TOOL_NAME\", \"arguments\": {{...}}}}, with arguments that follow the fetched schema. \
             Search again with other words if nothing fits.",
            self.tool_name, self.call_tool
        );
        offer.instructions = Some(match offer.instructions.take() {
            Some(rest) => format!("{workflow}\n\n{rest}"),
            None => workflow,
        });
    }
}

impl Indexes {
    /// The gateway-wide catalog changed: index it in the background (the
    /// previous index serves meanwhile).
    pub fn catalog_changed(self: &Arc<Self>, views: &Views, view: &Arc<CatalogView>) {
        let (indexes, built) = (self.clone(), build(view.clone(), server_texts(views)));
        crate::spawn(async move {
            if let Some(indexed) = built.await {
                indexes.publish(indexed);
            }
        });
    }

    /// The index `session`'s searches use: the gateway-wide one (built now
    /// if there is none yet), or one of its own catalog if it has one.
    async fn for_session(&self, views: &Views, session: &GwSession) -> Option<Arc<Indexed>> {
        let own = !session.state.tools.lock().overrides.is_empty();
        if own {
            return self.for_own_catalog(views, session).await;
        }
        // The current catalog's index is normally built or on its way
        // (`catalog_changed`); wait for it a little, then settle for the
        // previous one, which the caller filters by what is visible now.
        let view = views.catalogs().current();
        let epoch = view.epoch;
        let mut rx = self.global.subscribe();
        let fresh =
            tokio::time::timeout(FRESH_WAIT, rx.wait_for(|i| i.as_ref().is_some_and(|i| i.view.epoch >= epoch)));
        if let Ok(Ok(indexed)) = fresh.await {
            return indexed.clone();
        }
        let previous = self.global.borrow().clone();
        match previous {
            // An index of no tools (toolgate just started) answers nothing
            // the current catalog holds: worth waiting longer for.
            Some(indexed) if indexed.index.is_empty() && !view.catalog.is_empty() => {
                let first = tokio::time::timeout(
                    FIRST_WAIT,
                    rx.wait_for(|i| i.as_ref().is_some_and(|i| i.view.epoch >= epoch)),
                );
                if let Ok(Ok(fresh)) = first.await {
                    return fresh.clone();
                }
                return Some(indexed);
            }
            Some(indexed) => return Some(indexed),
            None => {}
        }
        let indexed = build(view, server_texts(views)).await?;
        self.publish(indexed.clone());
        Some(indexed)
    }

    /// The index of `session`'s own catalog: the current one, built off
    /// the request path (waited for up to [`FRESH_WAIT`]) unless the
    /// session's last build started less than [`SESSION_REINDEX_EVERY`]
    /// ago; else the newest this session has, or the gateway-wide one.
    async fn for_own_catalog(&self, views: &Views, session: &GwSession) -> Option<Arc<Indexed>> {
        let view = views.catalog_for(session);
        let epoch = view.epoch;
        let entry = self.sessions.get_with(session.id_arc(), || {
            Arc::new(SessionIndex { built: watch::Sender::new(None), started: parking_lot::Mutex::new(None) })
        });
        let current = |i: &Option<Arc<Indexed>>| i.as_ref().is_some_and(|i| i.view.epoch >= epoch);
        if let Some(indexed) = entry.built.borrow().clone().filter(|i| i.view.epoch >= epoch) {
            return Some(indexed);
        }
        let start = {
            let mut started = entry.started.lock();
            let due = started.is_none_or(|(at, building)| building < epoch && at.elapsed() >= SESSION_REINDEX_EVERY);
            if due {
                *started = Some((tokio::time::Instant::now(), epoch));
            }
            due
        };
        if start {
            let (entry, builds, servers) = (entry.clone(), self.session_builds.clone(), server_texts(views));
            crate::spawn(async move {
                let Ok(_permit) = builds.acquire_owned().await else { return };
                if let Some(indexed) = build(view, servers).await {
                    entry.built.send_if_modified(|newest| {
                        let newer = newest.as_ref().is_none_or(|n| n.view.epoch < indexed.view.epoch);
                        if newer {
                            *newest = Some(indexed);
                        }
                        newer
                    });
                }
            });
        }
        let mut rx = entry.built.subscribe();
        if let Ok(Ok(indexed)) = tokio::time::timeout(FRESH_WAIT, rx.wait_for(current)).await {
            return indexed.clone();
        }
        let newest = entry.built.borrow().clone();
        newest.or_else(|| self.global.borrow().clone())
    }

    /// Makes `indexed` the gateway-wide index unless a newer one is there.
    fn publish(&self, indexed: Arc<Indexed>) {
        self.global.send_if_modified(|current| {
            let newer = current.as_ref().is_none_or(|i| i.view.epoch < indexed.view.epoch);
            if newer {
                *current = Some(indexed);
            }
            newer
        });
    }
}

/// What each upstream says of itself, by slot: its name, `serverInfo`
/// title and description, and instructions (the search's "server" field).
fn server_texts(views: &Views) -> Vec<(String, String)> {
    views
        .upstreams()
        .iter()
        .map(|up| {
            let hello = up.hello();
            let info = hello.as_ref().map(|h| &h.server_info);
            let text = |key: &str| info.and_then(|i| i.get(key)).and_then(Value::as_str).unwrap_or_default().to_owned();
            let instructions = hello.as_ref().and_then(|h| h.instructions.clone()).unwrap_or_default();
            let about = [text("title"), text("description"), instructions].join(" ");
            (up.config.name.clone(), about)
        })
        .collect()
}

/// Indexes `view` on a blocking thread (a build takes about 0.3 ms a tool).
async fn build(view: Arc<CatalogView>, servers: Vec<(String, String)>) -> Option<Arc<Indexed>> {
    let span = tracing::Span::current();
    // The caller's span, entered on the blocking thread.
    #[allow(clippy::disallowed_methods)]
    let built = tokio::task::spawn_blocking(move || span.in_scope(|| index(view, &servers)));
    match built.await {
        Ok(indexed) => {
            tracing::debug!(tools = indexed.index.len(), "tool search index built");
            Some(Arc::new(indexed))
        }
        Err(e) => {
            tracing::error!(error = %e, "building the tool search index failed");
            None
        }
    }
}

/// The index of `view`'s tools (documents in the view's order).
fn index(view: Arc<CatalogView>, servers: &[(String, String)]) -> Indexed {
    let docs = view
        .catalog
        .tools()
        .map(|entry| {
            let (server, about) =
                servers.get(entry.upstream).map(|(n, a)| (n.as_str(), a.as_str())).unwrap_or(("", ""));
            let mut doc = Document::from_tool(&entry.exposed, server, &entry.full).with_server_info(about);
            doc.name = entry.original.clone();
            doc
        })
        .collect();
    Indexed { view, index: Index::build(docs) }
}

/// Whether `cx`'s request fetches descriptions (the describe tool, or a
/// read of the descriptions resource).
fn fetches(cx: &Exchange<'_>) -> bool {
    cx.resolved.descriptions().is_some() || cx.resolved.call().is_some_and(|c| matches!(c.target, Target::Describe))
}

/// The query and the limit of a call, or why they are refused.
fn parse_arguments(arguments: Option<&Value>) -> Result<(String, usize), String> {
    let query = arguments.and_then(|a| a.get("query")).and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if query.is_empty() {
        return Err("`query` must be a non-empty string: say what you need to do".into());
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(format!("`query` is over {MAX_QUERY_CHARS} characters; say it shorter"));
    }
    let limit = match arguments.and_then(|a| a.get("limit")) {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => return Err(format!("`limit` must be an integer from 1 to {MAX_LIMIT}")),
        },
    };
    Ok((query.to_owned(), usize::try_from(limit).unwrap_or(10)))
}

/// A refused search, as a tool error the model can read.
fn tool_error(why: &str) -> Outcome {
    Outcome::Result(json!({"content": [{"type": "text", "text": why}], "isError": true}))
}

/// The search tool's definition: short (it is listed in every search
/// listing), what to pass and what comes back.
pub fn search_tool_definition(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Find tools for a task in the full catalog (only a few are listed). Returns names and short descriptions; fetch a tool's description before calling it.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The task, in your words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results (default 10)"}
            },
            "required": ["query"]
        },
        "annotations": {"readOnlyHint": true}
    })
}
