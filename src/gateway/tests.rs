//! The gateway's routing, its gate and the id/progress/cancellation mapping,
//! in process: a real MCP server engine as the upstream (over the in-memory
//! transport) and the gateway's own engine as the client's side.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::*;
use crate::config::load_str_jailed;
use crate::jsonrpc::{Body, Id, Response};
use crate::server::Session;
use crate::server::{Accepted, Downlink, Engine, Frame, SessionRef};
use crate::upstream::MemoryTarget;

mod sessionless;

// === the upstream ===

/// What the upstream received.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: String,
    id: Option<String>,
    params: Value,
}

/// A scripted MCP server: `echo` answers its text, `slow` reports progress
/// and waits to be cancelled (or `ms`), `ask` asks the client to sample.
#[derive(Default)]
struct Upstream {
    seen: Mutex<Vec<Seen>>,
}

const ECHO_DESCRIPTION: &str = "Echoes the given text back. It takes one argument, `text`, and returns it \
    unchanged as a text content block. Useful to check that calls get through: the upstream sees exactly what \
    the client sent, and nothing is added on the way.";

impl Upstream {
    fn seen(&self, method: &str) -> Vec<Seen> {
        self.seen.lock().iter().filter(|s| s.method == method).cloned().collect()
    }

    fn tools() -> Value {
        json!({"tools": [
            {"name": "echo", "description": ECHO_DESCRIPTION,
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            {"name": "slow", "description": "Takes its time.", "inputSchema": {"type": "object"}},
            {"name": "ask", "description": "Asks the client's model.", "inputSchema": {"type": "object"}},
        ]})
    }
}

impl Handler for Upstream {
    type State = ();

    async fn initialize(self: &Arc<Self>, _: &InitContext) -> Result<(ServerOffer, ()), ErrorObject> {
        let offer = ServerOffer {
            capabilities: json!({"tools": {"listChanged": true}, "resources": {}}),
            server_info: json!({"name": "memory", "version": "1"}),
            instructions: Some("Upstream instructions.".into()),
        };
        Ok((offer, ()))
    }

    async fn request(self: &Arc<Self>, session: &Arc<Session<()>>, request: Request, ctx: RequestCtx) -> Outcome {
        let params = request.params.clone().unwrap_or(Value::Null);
        self.seen.lock().push(Seen {
            method: request.method.clone(),
            id: Some(request.id.to_string()),
            params: params.clone(),
        });
        match (request.method.as_str(), params["name"].as_str()) {
            ("tools/list", _) => Outcome::Result(Self::tools()),
            ("tools/call", Some("echo")) => {
                Outcome::Result(json!({"content": [{"type": "text", "text": params["arguments"]["text"]}]}))
            }
            ("tools/call", Some("slow")) => {
                let token = params["_meta"]["progressToken"].clone();
                for step in [1, 2] {
                    let note = json!({"progressToken": token, "progress": step, "total": 2});
                    ctx.downlink.send(Notification::new("notifications/progress", Some(note)));
                }
                let ms = params["arguments"]["ms"].as_u64().unwrap_or(60_000);
                tokio::select! {
                    _ = ctx.cancel.cancelled() => {
                        // The engine takes `notifications/cancelled`; the handler sees its token fire.
                        let id = Some(request.id.to_string());
                        self.seen.lock().push(Seen { method: "cancelled".into(), id, params: Value::Null });
                        Outcome::Result(json!({"content": []}))
                    }
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                        Outcome::Result(json!({"content": [{"type": "text", "text": "done"}]}))
                    }
                }
            }
            ("tools/call", Some("ask")) => {
                let asked = session
                    .request_client(
                        "sampling/createMessage",
                        Some(json!({"maxTokens": 5})),
                        Some(&ctx.downlink),
                        &ctx.cancel,
                    )
                    .await;
                let answer = asked.ok().and_then(|o| o.result_value()).unwrap_or(Value::Null);
                Outcome::Result(json!({"content": [{"type": "text", "text": answer.to_string()}]}))
            }
            ("resources/list", _) => Outcome::Result(json!({"resources": [{"uri": "mem://a", "name": "a"}]})),
            (other, _) => Outcome::error(ErrorObject::method_not_found(other)),
        }
    }

