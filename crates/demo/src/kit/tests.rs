//! The kit served by the engine's stdio transport, driven through real
//! newline-delimited JSON-RPC on a pipe.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_mcp::jsonrpc::ErrorObject;
use toolgate_test_support::{PipeClient, first_text};

use super::*;

const SHORT: Duration = Duration::from_millis(250);

/// Set when a handler's future is dropped (aborted or finished).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn def(name: &str) -> Value {
    json!({"name": name, "description": format!("test tool {name}"), "inputSchema": {"type": "object"}})
}

fn registry(dropped: Arc<AtomicBool>) -> Registry {
    let mut info = ServerInfo::new("test-server", "1.2.3");
    info.instructions = Some("be nice".into());
    info.logger = Some("tests".into());
    Registry::new(info)
        .with_tool(Tool::sync(def("quick"), |args| Ok(result::text(Args::new(&args).str("x")?.unwrap_or("none")))))
        .with_tool(Tool::new(def("slow"), |args, _ctx| async move {
            let ms = Args::new(&args).int("ms")?.unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
            Ok(result::text(format!("slept {ms}")))
        }))
        .with_tool(Tool::new(def("ask"), |args, ctx| async move {
            let a = Args::new(&args);
            let method = a.required_str("method")?.to_owned();
            match ctx.request(&method, a.get("params").cloned()).await {
                Ok(v) => Ok(result::text(v.to_string())),
                Err(e) => Err(ToolFailure::msg(e.message())),
            }
        }))
        .with_tool(Tool::new(def("hang"), move |_args, ctx| {
            let flag = DropFlag(dropped.clone());
            async move {
                let _flag = flag;
                // Parks on a client request nobody answers, or forever.
                let _ = ctx.request("roots/list", None).await;
                std::future::pending::<()>().await;
                Ok(result::text("unreachable"))
            }
        }))
        .with_tool(Tool::new(def("logs"), |_args, ctx| async move {
            ctx.log(LogLevel::Debug, "debug msg");
            ctx.log(LogLevel::Info, "info msg");
            ctx.log(LogLevel::Error, json!({"detail": "error msg"}));
            Ok(result::text("logged"))
        }))
        .with_tool(Tool::new(def("progress"), |_args, ctx| async move {
            ctx.progress(1.0, Some(2.0), Some("half"));
            ctx.progress(2.0, Some(2.0), None);
            Ok(result::text("done"))
        }))
        .with_tool(Tool::new(def("boom"), |_args, _ctx| async move {
            if true {
                panic!("handler bug");
            }
            Ok(result::text("unreachable"))
        }))
        .with_tool(Tool::sync(def("fails"), |_| Err(ToolFailure::msg("bad input, try again"))))
        .with_tool(Tool::sync(def("rpc_fails"), |_| Err(ErrorObject::new(-32099, "custom").into())))
        .with_resource(Resource::fixed(
            json!({"uri": "mem://a", "name": "a"}),
            vec![json!({"uri": "mem://a", "mimeType": "text/plain", "text": "A"})],
        ))
        .with_template(
            ResourceTemplate::new(json!({"uriTemplate": "mem://items/{id}", "name": "item"}), |uri, vars| {
                Ok(vec![json!({"uri": uri, "text": format!("item {}", vars["id"])})])
            })
            .unwrap(),
        )
        .with_prompt(Prompt::new(
            json!({"name": "greet", "arguments": [{"name": "who", "required": true}, {"name": "tone"}]}),
            |args| Ok(json!({"messages": [{"role": "user", "content": {"type": "text", "text": format!("hi {}", args["who"])}}]})),
        ))
        .with_completion(|params| Ok(json!({"values": [params["argument"]["value"]], "hasMore": false})))
}

const IDLE: Duration = Duration::from_secs(60);

async fn client() -> PipeClient {
    PipeClient::initialized(engine(Arc::new(registry(Arc::default())), IDLE), json!({"sampling": {}})).await
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {response}"))
}

