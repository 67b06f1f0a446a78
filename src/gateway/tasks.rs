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
//! Without a session (2026-07-28 requests) there is nowhere to remember a
//! task: its `tasks/*` requests reach the upstream only when there is one.

use std::collections::VecDeque;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use super::layer::Forwarding;
use super::lists::{Crawled, ListKind, crawl_all};
use super::upstreams::UpstreamHandle;
use crate::jsonrpc::{ErrorObject, Outcome};

/// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list`.
pub const GET: &str = "tasks/get";
pub const RESULT: &str = "tasks/result";
pub const CANCEL: &str = "tasks/cancel";
pub const LIST: &str = "tasks/list";

/// Most tasks a session remembers (the oldest are forgotten first).
const REMEMBERED: usize = 1024;

/// The tasks one session's upstreams created for it: task id → upstream.
#[derive(Default)]
pub struct SessionTasks(Mutex<VecDeque<(String, usize)>>);

impl SessionTasks {
    /// Remembers that upstream `index` holds task `id`.
    pub fn note(&self, id: &str, index: usize) {
        let mut tasks = self.0.lock();
        if tasks.iter().any(|(t, _)| t == id) {
            return;
        }
        if tasks.len() == REMEMBERED {
            tasks.pop_front();
        }
        tasks.push_back((id.to_owned(), index));
    }

    /// The upstream that holds task `id`.
    pub fn owner(&self, id: &str) -> Option<usize> {
        self.0.lock().iter().find(|(t, _)| t == id).map(|(_, i)| *i)
    }
}

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

/// Serves a task method for `cx`'s session: to the task's upstream, or the
/// merged `tasks/list`.
pub async fn serve(cx: Forwarding<'_>, method: &str, params: Option<Value>) -> Outcome {
    let forwarder = cx.gateway.forwarder();
    if method == LIST {
        return list(cx, params).await;
    }
    let id = params.as_ref().and_then(|p| p.get("taskId")).and_then(Value::as_str);
    let Some(id) = id else {
        return Outcome::error(ErrorObject::invalid_params(format!("{method} needs a string \"taskId\"")));
    };
    let owner = cx.session.state.tasks.owner(id).or_else(|| {
        // Not one toolgate saw created (a sessionless client's): the one
        // upstream with tasks, if there is exactly one.
        let mut with_tasks = owners(cx);
        match (with_tasks.next(), with_tasks.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    });
    match owner {
        Some(index) => forwarder.forward(cx, index, method, params).await,
        None => {
            Outcome::error(ErrorObject::invalid_params(format!("Unknown task: {id}")).with_data(json!({"taskId": id})))
        }
    }
}

/// The upstreams `cx`'s client may use that declare tasks.
fn owners<'a>(cx: Forwarding<'a>) -> impl Iterator<Item = usize> + 'a {
    let upstreams = cx.gateway.upstreams();
    let indices: Vec<usize> = upstreams
        .iter()
        .filter(|u| !u.is_retired() && cx.session.state.uses(u.index) && u.has("tasks"))
        .map(|u| u.index)
        .collect();
    indices.into_iter()
}

/// `tasks/list`: every task the session's upstreams list (each page
/// followed), served as one page.
async fn list(cx: Forwarding<'_>, params: Option<Value>) -> Outcome {
    if params.as_ref().and_then(|p| p.get("cursor")).is_some_and(|c| !c.is_null()) {
        return Outcome::error(ErrorObject::invalid_params("tasks/list is served as one page: no cursor"));
    }
    let upstreams = cx.gateway.upstreams();
    let pages: Vec<Crawled> = crawl_all(&upstreams, cx.session, ListKind::Tasks).await;
    let mut tasks = Vec::new();
    for Crawled { upstream, items } in pages {
        for task in items {
            if let Some(id) = task.get("taskId").and_then(Value::as_str) {
                cx.session.state.tasks.note(id, upstream);
            }
            tasks.push(task);
        }
    }
    Outcome::Result(json!({"tasks": tasks}))
}
