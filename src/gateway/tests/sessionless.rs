//! The gate for sessionless requests (MCP 2026-07-28): grants belong to the
//! client, not to a session, in the gateway's grant store; one client's
//! requests share them, on every replica that shares the store, and other
//! clients' do not.

use super::*;
use crate::auth::{ClientPolicy, Principal, PrincipalId, PrincipalKind};
use crate::jsonrpc::codes;
use crate::server::Caller;
use toolgate_test_support::RedisServer;

fn client_named(name: &str) -> Principal {
    Principal::new(PrincipalId::new(PrincipalKind::ApiKey, name), Arc::new(ClientPolicy::unrestricted()))
}

impl Setup {
    /// The state of one sessionless request of `principal`, as the
    /// sessionless path builds it for each request.
    fn sessionless(&self, principal: Principal) -> Client {
        let grants = self.gateway.grants_for(&principal);
        let state = GatewaySession::sessionless(&self.gateway.upstreams(), principal, grants)
            .with_startup_deadline(tokio::time::Instant::now() + Duration::from_secs(30));
        let session = Arc::new(Session::detached(crate::protocol::Version::LATEST, state, Caller::anonymous()));
        Client { engine: self.engine.clone(), session }
    }
}

fn refused(result: &Value) -> bool {
    result["isError"] == true && text(result).contains("TOOL_DESCRIPTION_REQUIRED")
}

#[tokio::test]
async fn sessionless_requests_of_one_client_share_grants_and_other_clients_do_not() {
    let s = setup("");
    let alice = client_named("alice");
    assert!(refused(&s.sessionless(alice.clone()).call("echo", json!({"text": "hi"})).await));

    s.sessionless(alice.clone()).fetch("echo").await;
    // Another request of the same client: a new state, the same grants.
    assert_eq!(text(&s.sessionless(alice.clone()).call("echo", json!({"text": "again"})).await), "again");
    assert!(refused(&s.sessionless(client_named("bob")).call("echo", json!({"text": "hi"})).await), "another client");
    assert!(refused(&s.sessionless(Principal::anonymous()).call("echo", json!({"text": "hi"})).await));
    // Sessions keep their own grants, apart from the store.
    assert!(refused(&s.client(json!({})).await.call("echo", json!({"text": "hi"})).await), "a session");
    assert_eq!(s.upstream.seen("tools/call").len(), 1, "only the granted call reached the upstream");

    // The describe tool grants the same way.
    s.sessionless(client_named("bob")).call("describe_tools", json!({"tools": ["echo"]})).await;
    assert_eq!(text(&s.sessionless(client_named("bob")).call("echo", json!({"text": "bob"})).await), "bob");
}

#[tokio::test]
async fn anonymous_sessionless_clients_share_one_scope_and_sessions_do_not_leak_into_it() {
    let s = setup("");
    let session = s.client(json!({})).await;
    session.fetch("echo").await;
    assert_eq!(text(&session.call("echo", json!({"text": "mine"})).await), "mine");
    assert!(
        refused(&s.sessionless(Principal::anonymous()).call("echo", json!({"text": "hi"})).await),
        "a session's grants stay in the session"
    );

    s.sessionless(Principal::anonymous()).fetch("echo").await;
    let other = s.sessionless(Principal::anonymous());
    assert_eq!(text(&other.call("echo", json!({"text": "shared"})).await), "shared", "one anonymous scope");
}

#[tokio::test]
async fn the_tool_list_does_not_change_with_grants() {
    let s = setup("");
    let before = s.sessionless(client_named("alice")).result("tools/list", json!({})).await;
    s.sessionless(client_named("alice")).fetch("echo").await;
    let after = s.sessionless(client_named("alice")).result("tools/list", json!({})).await;
    assert_eq!(before, after, "tools/list must not vary as a side effect of other requests");
}

#[tokio::test]
async fn two_gateways_on_one_redis_honour_each_others_grants() {
    let Some(mut redis) = RedisServer::start() else { return };
    // Sessions local: the sessions here are the contrast, a client that
    // needs no store (shared sessions have tests of their own).
    let extra = format!("[state]\nredis_url = \"{}\"\nsessions = \"local\"", redis.url());
    let (a, b) = (setup(&extra), setup(&extra));
    let alice = client_named("alice");

    a.sessionless(alice.clone()).fetch("echo").await;
    assert_eq!(redis.command("EXISTS toolgate:grant:key.alice:echo"), ":1", "the grant is in Redis");
    assert_eq!(text(&b.sessionless(alice.clone()).call("echo", json!({"text": "via b"})).await), "via b");
    assert!(refused(&b.sessionless(client_named("bob")).call("echo", json!({"text": "hi"})).await));
    assert!(refused(&b.client(json!({})).await.call("echo", json!({"text": "hi"})).await), "sessions stay local");

    // Redis down: what needs a grant fails with a clear error, in bounded
    // time; a session-based client, which needs no store, is unaffected.
    redis.stop();
    let session = b.client(json!({})).await;
    session.fetch("echo").await;
    for (method, params) in [
        ("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})),
        ("resources/read", json!({"uri": "resource:///tool_descriptions?tools=echo"})),
        ("tools/call", json!({"name": "describe_tools", "arguments": {"tools": ["echo"]}})),
    ] {
        let started = std::time::Instant::now();
        let (outcome, _) = b.sessionless(alice.clone()).run(json!(5), method, params).await;
        assert_eq!(outcome.error_code(), Some(codes::STATE_STORE_UNAVAILABLE), "{method}: {outcome:?}");
        let bound = crate::grants::STORE_TIMEOUT + Duration::from_secs(3);
        assert!(started.elapsed() < bound, "{method} took {:?}", started.elapsed());
    }
    assert_eq!(text(&session.call("echo", json!({"text": "local"})).await), "local");
    assert_eq!(b.upstream.seen("tools/call").len() + a.upstream.seen("tools/call").len(), 2);

    // Redis back (empty: nothing persisted): fetch again, call again.
    redis.resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (outcome, _) = a
            .sessionless(alice.clone())
            .run(json!(6), "resources/read", json!({"uri": "resource:///tool_descriptions?tools=echo"}))
            .await;
        if outcome.error_code().is_none() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "toolgate did not recover within 30 s: {outcome:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(text(&b.sessionless(alice).call("echo", json!({"text": "back"})).await), "back");
}