#[tokio::test]
async fn initialize_negotiates_the_version_and_declares_capabilities() {
    let engine = engine(Arc::new(registry(Arc::default())), IDLE);
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let mut c = PipeClient::start(engine.clone());
        let r = c.result("initialize", json!({"protocolVersion": asked, "capabilities": {}})).await;
        assert_eq!(r["protocolVersion"], answered);
        assert_eq!(r["serverInfo"], json!({"name": "test-server", "version": "1.2.3"}));
        assert_eq!(r["instructions"], "be nice");
        assert_eq!(
            r["capabilities"],
            json!({
                "tools": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
                "prompts": {"listChanged": true},
                "logging": {},
                "completions": {},
            })
        );
    }
}

#[tokio::test]
async fn unknown_methods_and_notifications() {
    let mut c = client().await;
    let r = c.request("vendor/thing", json!({})).await;
    assert_eq!(error_code(&r), -32601);
    assert!(r["error"]["message"].as_str().unwrap().contains("vendor/thing"));
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})).await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "never-sent"}})).await;
    assert_eq!(c.result("ping", json!(null)).await, json!({}));
    assert!(c.recv_within(SHORT).await.is_none(), "notifications are never answered");
}

#[tokio::test]
async fn tool_call_errors_are_split_between_protocol_and_tool_level() {
    let mut c = client().await;
    assert_eq!(error_code(&c.request("tools/call", json!({"name": "nope"})).await), -32602);
    assert_eq!(error_code(&c.request("tools/call", json!({})).await), -32602);
    assert_eq!(error_code(&c.request("tools/call", json!({"name": "quick", "arguments": [1]})).await), -32602);

    let r = c.call("fails", json!({})).await;
    assert_eq!(r, json!({"content": [{"type": "text", "text": "bad input, try again"}], "isError": true}));
    let r = c.call("quick", json!({"x": 5})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(first_text(&r), "Argument 'x' must be a string (got 5).");

    let r = c.request("tools/call", json!({"name": "rpc_fails"})).await;
    assert_eq!(r["error"], json!({"code": -32099, "message": "custom"}));
    let r = c.request("tools/call", json!({"name": "boom"})).await;
    assert_eq!(error_code(&r), -32603);
    assert_eq!(first_text(&c.call("quick", json!({"x": "still alive"})).await), "still alive");
}

#[tokio::test]
async fn handlers_run_concurrently() {
    let mut c = client().await;
    let slow = c.send_request("tools/call", json!({"name": "slow", "arguments": {"ms": 400}})).await;
    let fast = c.send_request("tools/call", json!({"name": "slow", "arguments": {"ms": 0}})).await;
    let quick = c.send_request("tools/call", json!({"name": "quick", "arguments": {"x": "q"}})).await;
    let order: Vec<Value> =
        vec![c.recv().await["id"].clone(), c.recv().await["id"].clone(), c.recv().await["id"].clone()];
    assert_eq!(order.last(), Some(&json!(slow)), "{order:?}");
    assert!(order.contains(&json!(fast)) && order.contains(&json!(quick)));
}

#[tokio::test]
async fn server_requests_are_matched_to_client_answers_by_id() {
    let mut c = client().await;
    let a = c
        .send_request(
            "tools/call",
            json!({"name": "ask", "arguments": {"method": "sampling/createMessage", "params": {"n": "a"}}}),
        )
        .await;
    let b = c
        .send_request(
            "tools/call",
            json!({"name": "ask", "arguments": {"method": "sampling/createMessage", "params": {"n": "b"}}}),
        )
        .await;
    let first = c.recv().await;
    let second = c.recv().await;
    for req in [&first, &second] {
        assert_eq!(req["method"], "sampling/createMessage");
        assert!(req["id"].is_u64(), "the server allocates integer ids: {req}");
    }
    assert_ne!(first["id"], second["id"]);
    // Answer in reverse order; each tool must get its own answer.
    for req in [&second, &first] {
        let n = req["params"]["n"].clone();
        c.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"echo": n}})).await;
    }
    assert_eq!(first_text(&c.response(&json!(a)).await["result"]), r#"{"echo":"a"}"#);
    assert_eq!(first_text(&c.response(&json!(b)).await["result"]), r#"{"echo":"b"}"#);

    // An error answer reaches the handler too; an answer to nothing is ignored.
    let d = c.send_request("tools/call", json!({"name": "ask", "arguments": {"method": "elicitation/create"}})).await;
    let req = c.recv().await;
    c.send(json!({"jsonrpc": "2.0", "id": 987654, "result": {}})).await;
    c.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "no elicitation here"}}))
        .await;
    let r = c.response(&json!(d)).await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(first_text(&r["result"]), "no elicitation here");
}

