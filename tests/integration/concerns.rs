//! Concern-based filtering on the real binary: the declarations in
//! `initialize`, `server/discover` and `concerns/list`; a client's
//! configuration from `initialize`, `notifications/initialized`,
//! `concerns/update`, a sessionless request's `_meta.concerns` or its
//! `[[auth.clients]]` entry; the filtered `tools/list` (progressive and
//! passthrough) and `prompts/list`; `list_changed` after an update; values
//! in the full definitions; and that filtering is not access control. Over
//! Streamable HTTP and stdio, in the 2025-11-25 and 2026-07-28 eras.

use std::time::Duration;

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::common::*;
use crate::downstream::StdioGateway;

const DECLARED: &str = r#"
[[concerns]]
name = "security"
description = "Security level required for the operation"
values = ["high", "medium", "low"]
default = "medium"

[[concerns]]
name = "cost"
description = "What a call costs"
values = ["minimal", "moderate"]
"#;

/// fx: progressive, its tools cost minimal; `echo` is high security,
/// `test_simple_text` low, `test_image_content` medium, the rest unmapped.
/// fy: passthrough, everything moderate.
fn upstreams() -> String {
    let fx = fixture_upstream(
        "fx",
        &[],
        "concerns = { cost = \"minimal\" }\n\
         [upstream.tools.echo]\nconcerns = { security = \"high\" }\n\
         [upstream.tools.test_simple_text]\nconcerns = { security = \"low\" }\n\
         [upstream.tools.test_image_content]\nconcerns = { security = \"medium\" }\n",
    );
    let fy = fixture_upstream("fy", &[], "mode = \"passthrough\"\nconcerns = { cost = \"moderate\" }");
    format!("{DECLARED}{fx}{fy}")
}

fn names(result: &Value, key: &str) -> Vec<String> {
    result[key].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect()
}

fn has(list: &[String], name: &str) -> bool {
    list.iter().any(|n| n == name)
}

fn declarations() -> Value {
    json!([
        {"name": "security", "description": "Security level required for the operation",
         "values": ["high", "medium", "low"], "default": "medium"},
        {"name": "cost", "description": "What a call costs", "values": ["minimal", "moderate"]},
    ])
}

#[tokio::test]
async fn a_session_declares_configures_and_filters_over_http() -> Result<()> {
    let gw = Toolgate::start(&upstreams()).await?;
    let mut c = gw.client();
    let init = c.initialize(json!({})).await?;
    assert_eq!(init["capabilities"]["concerns"], declarations(), "{init}");
    assert_eq!(c.result("concerns/list", json!({})).await?, json!({"concerns": declarations()}));
    let mut events = c.listen().await?;

    // No configuration yet: everything.
    let all = names(&c.result("tools/list", json!({})).await?, "tools");
    assert!(has(&all, "fx__echo") && has(&all, "fx__test_simple_text") && has(&all, "fy__echo"), "{all:?}");

    // High security: fx's low and medium tools go; unmapped ones stay.
    assert_eq!(c.result("concerns/update", json!({"concerns": {"security": "high"}})).await?, json!({}));
    let mut heard = Vec::new();
    while let Some(m) = events.next_within(Duration::from_secs(2)).await {
        heard.push(m["method"].as_str().unwrap_or_default().to_owned());
    }
    assert!(heard.iter().any(|m| m == "notifications/tools/list_changed"), "{heard:?}");
    assert!(heard.iter().any(|m| m == "notifications/prompts/list_changed"), "fy maps its prompts: {heard:?}");
    let high = names(&c.result("tools/list", json!({})).await?, "tools");
    assert!(has(&high, "fx__echo"), "{high:?}");
    assert!(!has(&high, "fx__test_simple_text") && !has(&high, "fx__test_image_content"), "{high:?}");
    assert!(has(&high, "fx__test_audio_content") && has(&high, "fy__echo"), "unmapped stay: {high:?}");
    assert!(has(&high, "describe_tools"));

    // Cost minimal too: fy (moderate) goes, from tools and prompts alike.
    c.result("concerns/update", json!({"concerns": {"security": "high", "cost": "minimal"}})).await?;
    let changed = events.next_within(Duration::from_secs(10)).await.ok_or_else(|| anyhow!("no list_changed"))?;
    assert!(changed["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")), "{changed}");
    while events.next_within(Duration::from_millis(500)).await.is_some() {}
    let both = names(&c.result("tools/list", json!({})).await?, "tools");
    assert!(has(&both, "fx__echo") && !both.iter().any(|n| n.starts_with("fy__")), "{both:?}");
    let prompts = names(&c.result("prompts/list", json!({})).await?, "prompts");
    assert!(prompts.iter().any(|p| p.starts_with("fx__")) && !prompts.iter().any(|p| p.starts_with("fy__")));

    // An update that changes nothing shown says nothing.
    c.result("concerns/update", json!({"concerns": {"security": "high", "cost": "minimal", "colour": "red"}})).await?;
    assert!(events.next_within(Duration::from_secs(1)).await.is_none(), "nothing changed");
    assert!(gw.logs().contains("a client configured a concern toolgate does not declare"), "undeclared: warned");

    // Not access control: a filtered-out tool is described and called.
    let described = c.read_descriptions("fx__test_simple_text,fx__echo").await?;
    assert_eq!(described["fx__test_simple_text"]["_meta"]["concerns"], json!({"security": "low", "cost": "minimal"}));
    assert_eq!(described["fx__echo"]["_meta"]["concerns"], json!({"security": "high", "cost": "minimal"}));
    let called = c.call_tool("fx__test_simple_text", json!({})).await?;
    assert!(called.get("isError").is_none_or(|e| e == false), "{called}");

    // A value outside the concern's values: -32602 naming it; nothing changes.
    let refused = c.request("concerns/update", json!({"concerns": {"security": "top"}})).await?;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("concern `security`")), "{refused}");
    assert_eq!(names(&c.result("tools/list", json!({})).await?, "tools"), both);
    Ok(())
}

