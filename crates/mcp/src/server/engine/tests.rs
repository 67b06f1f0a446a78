use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use futures::future::BoxFuture;

use crate::jsonrpc::{Message, Outcome};
use crate::server::{CacheHints, CacheScope, Discovery, Frame, ModernContext, RequestCtx, SessionBackend, Stored};

/// Echoes every request's method and params; `slow` waits for cancellation.
struct Echo;

impl Handler for Echo {
    type State = ();

    async fn initialize(self: &Arc<Self>, _: &InitContext) -> Result<(ServerOffer, ()), ErrorObject> {
        let offer = ServerOffer {
            capabilities: json!({"tools": {}}),
            server_info: json!({"name": "echo", "version": "1"}),
            instructions: Some("be kind".into()),
        };
        Ok((offer, ()))
    }

    fn serves_modern(&self) -> bool {
        true
    }

    async fn discover(self: &Arc<Self>, _: &ModernContext) -> Result<Discovery, ErrorObject> {
        let offer = ServerOffer {
            capabilities: json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}}),
            server_info: json!({"name": "echo", "version": "1"}),
            instructions: Some("be kind".into()),
        };
        Ok(Discovery { offer, hints: CacheHints { ttl_ms: 5, scope: CacheScope::Public } })
    }

    async fn sessionless(self: &Arc<Self>, _: &ModernContext) -> Result<(), ErrorObject> {
        Ok(())
    }

    fn server_info(&self) -> Option<Value> {
        Some(json!({"name": "echo", "version": "1"}))
    }

    fn cache_hints(self: &Arc<Self>, _: &Arc<Session<()>>, _: &str) -> CacheHints {
        CacheHints { ttl_ms: 0, scope: CacheScope::Private }
    }

    async fn request(self: &Arc<Self>, _: &Arc<Session<()>>, request: Request, ctx: RequestCtx) -> Outcome {
        if request.method == "slow" {
            ctx.cancel.cancelled().await;
        }
        if request.method == "resources/read" {
            return Outcome::error(ErrorObject::new(codes::RESOURCE_NOT_FOUND, "Resource not found"));
        }
        if request.method == "log" {
            for level in ["debug", "info", "error"] {
                let params = json!({"level": level, "data": level});
                ctx.downlink.send(Notification::new(method::MESSAGE, Some(params)));
            }
        }
        Outcome::Result(json!({"method": request.method, "params": request.params}))
    }

    async fn notification(self: &Arc<Self>, _: &Arc<Session<()>>, _: Notification) {}

    async fn closed(self: &Arc<Self>, _: Arc<Session<()>>) {}

    /// What [`Memory`] stored: its own record, which it takes back.
    fn restore(self: &Arc<Self>, _: &str, stored: Stored, _: &Caller) -> Result<Option<()>, ErrorObject> {
        Ok(stored.record.downcast::<&str>().ok().filter(|r| **r == "echo").map(|_| ()))
    }
}

fn engine() -> Arc<Engine<Echo>> {
    let (store, ended) = SessionStore::new(Duration::from_secs(60));
    Engine::start(Arc::new(Echo), Arc::new(store), ended)
}

fn body(v: Value) -> Result<Body, DecodeError> {
    Body::decode(v.to_string().as_bytes())
}

