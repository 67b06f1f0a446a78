//! The eight conformance criteria of the progressive-disclosure spec
//! (section 9), against a real upstream.

use anyhow::Result;
use serde_json::{Value, json};

use crate::common::*;

async fn fixture_gateway() -> Result<Toolgate> {
    Toolgate::start(&fixture_upstream("fx", &[], "")).await
}

#[tokio::test]
async fn criterion_1_tools_list_is_minimal() -> Result<()> {
    let gw = fixture_gateway().await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.len() > 10, "the fixture lists its tools: {tools:?}");
    let rich = tools.iter().find(|t| t["name"] == "fixture_rich_definition").expect("listed");
    // Kept: name, title, annotations (all of it), _meta. Simplified: description, inputSchema.
    assert_eq!(rich["title"], "Rich definition");
    assert_eq!(rich["annotations"]["x-annotation-extension"], "kept");
    assert_eq!(rich["_meta"]["nested"]["list"], json!([1, 2, 3]));
    assert_eq!(rich["inputSchema"], json!({"type": "object"}));
    for dropped in ["outputSchema", "execution", "icons", "x-vendor"] {
        assert!(rich.get(dropped).is_none(), "{dropped} is not part of the minimal form: {rich}");
    }
    for t in &tools {
        let d = t["description"].as_str().unwrap_or("");
        assert!(!d.is_empty() && d.chars().count() <= 160, "minimal description of {}: {d:?}", t["name"]);
    }
    assert_eq!(tools.last().unwrap()["name"], "describe_tools", "the fallback tool is listed last");
    Ok(())
}

#[tokio::test]
async fn criteria_2_to_5_the_descriptions_resource() -> Result<()> {
    let gw = fixture_gateway().await?;
    let c = Client::connected(&gw.url, json!({})).await?;

    // 2: listed, with the workflow.
    let resources = c.result("resources/list", json!({})).await?;
    let entry = &resources["resources"][0];
    assert_eq!(entry["uri"], "resource:///tool_descriptions");
    assert_eq!(entry["mimeType"], "application/json");
    assert!(entry["name"].as_str().unwrap().contains("Required"), "{entry}");
    let description = entry["description"].as_str().unwrap();
    assert!(description.contains("?tools=") && description.contains("CANNOT"), "{description}");
    let templates = c.result("resources/templates/list", json!({})).await?;
    assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "resource:///tool_descriptions?tools={tools}");

    // 3 + 4: ?tools= returns the full upstream definitions, every field kept.
    let body = c.read_descriptions("fixture_rich_definition,echo").await?;
    let rich = &body["fixture_rich_definition"];
    assert_eq!(rich["x-vendor"], json!({"feature": "keep-me", "version": 3}));
    assert_eq!(rich["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(rich["inputSchema"]["x-schema-extension"], json!({"kept": true}));
    assert!(rich["outputSchema"].is_object() && rich["icons"].is_array());
    assert_eq!(body["echo"]["inputSchema"]["required"], json!(["text"]));
    assert_eq!(body.as_object().unwrap().len(), 2, "only the requested tools: {body}");

    // Percent-encoding and spaces are understood; unknown names are reported.
    let body = c.read_descriptions("echo%2C%20nope").await?;
    assert_eq!(body["echo"]["name"], "echo");
    assert_eq!(body["nope"]["error"], "Tool 'nope' not found");
    assert!(body["nope"]["available_tools"].as_array().unwrap().contains(&json!("echo")));

    // 5: no selection → MISSING_TOOL_SELECTION, as content the model sees.
    for tools in ["", "%20,"] {
        let body = c.read_descriptions(tools).await?;
        assert_eq!(body["error"]["code"], "MISSING_TOOL_SELECTION", "for {tools:?}: {body}");
        assert_eq!(body["error"]["message"], "You must specify one or more tool names in the 'tools' parameter.");
    }
    let raw = c.result("resources/read", json!({"uri": "resource:///tool_descriptions"})).await?;
    assert_eq!(raw["contents"][0]["mimeType"], "application/json");
    assert_eq!(raw["contents"][0]["uri"], "resource:///tool_descriptions");
    Ok(())
}

#[tokio::test]
async fn criteria_6_to_8_calls_are_gated_per_session() -> Result<()> {
    let gw = fixture_gateway().await?;
    let a = Client::connected(&gw.url, json!({})).await?;
    let b = Client::connected(&gw.url, json!({})).await?;

    // 7: before fetching, TOOL_DESCRIPTION_REQUIRED as a tool error (HTTP 200, isError).
    let refused = a.call_tool("echo", json!({"text": "x"})).await?;
    assert_eq!(refused["isError"], true, "{refused}");
    let error = json_of(&refused);
    assert_eq!(error["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    assert_eq!(error["error"]["message"], "Tool 'echo' requires fetching its description before use.");
    assert_eq!(error["error"]["resource_uri"], "resource:///tool_descriptions?tools=echo");

    // 6: fetching authorizes exactly what was returned.
    a.read_descriptions("echo,nope").await?;
    assert_eq!(
        a.call_tool("echo", json!({"text": "hello"})).await?,
        json!({"content": [{"type": "text", "text": "hello"}]})
    );
    let other = a.call_tool("fixture_whoami", json!({})).await?;
    assert_eq!(json_of(&other)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "only the fetched tool is authorized");

    // 8: session b fetched nothing.
    let refused = b.call_tool("echo", json!({"text": "x"})).await?;
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");

    // The describe tool authorizes the same way, and is never gated itself.
    let described = b.call_tool("describe_tools", json!({"tools": ["echo"]})).await?;
    assert_eq!(json_of(&described)["echo"]["name"], "echo");
    assert_eq!(b.call_tool("echo", json!({"text": "b"})).await?["content"][0]["text"], "b");
    let empty = b.call_tool("describe_tools", json!({"tools": []})).await?;
    assert_eq!(empty["isError"], true);
    assert!(text_of(&empty).contains("MISSING_TOOL_SELECTION"), "{empty}");

    // An unknown tool is a protocol error, not a tool error.
    let unknown = a.request("tools/call", json!({"name": "no_such_tool", "arguments": {}})).await?;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    Ok(())
}

#[tokio::test]
async fn refused_calls_never_reach_the_upstream() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "sharing = \"shared\"")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    for _ in 0..3 {
        let r = c.call_tool("fixture_whoami", json!({})).await?;
        assert_eq!(json_of(&r)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    }
    c.read_descriptions("fixture_whoami").await?;
    let r = c.call_tool("fixture_whoami", json!({})).await?;
    assert_eq!(r["structuredContent"]["calls"], 1, "the three refused calls did not reach the upstream: {r}");
    Ok(())
}

#[tokio::test]
async fn passthrough_upstreams_are_listed_verbatim_and_not_gated() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "mode = \"passthrough\"")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let rich = tools.iter().find(|t| t["name"] == "fixture_rich_definition").expect("listed");
    assert_eq!(rich["x-vendor"]["feature"], "keep-me");
    assert!(rich["outputSchema"].is_object());
    assert!(!tools.iter().any(|t| t["name"] == "describe_tools"), "no fallback tool without progressive upstreams");
    assert_eq!(c.call_tool("echo", json!({"text": "free"})).await?["content"][0]["text"], "free");
    let resources = c.result("resources/list", json!({})).await?;
    assert!(
        !resources["resources"].as_array().unwrap().iter().any(|r| r["uri"] == "resource:///tool_descriptions"),
        "no descriptions resource when nothing is progressive"
    );
    Ok(())
}