#[tokio::test]
async fn initialize_and_initialized_carry_a_configuration_and_defaults_apply() -> Result<()> {
    let gw = Toolgate::start(&upstreams()).await?;
    // In the initialize request (option C).
    let c = Client::new(&gw.url);
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
        "concerns": {"security": "low"}}});
    let reply = c.post(&body).await?;
    let mut c = c.clone();
    c.session = reply.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    c.notify("notifications/initialized", None).await?;
    let low = names(&c.result("tools/list", json!({})).await?, "tools");
    assert!(has(&low, "fx__test_simple_text") && !has(&low, "fx__echo"), "{low:?}");

    // In notifications/initialized (option A); an empty configuration takes
    // the defaults (security: medium).
    let c = Client::new(&gw.url);
    let mut init = body.clone();
    init["params"].as_object_mut().map(|p| p.remove("concerns"));
    let reply = c.post(&init).await?;
    let mut c = c.clone();
    c.session = reply.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    c.notify("notifications/initialized", Some(json!({"concerns": {}}))).await?;
    let medium = names(&c.result("tools/list", json!({})).await?, "tools");
    assert!(has(&medium, "fx__test_image_content") && !has(&medium, "fx__echo"), "{medium:?}");

    // A bad value in initialize refuses it.
    let mut bad = body.clone();
    bad["params"]["concerns"] = json!({"cost": "free"});
    let reply = Client::new(&gw.url).post(&bad).await?;
    assert_eq!(reply.messages[0]["error"]["code"], -32602, "{reply:?}");
    Ok(())
}

#[tokio::test]
async fn sessionless_requests_carry_their_concerns_and_clients_have_stored_ones() -> Result<()> {
    const CI: &str = "ci-key-0123456789abcdef0000";
    let clients =
        format!("[auth]\n[[auth.clients]]\nname = \"ci\"\napi_key = \"{CI}\"\nconcerns = {{ security = \"high\" }}\n");
    let gw = Toolgate::start_with(&upstreams(), &clients).await?;
    let c = Client::with_bearer(&gw.url, CI)?;
    let list = |meta: Option<Value>| {
        let mut body = modern_body("concerns-test", json!(1), "tools/list", json!({}));
        if let Some(m) = meta {
            body["params"]["_meta"]["concerns"] = m;
        }
        let c = c.clone();
        async move {
            let reply = c.send(modern_post(&c, &body, None)).await?;
            let answer = reply.response(&json!(1)).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
            Ok::<_, anyhow::Error>(answer)
        }
    };
    // The client's stored configuration applies.
    let stored = names(&list(None).await?["result"], "tools");
    assert!(has(&stored, "fx__echo") && !has(&stored, "fx__test_simple_text"), "{stored:?}");
    // Until it sends its own.
    let own = names(&list(Some(json!({"security": "low"}))).await?["result"], "tools");
    assert!(has(&own, "fx__test_simple_text") && !has(&own, "fx__echo"), "{own:?}");
    let refused = list(Some(json!({"security": "nope"}))).await?;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // server/discover declares them; a session of this client starts with them.
    let discover = modern_body("concerns-test", json!(2), "server/discover", json!({}));
    let reply = c.send(modern_post(&c, &discover, None)).await?;
    let discovered = reply.response(&json!(2)).cloned().ok_or_else(|| anyhow!("{reply:?}"))?;
    assert_eq!(discovered["result"]["capabilities"]["concerns"], declarations(), "{discovered}");
    let mut session = Client::with_bearer(&gw.url, CI)?;
    session.initialize(json!({})).await?;
    let listed = names(&session.result("tools/list", json!({})).await?, "tools");
    assert!(has(&listed, "fx__echo") && !has(&listed, "fx__test_simple_text"), "{listed:?}");
    Ok(())
}

#[tokio::test]
async fn stdio_clients_of_both_eras_configure_concerns() -> Result<()> {
    let mut gw = StdioGateway::start(&upstreams()).await?;
    let (init, _) = gw
        .request(
            1,
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    assert_eq!(init["result"]["capabilities"]["concerns"], declarations(), "{init}");
    gw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let (updated, related) = gw.request(2, "concerns/update", json!({"concerns": {"security": "high"}})).await?;
    assert_eq!(updated["result"], json!({}), "{updated}");
    let (list, more) = gw.request(3, "tools/list", json!({})).await?;
    let heard: Vec<&Value> = related.iter().chain(&more).collect();
    assert!(heard.iter().any(|m| m["method"] == "notifications/tools/list_changed"), "{heard:?}");
    let listed = names(&list["result"], "tools");
    assert!(has(&listed, "fx__echo") && !has(&listed, "fx__test_simple_text"), "{listed:?}");

    // A 2026-07-28 stdio connection: the configuration rides on each request.
    let mut modern = StdioGateway::start(&upstreams()).await?;
    let mut body = modern_body("concerns-test", json!(1), "tools/list", json!({}));
    body["params"]["_meta"]["concerns"] = json!({"security": "low"});
    modern.send(body).await?;
    let (list, _) = modern.until(json!(1)).await?;
    let listed = names(&list["result"], "tools");
    assert!(has(&listed, "fx__test_simple_text") && !has(&listed, "fx__echo"), "{listed:?}");
    Ok(())
}