fn init(version: &str) -> Result<Body, DecodeError> {
    body(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
}

async fn session(engine: &Engine<Echo>, version: &str) -> Arc<Session<()>> {
    match engine.accept_anonymous(SessionRef::Missing, init(version)).await {
        Accepted::Initialized { session, .. } => session,
        _ => panic!("initialize failed"),
    }
}

fn error_of(accepted: Accepted<()>) -> (Option<Refusal>, i64, String) {
    let Accepted::Answered { mut responses, refusal, .. } = accepted else { panic!("not answered") };
    let response = responses.pop().expect("a response");
    let Outcome::Error(e) = response.outcome else { panic!("not an error: {response:?}") };
    (refusal, e["code"].as_i64().unwrap(), e["message"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn initialize_negotiates_and_answers_with_the_offer() {
    let engine = engine();
    let Accepted::Initialized { session, response } =
        engine.accept_anonymous(SessionRef::Unbound, init("2025-03-26")).await
    else {
        panic!("initialize failed")
    };
    assert_eq!(session.version(), Version::V2025_03_26);
    let result = response.outcome.result_value().unwrap();
    let keys: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["protocolVersion", "capabilities", "serverInfo", "instructions"]);
    assert_eq!(result["protocolVersion"], "2025-03-26");
    // An unknown revision gets the latest.
    let later = session_version(&engine, "2099-01-01").await;
    assert_eq!(later, Version::LATEST);
    assert_eq!(engine.store().len(), 2);
}

async fn session_version(engine: &Engine<Echo>, version: &str) -> Version {
    session(engine, version).await.version()
}

#[tokio::test]
async fn initialize_on_a_live_session_is_refused() {
    let engine = engine();
    let s = session(&engine, "2025-11-25").await;
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Live(s), init("2025-11-25")).await);
    assert_eq!((refusal, code), (Some(Refusal::AlreadyInitialized), codes::INVALID_REQUEST));
}

#[tokio::test]
async fn requests_without_a_session_are_refused_by_how_the_transport_names_sessions() {
    let engine = engine();
    let ping = || body(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    // A connection that carries one session answers ping before initialize.
    let Accepted::Answered { responses, refusal: None, .. } =
        engine.accept_anonymous(SessionRef::Unbound, ping()).await
    else {
        panic!()
    };
    assert_eq!(responses[0].outcome, Outcome::Result(json!({})));
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Missing, ping()).await);
    assert_eq!((refusal, code), (Some(Refusal::SessionRequired), codes::SERVER_ERROR));
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Unknown, ping()).await);
    assert_eq!((refusal, code), (Some(Refusal::SessionUnknown), codes::SESSION_NOT_FOUND));
    let list = body(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}));
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Unbound, list).await);
    assert_eq!((refusal, code), (Some(Refusal::NotInitialized), codes::INVALID_REQUEST));
    // The 2026 probe gets what a session-based server answers.
    let discover = || body(json!({"jsonrpc": "2.0", "id": 9, "method": "server/discover"}));
    let (_, code, message) = error_of(engine.accept_anonymous(SessionRef::Missing, discover()).await);
    assert_eq!(code, codes::SERVER_ERROR);
    assert!(message.contains("initialize"), "{message}");
    let (_, code, _) = error_of(engine.accept_anonymous(SessionRef::Unbound, discover()).await);
    assert_eq!(code, codes::METHOD_NOT_FOUND);
    // Notifications before a session are dropped on a connection, refused over HTTP.
    let note = || body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(matches!(
        engine.accept_anonymous(SessionRef::Unbound, note()).await,
        Accepted::Answered { refusal: None, ref responses, .. } if responses.is_empty()
    ));
    assert_eq!(error_of(engine.accept_anonymous(SessionRef::Missing, note()).await).0, Some(Refusal::SessionRequired));
}

#[tokio::test]
async fn batches_follow_the_session_revision() {
    let engine = engine();
    let batch = || {
        body(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"nonsense": true},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        ]))
    };
    let modern = session(&engine, "2025-06-18").await;
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Live(modern), batch()).await);
    assert_eq!((refusal, code), (Some(Refusal::BatchNotAllowed), codes::INVALID_REQUEST));

    let old = session(&engine, "2025-03-26").await;
    assert!(!old.is_initialized());
    let Accepted::Run { session, requests, answered, batch: true } =
        engine.accept_anonymous(SessionRef::Live(old), batch()).await
    else {
        panic!("the batch did not run")
    };
    assert!(session.is_initialized(), "the batch's notification was taken");
    assert_eq!(requests.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["tools/list"]);
    let codes: Vec<Option<i64>> = answered.iter().map(|r| r.outcome.error_code()).collect();
    assert_eq!(codes, [None, Some(codes::INVALID_REQUEST), Some(codes::INVALID_REQUEST)]);
    let response = engine.run(&session, requests.into_iter().next().unwrap(), Downlink::channel().0).await;
    assert_eq!(response.unwrap().outcome.result_value().unwrap()["method"], "tools/list");
}

