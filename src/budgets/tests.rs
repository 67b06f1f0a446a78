use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::auth::{ClientPolicy, PrincipalId, PrincipalKind, ToolPolicy};
use crate::config::ToolLimit;

fn principal(name: &str, limits: &[ToolLimit]) -> Principal {
    let policy = ClientPolicy {
        entry: Some(name.to_owned()),
        tools: ToolPolicy::allow_all(),
        max_sessions: None,
        calls_per_minute: NonZeroU32::new(0),
        concerns: Default::default(),
        limits: Rules::client(limits),
        upstream: Default::default(),
        identity_claims: Default::default(),
        generation: 0,
    };
    Principal::new(PrincipalId::new(PrincipalKind::ApiKey, name), Arc::new(policy))
}

fn tool(name: &str, annotations: Value) -> Arc<ToolEntry> {
    let definition = json!({"name": name, "inputSchema": {"type": "object"}, "annotations": annotations});
    crate::catalog::test_entries(json!({"name": "up"}), vec![definition]).remove(0)
}

fn budgets(toml_limits: &str) -> Budgets {
    #[derive(serde::Deserialize)]
    struct Doc {
        #[serde(default)]
        limits: Vec<ToolLimit>,
    }
    let doc: Doc = toml::from_str(toml_limits).unwrap();
    Budgets {
        rules: Rules::gateway(&doc.limits),
        local: local::Local::default(),
        shared: None,
        fallbacks: Default::default(),
    }
}

fn limit(tools: &str, per_minute: Option<u32>, per_day: Option<u32>) -> ToolLimit {
    ToolLimit { tools: tools.into(), per_minute, per_day, defaults: None }
}

#[tokio::test]
async fn a_tool_budget_per_client_and_tool_refuses_past_its_burst_with_the_wait() {
    let b = budgets("[[limits]]\ntools = \"gh__create_*\"\nper_minute = 3\n");
    let (alice, bob) = (principal("alice", &[]), principal("bob", &[]));
    let (create, other_create, read) =
        (tool("gh__create_issue", json!({})), tool("gh__create_pr", json!({})), tool("gh__get", json!({})));
    for _ in 0..3 {
        assert_eq!(b.take(&alice, &create, None).await, Ok(()));
    }
    let refused = b.take(&alice, &create, None).await.unwrap_err();
    assert_eq!((refused.limit, refused.max, &*refused.tools), (Limit::PerMinute, 3, "gh__create_*"));
    // The next of three a minute comes 20 s after the burst.
    assert!(
        refused.retry_after > Duration::from_secs(18) && refused.retry_after <= Duration::from_secs(20),
        "{refused:?}"
    );
    // Per tool, per client; unmatched tools are free.
    assert_eq!(b.take(&alice, &other_create, None).await, Ok(()));
    assert_eq!(b.take(&bob, &create, None).await, Ok(()));
    for _ in 0..10 {
        assert_eq!(b.take(&alice, &read, None).await, Ok(()));
    }
}

#[tokio::test]
async fn a_daily_budget_resets_at_utc_midnight_and_a_refused_call_takes_nothing() {
    let b = budgets("[[limits]]\ntools = \"*\"\nper_day = 2\nper_minute = 100\n");
    let alice = principal("alice", &[]);
    let t = tool("t", json!({}));
    b.take(&alice, &t, None).await.unwrap();
    b.take(&alice, &t, None).await.unwrap();
    let refused = b.take(&alice, &t, None).await.unwrap_err();
    assert_eq!(refused.limit, Limit::PerDay);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let midnight = (now / 86_400 + 1) * 86_400;
    let resets = refused.resets_at().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(resets.abs_diff(midnight) <= 1, "resets at {resets}, midnight is {midnight}");
}