    async fn notification(self: &Arc<Self>, _: &Arc<Session<()>>, n: Notification) {
        self.seen.lock().push(Seen { method: n.method, id: None, params: n.params.unwrap_or(Value::Null) });
    }

    async fn closed(self: &Arc<Self>, _: Arc<Session<()>>) {}
}

// === the gateway, and a client of it ===

struct Setup {
    upstream: Arc<Upstream>,
    gateway: Arc<Gateway>,
    engine: Arc<Engine<Gateway>>,
}

fn setup(extra: &str) -> Setup {
    let upstream = Arc::new(Upstream::default());
    let (store, ended) = SessionStore::new(Duration::from_secs(60));
    let upstream_engine = Engine::start(upstream.clone(), Arc::new(store), ended);
    let config = load_str_jailed(&format!("[[upstream]]\nname = \"mem\"\ncommand = \"in-process\"\n{extra}\n"))
        .expect("the test configuration loads");
    let target = Target::Memory(MemoryTarget::serve(upstream_engine));
    let (store, ended) = SessionStore::new(Duration::from_secs(60));
    let store = Arc::new(store);
    let gateway = Gateway::start_with(config, vec![target], store.clone()).expect("the gateway starts");
    let engine = Engine::start(gateway.clone(), store, ended);
    Setup { upstream, gateway, engine }
}

/// One client session of the gateway.
struct Client {
    engine: Arc<Engine<Gateway>>,
    session: Arc<GwSession>,
}

impl Setup {
    async fn client(&self, capabilities: Value) -> Client {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
        match self.engine.accept_anonymous(SessionRef::Missing, Body::decode(init.to_string().as_bytes())).await {
            Accepted::Initialized { session, .. } => Client { engine: self.engine.clone(), session },
            _ => panic!("initialize failed"),
        }
    }
}

impl Client {
    /// Runs a request; the frames it sent on its way come back too.
    async fn run(&self, id: Value, method: &str, params: Value) -> (Outcome, Vec<Frame>) {
        let (downlink, mut frames) = Downlink::channel();
        let request = Request { id: Id::from_value(&id).expect("an id"), method: method.into(), params: Some(params) };
        let response = self.engine.run(&self.session, request, downlink).await.expect("answered");
        assert_eq!(response.id.as_ref().map(Id::to_value), Some(id), "the client's id comes back as sent");
        let mut sent = Vec::new();
        while let Ok(frame) = frames.try_recv() {
            sent.push(frame);
        }
        (response.outcome, sent)
    }