/// Starts request 5, `slow`, in a task of its own, and lets it begin.
async fn run_slow(engine: &Arc<Engine<Echo>>, s: &Arc<Session<()>>) -> tokio::task::JoinHandle<Option<Response>> {
    let slow = Request { id: Id::number(5), method: "slow".into(), params: None };
    let run = {
        let (engine, s) = (engine.clone(), s.clone());
        crate::spawn(async move { engine.run(&s, slow, Downlink::channel().0).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    run
}

#[tokio::test]
async fn a_cancelled_request_is_not_answered() {
    let engine = engine();
    let s = session(&engine, "2025-11-25").await;
    let run = run_slow(&engine, &s).await;
    let cancel = body(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}));
    engine.accept_anonymous(SessionRef::Live(s), cancel).await;
    assert!(run.await.unwrap().is_none());
}

#[tokio::test]
async fn malformed_bodies_are_refused_as_such() {
    let engine = engine();
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Missing, Body::decode(b"{not json")).await);
    assert_eq!((refusal, code), (Some(Refusal::Malformed), codes::PARSE_ERROR));
    let (refusal, code, _) = error_of(engine.accept_anonymous(SessionRef::Unbound, Body::decode(b"[]")).await);
    assert_eq!((refusal, code), (Some(Refusal::Malformed), codes::INVALID_REQUEST));
}

fn limited(limits: crate::server::Limits) -> Arc<Engine<Echo>> {
    let (store, ended) = SessionStore::with_limits(Duration::from_secs(60), limits);
    Engine::start(Arc::new(Echo), Arc::new(store), ended)
}

#[tokio::test]
async fn initialize_past_max_sessions_is_refused_until_a_session_ends() {
    let engine = limited(crate::server::Limits { max_sessions: 2, ..Default::default() });
    let first = session(&engine, "2025-11-25").await;
    session(&engine, "2025-11-25").await;
    let (refusal, code, message) = error_of(engine.accept_anonymous(SessionRef::Missing, init("2025-11-25")).await);
    assert_eq!((refusal, code), (Some(Refusal::TooManySessions), codes::LIMIT_EXCEEDED));
    assert!(message.contains("at most 2"), "{message}");
    assert_eq!(engine.store().len(), 2, "the refused initialize created nothing");
    engine.store().remove(first.id());
    session(&engine, "2025-11-25").await;
    assert_eq!(engine.store().len(), 2);
}

