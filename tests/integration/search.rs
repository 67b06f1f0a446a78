//! The search listing on the real binary (`[disclosure] listing`): what
//! `tools/list` shows (pinned tools, the search tool, the describe tool, a
//! bounded number of tokens), what the search tool returns (best first,
//! only what the client may see under its policy and concerns), that
//! searching authorizes nothing and counts as a call, bad arguments, `auto`
//! by catalog size, and the sessionless and stdio ways in.

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::common::*;
use crate::downstream::StdioGateway;

/// Two fixtures: 82 tools, more than `search_above` (40).
fn two_fixtures(extra: &str) -> String {
    format!("{}{}", fixture_upstream("fx", &[], extra), fixture_upstream("fy", &[], extra))
}

fn disclosure(listing: &str) -> String {
    format!("[disclosure]\nlisting = \"{listing}\"\npinned = [\"fx__echo\"]\n")
}

fn names(result: &Value) -> Vec<String> {
    result["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect()
}

/// The names a `search_tools` result ranks, best first.
fn found(result: &Value) -> Vec<String> {
    names(&result["structuredContent"])
}

#[tokio::test]
async fn the_search_listing_is_small_and_searching_finds_what_a_task_needs() -> Result<()> {
    let gw = Toolgate::start_with(&two_fixtures(""), &disclosure("search")).await?;
    let mut c = gw.client();
    let init = c.initialize(json!({})).await?;
    let instructions = init["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("search_tools"), "the workflow names the search tool: {instructions}");

    let listed = c.result("tools/list", json!({})).await?;
    assert_eq!(names(&listed), ["fx__echo", "search_tools", "call_tool", "describe_tools"], "{listed}");
    let tokens = toolgate::tokens::count_json(&listed);
    eprintln!("the search listing (one pinned tool, the search, call and describe tools): {tokens} tokens (o200k)");
    assert!(tokens < 1500, "the listing costs {tokens} tokens");

    // A task in a user's words finds the tool.
    let result = c.call_tool("search_tools", json!({"query": "repeat my text back to me", "limit": 5})).await?;
    let ranked = found(&result);
    assert!(ranked.len() <= 5 && !ranked.is_empty(), "{result}");
    assert!(ranked.iter().take(3).any(|n| n.ends_with("__echo")), "{ranked:?}");
    let first = &result["structuredContent"]["tools"][0];
    assert!(first["description"].is_string() && first["score"].is_number(), "{first}");
    let scores: Vec<f64> = result["structuredContent"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["score"].as_f64())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first: {scores:?}");
    let text: Value = serde_json::from_str(text_of(&result))?;
    assert_eq!(text, result["structuredContent"], "the text carries the same JSON");

    // An exact name hits first.
    let exact = c.call_tool("search_tools", json!({"query": "fy__test_image_content"})).await?;
    assert_eq!(found(&exact).first().map(String::as_str), Some("fy__test_image_content"), "{exact}");

    // Searching authorizes nothing: the gate still wants the description.
    let refused = c.call_tool("fy__test_image_content", json!({})).await?;
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");
    c.call_tool("describe_tools", json!({"tools": ["fy__test_image_content"]})).await?;
    let called = c.call_tool("fy__test_image_content", json!({})).await?;
    assert!(called.get("isError").is_none_or(|e| e == false), "{called}");

    // Bad arguments are tool errors that say why.
    for (args, why) in [
        (json!({"query": "  "}), "non-empty"),
        (json!({"query": "x".repeat(1001)}), "over 1000"),
        (json!({}), "non-empty"),
        (json!({"query": "echo", "limit": 0}), "from 1 to 50"),
        (json!({"query": "echo", "limit": 51}), "from 1 to 50"),
    ] {
        let result = c.call_tool("search_tools", args.clone()).await?;
        assert_eq!(result["isError"], true, "{args}: {result}");
        assert!(text_of(&result).contains(why), "{args}: {result}");
    }
    Ok(())
}

#[tokio::test]
async fn search_respects_policy_concerns_and_the_rate_limit() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef00";
    let sections = format!(
        "{}\n[[concerns]]\nname = \"security\"\ndescription = \"Security level\"\nvalues = [\"high\", \"low\"]\n\n\
         [auth]\n[[auth.clients]]\nname = \"alice\"\napi_key = \"{ALICE}\"\nupstreams = [\"fx\"]\n\
         deny_tools = [\"fx__test_simple_text\"]\ncalls_per_minute = 2\n",
        disclosure("search")
    );
    let upstreams = two_fixtures("[upstream.tools.test_image_content]\nconcerns = { security = \"low\" }\n");
    let gw = Toolgate::start_with(&upstreams, &sections).await?;
    let mut c = Client::with_bearer(&gw.url, ALICE)?;
    c.initialize(json!({})).await?;
    // Policy: fy and the denied tool are never found, whatever the query.
    let result = c.call_tool("search_tools", json!({"query": "simple text content image", "limit": 50})).await?;
    let ranked = found(&result);
    assert!(!ranked.iter().any(|n| n.starts_with("fy__") || n == "fx__test_simple_text"), "{ranked:?}");
    assert!(ranked.iter().any(|n| n == "fx__test_image_content"), "{ranked:?}");
    // Concerns: a high-security client is not shown the low-security tool.
    c.result("concerns/update", json!({"concerns": {"security": "high"}})).await?;
    let ranked = found(&c.call_tool("search_tools", json!({"query": "image content", "limit": 50})).await?);
    assert!(!ranked.iter().any(|n| n == "fx__test_image_content"), "{ranked:?}");
    // Each search is a call: the third of this minute is refused.
    let over = c.request("tools/call", json!({"name": "search_tools", "arguments": {"query": "echo"}})).await?;
    assert_eq!(over["error"]["code"], -32015, "{over}");
    Ok(())
}

#[tokio::test]
async fn auto_searches_only_catalogs_past_the_threshold() -> Result<()> {
    const SMALL: &str = "small-key-0123456789abcdef00";
    let sections = format!(
        "{}\n[auth]\n[[auth.clients]]\nname = \"small\"\napi_key = \"{SMALL}\"\ntools = [\"fx__echo\", \"fx__test_*\"]\n\n\
         [[auth.clients]]\nname = \"big\"\napi_key = \"big-key-0123456789abcdef0000\"\n",
        disclosure("auto")
    );
    let gw = Toolgate::start_with(&two_fixtures(""), &sections).await?;
    let mut big = Client::with_bearer(&gw.url, "big-key-0123456789abcdef0000")?;
    big.initialize(json!({})).await?;
    assert_eq!(
        names(&big.result("tools/list", json!({})).await?),
        ["fx__echo", "search_tools", "call_tool", "describe_tools"]
    );
    let mut small = Client::with_bearer(&gw.url, SMALL)?;
    small.initialize(json!({})).await?;
    let all = names(&small.result("tools/list", json!({})).await?);
    assert!(all.len() < 40 && all.contains(&"fx__test_simple_text".to_owned()), "{all:?}");
    assert!(!all.contains(&"search_tools".to_owned()), "{all:?}");
    Ok(())
}

#[tokio::test]
async fn sessionless_and_stdio_clients_search_too() -> Result<()> {
    // A 2026-07-28 request over HTTP.
    let gw = Toolgate::start_with(&two_fixtures("mode = \"passthrough\""), &disclosure("search")).await?;
    let c = gw.client();
    let list = modern_body("search-test", json!(1), "tools/list", json!({}));
    let reply = c.send(modern_post(&c, &list, None)).await?;
    let listed = reply.response(&json!(1)).cloned().ok_or_else(|| anyhow!("{reply:?}"))?;
    assert_eq!(names(&listed["result"]), ["fx__echo", "search_tools", "call_tool", "describe_tools"], "{listed}");
    let search = modern_body(
        "search-test",
        json!(2),
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "echo"}}),
    );
    let reply = c.send(modern_post(&c, &search, Some("search_tools"))).await?;
    let answer = reply.response(&json!(2)).cloned().ok_or_else(|| anyhow!("{reply:?}"))?;
    assert!(found(&answer["result"]).iter().any(|n| n.ends_with("__echo")), "{answer}");
    // Passthrough tools are described through the describe tool in this mode.
    let describe = modern_body(
        "search-test",
        json!(3),
        "tools/call",
        json!({"name": "describe_tools", "arguments": {"tools": ["fy__echo"]}}),
    );
    let reply = c.send(modern_post(&c, &describe, Some("describe_tools"))).await?;
    let described = reply.response(&json!(3)).cloned().ok_or_else(|| anyhow!("{reply:?}"))?;
    assert!(text_of(&described["result"]).contains("inputSchema"), "{described}");

    // A stdio session.
    let config = format!("{}\n{}", disclosure("search"), two_fixtures(""));
    let mut stdio = StdioGateway::start(&config).await?;
    stdio
        .request(
            1,
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    let (listed, _) = stdio.request(2, "tools/list", json!({})).await?;
    assert_eq!(names(&listed["result"]), ["fx__echo", "search_tools", "call_tool", "describe_tools"]);
    let (result, _) = stdio
        .request(3, "tools/call", json!({"name": "search_tools", "arguments": {"query": "add two numbers"}}))
        .await?;
    assert!(!found(&result["result"]).is_empty(), "{result}");
    Ok(())
}