#[tokio::test]
async fn several_upstreams_are_prefixed_and_routed() -> Result<()> {
    let upstreams = format!(
        "{}{}",
        fixture_upstream("alpha", &["--name", "alpha"], ""),
        fixture_upstream("beta", &["--name", "beta"], "prefix = \"b\"")
    );
    let gw = Toolgate::start(&upstreams).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"alpha__fixture_whoami") && names.contains(&"b__fixture_whoami"), "{names:?}");
    let first_beta = names.iter().position(|n| n.starts_with("b__")).unwrap();
    assert!(names[..first_beta].iter().all(|n| n.starts_with("alpha__")), "upstream order is list order: {names:?}");

    c.read_descriptions("alpha__fixture_whoami,b__fixture_whoami").await?;
    let a = c.call_tool("alpha__fixture_whoami", json!({})).await?;
    let b = c.call_tool("b__fixture_whoami", json!({})).await?;
    assert_eq!(a["structuredContent"]["server"], "alpha");
    assert_eq!(b["structuredContent"]["server"], "beta");
    Ok(())
}

#[tokio::test]
async fn the_demo_upstream_snapshots() -> Result<()> {
    let gw = Toolgate::start(&stdio_upstream("demo", toolgate_exe(), &["demo-upstream"], "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let list = c.result("tools/list", json!({})).await?;
    insta::assert_json_snapshot!("demo_minimal_tools_list", list);
    let names: Vec<String> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .filter(|n| n != "describe_tools")
        .collect();
    let first_two = names.iter().take(2).cloned().collect::<Vec<_>>().join(",");
    let body = c.read_descriptions(&first_two).await?;
    insta::assert_json_snapshot!("demo_descriptions_body", body);
    let missing = c.read_descriptions("").await?;
    insta::assert_json_snapshot!("demo_missing_selection", missing);
    // The last tool was not fetched, so the call is refused.
    let refused = c.call_tool(names.last().unwrap(), json!({}));
    let refused: Value = json_of(&refused.await?);
    assert_eq!(refused["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    insta::assert_json_snapshot!("demo_refusal", refused);
    Ok(())
}