#[tokio::test]
async fn requests_past_the_per_session_cap_are_answered_at_once() {
    let engine = limited(crate::server::Limits { max_requests_per_session: 2, ..Default::default() });
    let s = session(&engine, "2025-03-26").await;
    // A batch of four slow requests: two run, two are refused immediately.
    let batch = body(json!([
        {"jsonrpc": "2.0", "id": 1, "method": "slow"},
        {"jsonrpc": "2.0", "id": 2, "method": "slow"},
        {"jsonrpc": "2.0", "id": 3, "method": "slow"},
        {"jsonrpc": "2.0", "id": 4, "method": "slow"},
    ]));
    let Accepted::Run { session, requests, .. } = engine.accept_anonymous(SessionRef::Live(s.clone()), batch).await
    else {
        panic!("the batch did not run")
    };
    let runs: Vec<_> = requests
        .into_iter()
        .map(|r| {
            let (engine, session) = (engine.clone(), session.clone());
            crate::spawn(async move { engine.run(&session, r, Downlink::channel().0).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(s.requests_in_flight(), 2);
    assert_eq!(engine.running(), 2);
    let mut refused = Vec::new();
    let mut waiting = Vec::new();
    for run in runs {
        if run.is_finished() {
            let response = run.await.unwrap().expect("answered");
            assert_eq!(response.outcome.error_code(), Some(codes::LIMIT_EXCEEDED));
            refused.push(response.id.unwrap());
        } else {
            waiting.push(run);
        }
    }
    assert_eq!(refused.len(), 2, "over the cap: answered with an error, not queued");
    // Cancelling the running ones frees their places.
    for id in [1, 2, 3, 4] {
        let cancel = body(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}));
        engine.accept_anonymous(SessionRef::Live(s.clone()), cancel).await;
    }
    for run in waiting {
        assert!(run.await.unwrap().is_none(), "cancelled");
    }
    assert_eq!(s.requests_in_flight(), 0);
    assert!(engine.drain(Duration::from_secs(1)).await);
}

#[tokio::test]
async fn a_shutting_down_engine_refuses_new_work_and_drains_the_running() {
    let engine = engine();
    let s = session(&engine, "2025-11-25").await;
    let run = run_slow(&engine, &s).await;
    engine.begin_shutdown();
    let (refusal, _, message) = error_of(engine.accept_anonymous(SessionRef::Missing, init("2025-11-25")).await);
    assert_eq!(refusal, Some(Refusal::ShuttingDown));
    assert!(message.contains("shutting down"), "{message}");
    let list = body(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}));
    let Accepted::Answered { responses, .. } = engine.accept_anonymous(SessionRef::Live(s.clone()), list).await else {
        panic!("a new request ran during shutdown")
    };
    assert_eq!(responses[0].outcome.error_code(), Some(codes::SERVER_ERROR));
    assert!(!engine.drain(Duration::from_millis(50)).await, "the slow request is still running");
    s.cancel_request(&Id::number(5));
    assert!(engine.drain(Duration::from_secs(1)).await);
    assert!(run.await.unwrap().is_none());
}

/// A drain already waiting when the last request ends is woken by it (the
/// wake-up is sent only while a drain waits).
#[tokio::test]
async fn a_waiting_drain_wakes_when_the_last_request_ends() {
    let engine = engine();
    let s = session(&engine, "2025-11-25").await;
    let run = run_slow(&engine, &s).await;
    let drain = {
        let engine = engine.clone();
        crate::spawn(async move { engine.drain(Duration::from_secs(30)).await })
    };
    while engine.drainers.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    s.cancel_request(&Id::number(5));
    assert!(run.await.unwrap().is_none());
    assert!(drain.await.unwrap(), "woken as the request ended, not timed out");
    assert_eq!(engine.drainers.load(std::sync::atomic::Ordering::SeqCst), 0, "counted out");
}

#[path = "sessionless_tests.rs"]
mod sessionless_tests;

/// A store of sessions two engines (two processes) share, in memory: what
/// it was told, and what it answers.
#[derive(Default)]
struct Memory {
    /// Session id → (caller id, revision, params).
    sessions: parking_lot::Mutex<std::collections::HashMap<String, (String, Version, Value)>>,
    cancels: parking_lot::Mutex<Vec<String>>,
    answers: parking_lot::Mutex<Vec<Value>>,
}

impl SessionBackend<()> for Memory {
    fn record<'a>(&'a self, session: &'a Arc<Session<()>>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        let params = json!({"capabilities": session.client_capabilities(), "clientInfo": session.client_info()});
        let entry = (session.caller().id().to_owned(), session.version(), params);
        self.sessions.lock().insert(session.id().to_owned(), entry);
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(&'a self, id: &'a str, caller: &'a Caller) -> BoxFuture<'a, Result<Option<Stored>, ErrorObject>> {
        let found = self.sessions.lock().get(id).filter(|(owner, ..)| owner == caller.id()).cloned();
        let stored = found.map(|(_, version, params)| Stored { version, params, record: Box::new("echo") });
        Box::pin(async { Ok(stored) })
    }

    fn end<'a>(&'a self, session: &'a Arc<Session<()>>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        self.sessions.lock().remove(session.id());
        Box::pin(async { Ok(()) })
    }