    async fn result(&self, method: &str, params: Value) -> Value {
        let (outcome, _) = self.run(json!(1), method, params).await;
        outcome.result_value().unwrap_or_else(|| panic!("{method} failed: {outcome:?}"))
    }

    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.result("tools/call", json!({"name": tool, "arguments": arguments})).await
    }

    async fn fetch(&self, tools: &str) -> Value {
        self.result("resources/read", json!({"uri": format!("resource:///tool_descriptions?tools={tools}")})).await
    }

    async fn send(&self, message: Value) {
        self.engine
            .accept_anonymous(SessionRef::Live(self.session.clone()), Body::decode(message.to_string().as_bytes()))
            .await;
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

// === the gate ===

#[tokio::test]
async fn a_progressive_tool_is_listed_minimal_and_refused_until_its_description_is_fetched() {
    let s = setup("");
    let alice = s.client(json!({})).await;
    let listed = alice.result("tools/list", json!({})).await;
    let echo = &listed["tools"][0];
    assert_eq!(echo["inputSchema"], json!({"type": "object"}), "the minimal schema");
    assert!(echo["description"].as_str().unwrap().len() < ECHO_DESCRIPTION.len());
    assert_eq!(listed["tools"].as_array().unwrap().last().unwrap()["name"], "describe_tools");

    let refused = alice.call("echo", json!({"text": "hi"})).await;
    assert_eq!(refused["isError"], true);
    assert!(text(&refused).contains("TOOL_DESCRIPTION_REQUIRED"), "{refused}");
    assert!(s.upstream.seen("tools/call").is_empty(), "a refused call never reaches the upstream");

    let described = alice.fetch("echo").await;
    let body: Value = serde_json::from_str(described["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["echo"]["description"], ECHO_DESCRIPTION, "the full definition");
    assert_eq!(text(&alice.call("echo", json!({"text": "hi"})).await), "hi");
    assert_eq!(s.upstream.seen("tools/call").len(), 1);

    // Grants belong to the session that fetched.
    let bob = s.client(json!({})).await;
    assert!(text(&bob.call("echo", json!({"text": "hi"})).await).contains("TOOL_DESCRIPTION_REQUIRED"));
    // The describe tool authorizes the same way.
    bob.call("describe_tools", json!({"tools": ["echo"]})).await;
    assert_eq!(text(&bob.call("echo", json!({"text": "bob"})).await), "bob");
}

#[tokio::test]
async fn the_descriptions_resource_heads_the_resource_list_only_with_the_layer() {
    let progressive = setup("").client(json!({})).await;
    let listed = progressive.result("resources/list", json!({})).await;
    let uris: Vec<&str> = listed["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, ["resource:///tool_descriptions", "mem://a"]);

    let s = setup("mode = \"passthrough\"");
    let plain = s.client(json!({})).await;
    let listed = plain.result("resources/list", json!({})).await;
    assert_eq!(listed["resources"], json!([{"uri": "mem://a", "name": "a"}]), "the forwarder alone adds nothing");
    let tools = plain.result("tools/list", json!({})).await;
    assert_eq!(tools, Upstream::tools(), "passthrough lists the upstream's own definitions");
    assert_eq!(text(&plain.call("echo", json!({"text": "free"})).await), "free", "no gate");
    let offer = s.gateway.offer(crate::protocol::Version::LATEST);
    assert_eq!(offer.instructions.as_deref(), Some("Upstream instructions."), "no workflow text without the layer");
}

// === ids, progress, cancellation ===

#[tokio::test]
async fn client_ids_and_progress_tokens_are_rewritten_on_the_upstream_leg_and_restored() {
    let s = setup("mode = \"passthrough\"");
    let c = s.client(json!({})).await;
    let params = json!({"name": "slow", "arguments": {"ms": 0}, "_meta": {"progressToken": "client-token"}});
    let (outcome, frames) = c.run(json!("client-id"), "tools/call", params).await;
    assert_eq!(text(&outcome.result_value().unwrap()), "done");

    let seen = &s.upstream.seen("tools/call")[0];
    let upstream_id = seen.id.clone().unwrap();
    assert!(upstream_id.parse::<u64>().is_ok(), "toolgate numbers its own requests: {upstream_id}");
    let upstream_token = &seen.params["_meta"]["progressToken"];
    assert_ne!(upstream_token, "client-token", "the client's token stays on the client's leg");

    let progress: Vec<&Value> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(crate::jsonrpc::Message::Notification(n)) if n.method == "notifications/progress" => {
                n.params.as_ref()
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 2, "{frames:?}");
    assert!(progress.iter().all(|p| p["progressToken"] == "client-token"), "restored: {progress:?}");
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream_under_the_upstream_id() {
    let s = setup("mode = \"passthrough\"");
    let c = Arc::new(s.client(json!({})).await);
    let call = {
        let c = c.clone();
        crate::spawn(async move {
            let (downlink, _frames) = Downlink::channel();
            let params = json!({"name": "slow", "arguments": {}});
            let request = Request { id: Id::number(41), method: "tools/call".into(), params: Some(params) };
            c.engine.run(&c.session, request, downlink).await
        })
    };
    let upstream_id = wait_for(|| s.upstream.seen("tools/call").first().and_then(|c| c.id.clone())).await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}})).await;
    assert!(call.await.unwrap().is_none(), "a cancelled request is not answered");
    let cancelled = wait_for(|| s.upstream.seen("cancelled").first().cloned()).await;
    assert_eq!(cancelled.id, Some(upstream_id), "cancelled under the upstream's own id");
}

#[tokio::test]
async fn a_call_past_the_upstream_timeout_fails_and_is_cancelled_upstream() {
    let s = setup("mode = \"passthrough\"\ntimeout = \"200ms\"");
    let c = s.client(json!({})).await;
    let (outcome, _) = c.run(json!(7), "tools/call", json!({"name": "slow", "arguments": {}})).await;
    assert_eq!(outcome.error_code(), Some(crate::jsonrpc::codes::UPSTREAM_TIMEOUT), "{outcome:?}");
    let called = s.upstream.seen("tools/call")[0].id.clone();
    let cancelled = wait_for(|| s.upstream.seen("cancelled").first().cloned()).await;
    assert_eq!(cancelled.id, called, "the timed-out call is cancelled upstream");
}

#[tokio::test]
async fn a_server_request_reaches_the_client_that_caused_it_and_its_answer_goes_back() {
    let s = setup("mode = \"passthrough\"");
    let c = Arc::new(s.client(json!({"sampling": {}})).await);
    let (downlink, mut frames) = Downlink::channel();
    let call = {
        let c = c.clone();
        crate::spawn(async move {
            let request =
                Request { id: Id::number(3), method: "tools/call".into(), params: Some(json!({"name": "ask"})) };
            c.engine.run(&c.session, request, downlink).await
        })
    };
    let asked = loop {
        match tokio::time::timeout(Duration::from_secs(5), frames.recv()).await.expect("a frame in time") {
            Some(Frame::Message(crate::jsonrpc::Message::Request(r))) => break r,
            Some(_) => continue,
            None => panic!("the stream ended before the request"),
        }
    };
    assert_eq!(asked.method, "sampling/createMessage");
    let answer =
        Response::result(asked.id.clone(), json!({"role": "assistant", "content": {"type": "text", "text": "42"}}));
    c.send(crate::jsonrpc::Message::Response(answer).to_value()).await;
    let response = call.await.unwrap().expect("answered");
    assert!(text(&response.outcome.result_value().unwrap()).contains("42"));
}

async fn wait_for<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    for _ in 0..200 {
        if let Some(v) = probe() {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("nothing came within 2 s")
}

// === the audit trail ===

#[tokio::test]
async fn a_change_of_a_sessions_concerns_is_audited_with_the_values_in_effect() {
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.log");
    let s = setup(&format!(
        "mode = \"passthrough\"\n[[concerns]]\nname = \"security\"\ndescription = \"Security level\"\n\
         values = [\"high\", \"low\"]\n[audit]\nenabled = true\npath = {:?}\n",
        trail.display().to_string()
    ));
    let c = s.client(json!({})).await;
    for sent in [json!({"security": "high"}), json!({"security": "high"}), json!({"security": "low", "colour": "red"})]
    {
        assert_eq!(c.result("concerns/update", json!({"concerns": sent})).await, json!({}));
    }
    // The same values again change nothing; an undeclared concern is dropped.
    let events = wait_for(|| {
        let text = std::fs::read_to_string(&trail).unwrap_or_default();
        let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        events.iter().any(|e| e["concerns"]["security"] == "low").then_some(events)
    })
    .await;
    let concerns: Vec<&Value> = events.iter().filter(|e| e["type"] == "concerns").collect();
    assert_eq!(concerns.len(), 2, "{events:?}");
    assert_eq!(
        (&concerns[0]["concerns"], &concerns[1]["concerns"]),
        (&json!({"security": "high"}), &json!({"security": "low"}))
    );
    let event = concerns[0];
    assert_eq!((event["schema"].as_u64(), event["principal"].as_str()), (Some(1), Some("anonymous")), "{event}");
    assert_eq!(
        (event["client"].as_str(), event["session"].as_str()),
        (Some("anonymous"), Some(c.session.id())),
        "{event}"
    );
    assert!(event["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{event}");
}