#[tokio::test]
async fn cancellation_aborts_the_handler_and_suppresses_the_response() {
    let dropped = Arc::new(AtomicBool::new(false));
    let mut c = PipeClient::initialized(engine(Arc::new(registry(dropped.clone())), IDLE), json!({})).await;
    let id = c.send_request("tools/call", json!({"name": "hang"})).await;
    let server_req = c.recv().await;
    assert_eq!(server_req["method"], "roots/list");
    assert!(!dropped.load(Ordering::SeqCst));

    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user"}}),
    )
    .await;
    // The server withdraws its own request to the client...
    let cancelled = c.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], server_req["id"]);
    assert!(dropped.load(Ordering::SeqCst), "the handler future must be dropped");
    // ...and never answers the cancelled call.
    assert_eq!(c.result("ping", json!({})).await, json!({}));
    assert!(c.recv_within(SHORT).await.is_none());
    // A late answer to the withdrawn request is harmless.
    c.send(json!({"jsonrpc": "2.0", "id": server_req["id"], "result": {"roots": []}})).await;
    assert_eq!(c.result("ping", json!({})).await, json!({}));
}

#[tokio::test]
async fn cancellation_of_a_sleeping_call_frees_the_session() {
    let mut c = client().await;
    let id = c.send_request("tools/call", json!({"name": "slow", "arguments": {"ms": 60_000}})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await;
    assert_eq!(c.result("ping", json!({})).await, json!({}));
    assert!(c.recv_within(SHORT).await.is_none());
}

#[tokio::test]
async fn a_reused_in_flight_id_is_refused() {
    let mut c = client().await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 300}}});
    c.send(call.clone()).await;
    c.send(call).await;
    let first = c.recv().await;
    assert_eq!((first["id"].clone(), error_code(&first)), (json!(5), -32600));
    assert_eq!(first_text(&c.recv().await["result"]), "slept 300");
}

#[tokio::test]
async fn pagination_follows_cursors_and_rejects_bad_ones() {
    let reg = Arc::new(registry(Arc::default()).with_page_size(Some(3)));
    let mut c = PipeClient::initialized(engine(reg.clone(), IDLE), json!({})).await;
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let page = c.result("tools/list", params).await;
        pages += 1;
        let tools = page["tools"].as_array().unwrap();
        assert!(tools.len() <= 3);
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match page.get("nextCursor") {
            Some(next) => cursor = next.clone(),
            None => break,
        }
    }
    assert_eq!(names, reg.tool_names());
    assert_eq!(pages, names.len().div_ceil(3));
    for bad in [json!("garbage"), json!(12), json!("offset:-1")] {
        assert_eq!(error_code(&c.request("tools/list", json!({"cursor": bad})).await), -32602, "{bad}");
    }
    // A stale cursor past the end is an empty last page, not an error.
    let r = c.result("tools/list", json!({"cursor": "offset:999"})).await;
    assert_eq!(r, json!({"tools": []}));
}

#[tokio::test]
async fn logging_honours_set_level() {
    let mut c = client().await;
    let logs_at = |c: &mut PipeClient| c.take_notifications("notifications/message");
    c.call("logs", json!({})).await;
    let all = logs_at(&mut c);
    assert_eq!(all.len(), 3, "no level set: everything passes");
    assert_eq!(all[0]["params"], json!({"level": "debug", "logger": "tests", "data": "debug msg"}));

    assert_eq!(c.result("logging/setLevel", json!({"level": "warning"})).await, json!({}));
    c.call("logs", json!({})).await;
    let some = logs_at(&mut c);
    assert_eq!(some.len(), 1);
    assert_eq!(some[0]["params"]["data"], json!({"detail": "error msg"}));

    assert_eq!(error_code(&c.request("logging/setLevel", json!({"level": "banana"})).await), -32602);
    assert_eq!(error_code(&c.request("logging/setLevel", json!({})).await), -32602);
}

