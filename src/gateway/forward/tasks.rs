//! Task-augmented requests (MCP 2025-11-25 `tasks`), carried end to end.
//!
//! Both directions:
//! - **Upstream tasks.** A client's `tools/call` with `params.task` goes to
//!   the tool's upstream like any call; its answer (`CreateTaskResult`)
//!   names a task, which toolgate remembers for the session (task id →
//!   upstream). `tasks/get`, `tasks/result` and `tasks/cancel` go to the
//!   upstream that owns the task; `tasks/list` merges the session's
//!   upstreams' lists. toolgate declares the `tasks` capability its
//!   upstreams declare (only requests it can route: `tools/call`).
//! - **Client tasks.** An upstream's task-augmented `sampling/createMessage`
//!   or `elicitation/create`, and its `tasks/*` requests about the client's
//!   tasks, are server-to-client requests like any other: relayed to the
//!   client, whose `tasks` capability each session's upstream session
//!   declares (the control connection declares it too, so tools that need
//!   it are listed).
//!
//! A task is its creator's alone: a session's tasks are remembered in the
//! session (`state/tasks.rs`, and its shared record), a sessionless (2026-07-28) client's in
//! the gateway's grant store under its client's scope. `tasks/get`,
//! `tasks/result` and `tasks/cancel` of any other id, another client's
//! included, get the same "Unknown task" as a made-up one, and `tasks/list`
//! lists only the client's own: on a `shared` upstream every client's
//! tasks live in one upstream session, which cannot tell them apart.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::Forwarding;
use crate::gateway::lists::{Crawled, ListKind, crawl_all};
use crate::gateway::upstreams::UpstreamHandle;
use crate::grants::Unavailable;
use crate::jsonrpc::{ErrorObject, Outcome};

use crate::protocol::method::{TASKS_CANCEL as CANCEL, TASKS_GET as GET, TASKS_LIST as LIST, TASKS_RESULT as RESULT};

/// Whether `method` is one of the task methods toolgate routes.
pub fn routes(method: &str) -> bool {
    matches!(method, GET | RESULT | CANCEL | LIST)
}

/// The task a result created (`CreateTaskResult`: `{"task": {"taskId"}}`).
pub fn created(result: &Value) -> Option<&str> {
    result.get("task")?.get("taskId")?.as_str()
}

/// The `tasks` capability toolgate declares: what the upstreams a client may
/// use declare, limited to what it routes (`list`, `cancel`, and
/// `requests.tools.call`); `None` when none declares tasks.
pub fn capability<'a>(upstreams: impl Iterator<Item = &'a UpstreamHandle>) -> Option<Value> {
    let mut declared = Map::new();
    let mut any = false;
    for up in upstreams {
        let Some(tasks) = up.hello().and_then(|h| h.capabilities.get("tasks").cloned()).filter(Value::is_object) else {
            continue;
        };
        any = true;
        for key in ["list", "cancel"] {
            if tasks.get(key).is_some() {
                declared.insert(key.into(), json!({}));
            }
        }
        if tasks.pointer("/requests/tools/call").is_some() {
            declared.insert("requests".into(), json!({"tools": {"call": {}}}));
        }
    }
    any.then_some(Value::Object(declared))
}

/// Serves a task method for `cx`'s client: a task it created goes to the
/// upstream holding it; any other id (another client's, or made up) is
/// unknown, with the same answer; `tasks/list` lists its own tasks only.
pub async fn serve(cx: Forwarding<'_>, method: &str, params: Option<Value>) -> Outcome {
    if method == LIST {
        return list(cx, params).await;
    }
    let id = params.as_ref().and_then(|p| p.get("taskId")).and_then(Value::as_str);
    let Some(id) = id else {
        return Outcome::error(ErrorObject::invalid_params(format!("{method} needs a string \"taskId\"")));
    };
    let owner = match owners(cx, &[id]).await {
        Ok(mut owners) => owners.pop().flatten(),
        Err(e) => return Outcome::error(e.to_error()),
    };
    match owner.and_then(|name| index_of(cx, &name)) {
        Some(index) => cx.forwarder.forward(cx, index, method, params).await,
        None => {
            Outcome::error(ErrorObject::invalid_params(format!("Unknown task: {id}")).with_data(json!({"taskId": id})))
        }
    }
}

/// Remembers that upstream `index` created task `id` for `cx`'s client:
/// in its session, or (sessionless) in the gateway's store under its
/// client's scope.
pub async fn note(cx: Forwarding<'_>, id: &str, index: usize) {
    let Some(up) = cx.forwarder.upstreams().get(index).cloned() else { return };
    match cx.session.state.grants.scope() {
        Some((store, scope)) => {
            if let Err(e) = store.note_task(scope, id, &up.config.name).await {
                tracing::warn!(error = %e, "a task could not be recorded; its client cannot poll it");
            }
        }
        None => cx.session.state.note_task(id, &Arc::from(up.config.name.as_str())),
    }
}

/// For each of `ids`, the upstream where `cx`'s client created that task,
/// if it did: its session's own, or its scope's in the gateway's store.
async fn owners(cx: Forwarding<'_>, ids: &[&str]) -> Result<Vec<Option<Arc<str>>>, Unavailable> {
    match cx.session.state.grants.scope() {
        Some((store, scope)) => store.task_upstreams(scope, ids).await,
        None => cx.session.state.task_owners(ids).await,
    }
}

/// The live slot of the upstream named `name`, if the client may use it.
fn index_of(cx: Forwarding<'_>, name: &str) -> Option<usize> {
    cx.forwarder
        .upstreams()
        .iter()
        .find(|u| !u.is_retired() && *u.config.name == *name)
        .map(|u| u.index)
        .filter(|&i| cx.session.state.uses(i))
}

/// `tasks/list`: the tasks the client's upstreams list (each page
/// followed) that this client created, served as one page.
async fn list(cx: Forwarding<'_>, params: Option<Value>) -> Outcome {
    if params.as_ref().and_then(|p| p.get("cursor")).is_some_and(|c| !c.is_null()) {
        return Outcome::error(ErrorObject::invalid_params("tasks/list is served as one page: no cursor"));
    }
    let upstreams = cx.forwarder.upstreams();
    let pages: Vec<Crawled> = crawl_all(&upstreams, cx.session, ListKind::Tasks).await;
    let listed: Vec<(usize, Value)> = pages
        .into_iter()
        .flat_map(|Crawled { upstream, items }| items.into_iter().map(move |t| (upstream, t)))
        .collect();
    let ids: Vec<&str> =
        listed.iter().map(|(_, task)| task.get("taskId").and_then(Value::as_str).unwrap_or_default()).collect();
    let owners = match owners(cx, &ids).await {
        Ok(owners) => owners,
        Err(e) => return Outcome::error(e.to_error()),
    };
    let tasks: Vec<Value> = listed
        .into_iter()
        .zip(owners)
        .filter(|((upstream, _), owner)| {
            owner.as_deref().is_some_and(|name| upstreams.get(*upstream).is_some_and(|u| *u.config.name == *name))
        })
        .map(|((_, task), _)| task)
        .collect();
    Outcome::Result(json!({"tasks": tasks}))
}