    fn forward_cancel<'a>(&'a self, _: &'a Arc<Session<()>>, id: &'a Id) -> BoxFuture<'a, ()> {
        self.cancels.lock().push(id.to_string());
        Box::pin(async {})
    }

    fn forward_answer<'a>(&'a self, _: &'a Arc<Session<()>>, response: Response) -> BoxFuture<'a, ()> {
        self.answers.lock().push(Message::Response(response).to_value());
        Box::pin(async {})
    }

    fn tag(&self) -> Option<Arc<str>> {
        Some(Arc::from("replica1"))
    }
}

/// An engine whose sessions `backend` shares.
fn sharing(backend: &Arc<Memory>) -> Arc<Engine<Echo>> {
    let (store, ended) = SessionStore::new(Duration::from_secs(60));
    store.share_with(backend.clone());
    Engine::start(Arc::new(Echo), Arc::new(store), ended)
}

#[tokio::test]
async fn a_session_recorded_by_one_engine_is_adopted_by_another_and_ended_everywhere() {
    let backend = Arc::new(Memory::default());
    let (a, b) = (sharing(&backend), sharing(&backend));
    let s = session(&a, "2025-11-25").await;
    assert!(backend.sessions.lock().contains_key(s.id()), "recorded before it was answered");

    // Another caller naming it finds nothing, here or there.
    let bob = Caller::new("bob", Arc::new(()));
    assert!(matches!(b.find_session(Some(s.id()), &bob).await, SessionRef::Unknown));
    // Its own caller is served by the other engine, at the same revision.
    let SessionRef::Live(adopted) = b.find_session(Some(s.id()), &Caller::anonymous()).await else {
        panic!("not adopted")
    };
    assert_eq!(adopted.version(), Version::V2025_11_25);
    assert_eq!(adopted.client_info(), &json!({"name": "t", "version": "0"}));
    // An id of another form never reaches the backend.
    assert!(matches!(b.find_session(Some("gone:x"), &Caller::anonymous()).await, SessionRef::Unknown));

    // Ended through the other engine: gone from the backend, so a third
    // engine cannot adopt it.
    b.delete(&adopted).await.expect("deleted");
    assert!(!backend.sessions.lock().contains_key(s.id()));
    let c = sharing(&backend);
    assert!(matches!(c.find_session(Some(s.id()), &Caller::anonymous()).await, SessionRef::Unknown));
}

#[tokio::test]
async fn cancellations_and_answers_for_no_one_here_go_to_the_backend_and_requests_carry_its_tag() {
    let backend = Arc::new(Memory::default());
    let engine = sharing(&backend);
    let s = session(&engine, "2025-11-25").await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "elsewhere-7"}});
    engine.accept_anonymous(SessionRef::Live(s.clone()), body(cancel)).await;
    assert_eq!(*backend.cancels.lock(), ["\"elsewhere-7\""]);
    let answer = json!({"jsonrpc": "2.0", "id": "replica2-3", "result": {}});
    engine.accept_anonymous(SessionRef::Live(s.clone()), body(answer.clone())).await;
    assert_eq!(*backend.answers.lock(), [answer]);

    // A request to the client names this process.
    let (downlink, mut frames) = Downlink::channel();
    let asking = s.clone();
    let asked = crate::spawn(async move {
        let cancel = tokio_util::sync::CancellationToken::new();
        asking.request_client("roots/list", None, Some(&downlink), &cancel).await
    });
    let Some(Frame::Message(Message::Request(request))) = frames.recv().await else { panic!("no request") };
    assert!(request.id.to_string().starts_with("\"replica1-"), "{}", request.id);
    asked.abort();
}