#[tokio::test]
async fn progress_uses_the_request_token_and_only_when_given() {
    let mut c = client().await;
    let r = c.result("tools/call", json!({"name": "progress", "_meta": {"progressToken": "tok-1"}})).await;
    assert_eq!(first_text(&r), "done");
    let p = c.take_notifications("notifications/progress");
    assert_eq!(
        p.iter().map(|n| n["params"].clone()).collect::<Vec<_>>(),
        [
            json!({"progressToken": "tok-1", "progress": 1, "total": 2, "message": "half"}),
            json!({"progressToken": "tok-1", "progress": 2, "total": 2}),
        ]
    );
    c.call("progress", json!({})).await;
    assert!(c.take_notifications("notifications/progress").is_empty());
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    let mut c = client().await;
    let list = c.result("resources/list", json!({})).await;
    assert_eq!(list, json!({"resources": [{"uri": "mem://a", "name": "a"}]}));
    let t = c.result("resources/templates/list", json!({})).await;
    assert_eq!(t["resourceTemplates"][0]["uriTemplate"], "mem://items/{id}");
    let r = c.result("resources/read", json!({"uri": "mem://items/42"})).await;
    assert_eq!(r, json!({"contents": [{"uri": "mem://items/42", "text": "item 42"}]}));
    let r = c.request("resources/read", json!({"uri": "mem://missing"})).await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"], json!({"uri": "mem://missing"}));
    assert_eq!(c.result("resources/subscribe", json!({"uri": "mem://a"})).await, json!({}));
    assert_eq!(c.result("resources/unsubscribe", json!({"uri": "mem://a"})).await, json!({}));

    let p = c.result("prompts/get", json!({"name": "greet", "arguments": {"who": "ana"}})).await;
    assert_eq!(p["messages"][0]["content"]["text"], "hi \"ana\"");
    let r = c.request("prompts/get", json!({"name": "greet", "arguments": {"tone": "x"}})).await;
    assert_eq!(error_code(&r), -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("'who'"));
    assert_eq!(error_code(&c.request("prompts/get", json!({"name": "nope"})).await), -32602);

    let r = c
        .result(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "an"}}),
        )
        .await;
    assert_eq!(r, json!({"completion": {"values": ["an"], "hasMore": false}}));
}

#[tokio::test]
async fn eof_ends_the_server_after_running_calls_finish() {
    let mut c = client().await;
    let id = c.send_request("tools/call", json!({"name": "slow", "arguments": {"ms": 100}})).await;
    c.close().await;
    let r = c.recv().await;
    assert_eq!(r["id"], json!(id), "a call running at EOF still gets its answer");
    let served = tokio::time::timeout(Duration::from_secs(5), &mut c.server).await.expect("server must stop");
    served.unwrap().unwrap();
}

/// A 2026-07-28 request's `_meta` envelope.
fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

#[tokio::test]
async fn a_listen_stream_hears_unrelated_changes_and_ends_gracefully_at_shutdown() {
    let registry = Registry::new(ServerInfo::new("listen-test", "1")).with_tool(Tool::new(
        def("announce"),
        |_args, ctx| async move {
            ctx.notify_unrelated("notifications/tools/list_changed", None);
            ctx.notify_unrelated("notifications/prompts/list_changed", None);
            Ok(result::text("announced"))
        },
    ));
    let engine = engine(Arc::new(registry), Duration::from_secs(60));
    let mut c = PipeClient::start(engine.clone());
    c.send(json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
                  "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true, "promptsListChanged": true}}}))
        .await;
    let ack = c.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    // The registry has no prompts: only tool changes are honoured.
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L");

    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"_meta": modern_meta(), "name": "announce", "arguments": {}}}))
        .await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(c.recv().await);
    }
    let change = seen.iter().find(|m| m["method"] == "notifications/tools/list_changed").expect("the change");
    assert_eq!(change["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L");
    assert!(seen.iter().any(|m| m["id"] == 2), "the call's answer: {seen:?}");
    assert!(c.recv_within(SHORT).await.is_none(), "no prompt change: not honoured");

    // Shutdown ends the stream: notifications/cancelled, then the result.
    engine.begin_shutdown();
    let cancelled = c.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled", "{cancelled}");
    assert_eq!(cancelled["params"]["requestId"], "L");
    let end = c.response(&json!("L")).await;
    assert_eq!(
        end["result"],
        json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "L"}})
    );
}
