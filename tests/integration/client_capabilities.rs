//! Every tool a capable client may use, and tasks in both directions, in
//! front of `@modelcontextprotocol/server-everything` (which registers some
//! tools only for clients that declare URL elicitation or tasks):
//! - the catalog crawl declares everything toolgate carries end to end, so a
//!   client that declares every capability sees all 19 tools;
//! - a client-side task: the upstream's task-augmented sampling request and
//!   its `tasks/get` and `tasks/result` polls reach the client and back;
//! - an upstream-side task: `tools/call` with `task` creates it upstream, and
//!   `tasks/get`, `tasks/result` and `tasks/list` reach the upstream that
//!   holds it, with a second upstream configured.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};

use crate::common::*;
use crate::interop_matrix::peers::everything_js;

/// Every capability a client can declare.
fn every_capability() -> Value {
    json!({
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": true},
        "tasks": {"list": {}, "cancel": {},
                  "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
    })
}

fn everything(extra: &str) -> String {
    format!(
        "[[upstream]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         mode = \"passthrough\"\nforward_roots = true\n{extra}\n",
        everything_js()
    )
}

#[tokio::test]
async fn a_client_that_declares_everything_sees_all_19_tools_and_its_own_tasks_work() -> Result<()> {
    let gw = Toolgate::start(&everything("")).await?;
    let c = Client::connected(&gw.url, every_capability()).await?;
    let tools = c.result("tools/list", json!({})).await?;
    let names: Vec<&str> = tools["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    for needed in ["trigger-url-elicitation", "trigger-sampling-request-async", "trigger-elicitation-request-async"] {
        assert!(names.contains(&needed), "{needed} is missing: {names:?}");
    }
    assert_eq!(names.len(), 19, "{names:?}");

    // The upstream runs sampling as a task of the client's, and polls it.
    let mut stream = c
        .open(&json!({"jsonrpc": "2.0", "id": "async-1", "method": "tools/call",
                      "params": {"name": "trigger-sampling-request-async", "arguments": {"prompt": "hi", "maxTokens": 5}}}))
        .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut polled = 0;
    loop {
        let message = tokio::time::timeout_at(deadline, stream.next()).await.map_err(|_| anyhow!("no answer"))??;
        match message["method"].as_str() {
            Some("sampling/createMessage") => {
                assert!(message["params"]["task"].is_object(), "task-augmented: {message}");
                c.respond(
                    &message["id"],
                    json!({"task": {"taskId": "client-task-1", "status": "working",
                    "createdAt": "2026-11-27T00:00:00Z", "lastUpdatedAt": "2026-11-27T00:00:00Z", "ttl": 60000}}),
                )
                .await?;
            }
            Some("tasks/get") => {
                assert_eq!(message["params"]["taskId"], "client-task-1", "{message}");
                polled += 1;
                c.respond(
                    &message["id"],
                    json!({"taskId": "client-task-1", "status": "completed",
                    "createdAt": "2026-11-27T00:00:00Z", "lastUpdatedAt": "2026-11-27T00:00:01Z", "ttl": 60000}),
                )
                .await?;
            }
            Some("tasks/result") => {
                c.respond(
                    &message["id"],
                    json!({"role": "assistant", "model": "test-model", "stopReason": "endTurn",
                    "content": {"type": "text", "text": "sampled as a task"}}),
                )
                .await?;
            }
            Some(_) => {}
            None if message["id"] == "async-1" => {
                let text = text_of(&message["result"]);
                assert!(text.contains("[COMPLETED]") && text.contains("sampled as a task"), "{message}");
                break;
            }
            None => bail!("unexpected {message}"),
        }
    }
    assert!(polled >= 1);
    Ok(())
}

#[tokio::test]
async fn an_upstream_task_is_created_polled_and_read_through_toolgate() -> Result<()> {
    let upstreams = format!("{}{}", everything(""), fixture_upstream("fx", &[], "mode = \"passthrough\""));
    let gw = Toolgate::start(&upstreams).await?;
    let mut c = Client::new(&gw.url);
    let init = c.initialize(every_capability()).await?;
    assert!(init["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(), "{init}");
    let created = c
        .result(
            "tools/call",
            json!({"name": "everything__simulate-research-query",
            "arguments": {"topic": "gateways"}, "task": {"ttl": 60000}}),
        )
        .await?;
    let id = created["task"]["taskId"].as_str().ok_or_else(|| anyhow!("no task: {created}"))?.to_owned();
    c.task_completed(&id, Duration::from_secs(60)).await?;
    let listed = c.result("tasks/list", json!({})).await?;
    assert!(listed["tasks"].as_array().is_some_and(|t| t.iter().any(|t| t["taskId"] == id)), "{listed}");
    let result = c.result("tasks/result", json!({"taskId": id})).await?;
    assert!(text_of(&result).contains("gateways"), "{result}");
    let unknown = c.request("tasks/get", json!({"taskId": "no-such-task"})).await?;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    Ok(())
}