#[tokio::test]
async fn writes_have_the_default_and_read_only_tools_do_not() {
    let b = budgets("[[limits]]\n[limits.defaults]\nwrite_per_minute = 2\n");
    let alice = principal("alice", &[]);
    let (write, unannotated, read) =
        (tool("w", json!({"readOnlyHint": false})), tool("u", json!({})), tool("r", json!({"readOnlyHint": true})));
    for t in [&write, &unannotated] {
        b.take(&alice, t, None).await.unwrap();
        b.take(&alice, t, None).await.unwrap();
        assert_eq!(b.take(&alice, t, None).await.unwrap_err().limit, Limit::WritePerMinute);
    }
    for _ in 0..5 {
        b.take(&alice, &read, None).await.unwrap();
    }
}

#[tokio::test]
async fn the_breaker_counts_identical_arguments_whatever_their_order() {
    let b = budgets("[[limits]]\n[limits.defaults]\nidentical_calls = { max = 2, window = \"60s\" }\n");
    let alice = principal("alice", &[]);
    let t = tool("search", json!({"readOnlyHint": true}));
    let (a, same, other) = (json!({"q": "x", "n": 1}), json!({"n": 1.0, "q": "x"}), json!({"q": "y", "n": 1}));
    b.take(&alice, &t, Some(&a)).await.unwrap();
    b.take(&alice, &t, Some(&same)).await.unwrap();
    let refused = b.take(&alice, &t, Some(&a)).await.unwrap_err();
    assert_eq!((refused.limit, refused.window), (Limit::IdenticalCalls, Some(Duration::from_secs(60))));
    b.take(&alice, &t, Some(&other)).await.unwrap();
    // No arguments and empty arguments are one call.
    assert_eq!(rules::digest(None), rules::digest(Some(&json!({}))));
}

#[tokio::test]
async fn a_clients_own_limits_add_to_the_gateways() {
    let b = budgets("[[limits]]\ntools = \"*\"\nper_minute = 10\n");
    let alice = principal("alice", &[limit("t", Some(1), None)]);
    let bob = principal("bob", &[]);
    let t = tool("t", json!({}));
    b.take(&alice, &t, None).await.unwrap();
    assert_eq!(b.take(&alice, &t, None).await.unwrap_err().max, 1);
    for _ in 0..10 {
        b.take(&bob, &t, None).await.unwrap();
    }
    assert_eq!(b.take(&bob, &t, None).await.unwrap_err().max, 10);
}

#[tokio::test]
async fn a_window_refusal_gives_back_what_the_call_took_elsewhere() {
    // Two daily budgets: the second refuses, so the first must not count
    // the refused call.
    let b = budgets("[[limits]]\ntools = \"*\"\nper_day = 5\n[[limits]]\ntools = \"t\"\nper_day = 1\n");
    let alice = principal("alice", &[]);
    let (t, u) = (tool("t", json!({})), tool("u", json!({})));
    b.take(&alice, &t, None).await.unwrap();
    for _ in 0..3 {
        assert_eq!(b.take(&alice, &t, None).await.unwrap_err().max, 1);
    }
    // `*` counted one call of t, not four: u has four left today.
    for _ in 0..5 {
        b.take(&alice, &u, None).await.unwrap();
    }
    assert_eq!(b.take(&alice, &u, None).await.unwrap_err().max, 5);
}

#[test]
fn the_refusal_is_a_tool_error_that_says_what_when_and_what_to_do() {
    let exceeded = Exceeded {
        limit: Limit::PerMinute,
        max: 10,
        window: None,
        tools: Arc::from("gh__create_*"),
        retry_after: Duration::from_millis(5_200),
    };
    let result = refusal::result("gh__create_issue", "alice", &exceeded);
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("per_minute") && text.contains("10 calls of `gh__create_issue` per minute"), "{text}");
    assert!(text.contains("resets in 6 s (at 20"), "{text}");
    let meta = &result["_meta"][refusal::META_KEY];
    assert_eq!((meta["retryAfter"].as_u64(), meta["limit"].as_str()), (Some(6), Some("per_minute")));
}
