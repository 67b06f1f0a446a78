//! The Python SDK client (mcp 2.3.0) in its default `auto` mode: it probes
//! `server/discover` first, which toolgate answers, so it speaks the
//! sessionless 2026-07-28 era, and then goes through the whole
//! progressive-disclosure workflow with the SDK's own request and result
//! types (the grants its reads earn outlive each request).

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::common::*;

/// The result of step `i` of a probe report (a failed step is an Err).
fn step(report: &Value, i: usize) -> Result<&Value> {
    let s = &report["steps"][i];
    if s["ok"] != true {
        return Err(anyhow!("step {i} failed: {s}"));
    }
    Ok(&s["result"])
}

/// Runs the workflow for `tool` through the SDK client and returns the
/// result of the authorized call, after checking every step before it.
async fn sdk_workflow(url: &str, tool: &str, arguments: Value) -> Result<Value> {
    let descriptions = format!("resource:///tool_descriptions?tools={tool}");
    let steps = json!([
        {"op": "list_tools"},
        {"op": "list_resources"},
        {"op": "list_resource_templates"},
        {"op": "call_tool", "name": tool, "arguments": arguments},
        {"op": "read_resource", "uri": descriptions},
        {"op": "call_tool", "name": tool, "arguments": arguments},
    ]);
    let report = client_probe(url, &[], &steps).await?;

    // The probe went to `server/discover` first (auto mode) and stayed modern.
    assert_eq!(report["mode_used"], "modern", "{report}");
    assert_eq!(report["negotiated_version"], "2026-07-28");
    assert_eq!(report["server_info"]["name"], "toolgate");

    let tools = step(&report, 0)?["tools"].as_array().cloned().unwrap_or_default();
    let listed = tools.iter().find(|t| t["name"] == tool).ok_or_else(|| anyhow!("{tool} not listed: {tools:?}"))?;
    assert_eq!(listed["inputSchema"], json!({"type": "object"}), "minimal form: {listed}");
    assert!(listed.get("outputSchema").is_none(), "minimal form: {listed}");
    let short = listed["description"].as_str().unwrap_or("");
    assert!(!short.is_empty() && short.chars().count() <= 160, "{short:?}");
    assert_eq!(tools.last().map(|t| &t["name"]), Some(&json!("describe_tools")));

    let resources = step(&report, 1)?["resources"].as_array().cloned().unwrap_or_default();
    assert_eq!(resources.first().map(|r| &r["uri"]), Some(&json!("resource:///tool_descriptions")), "{resources:?}");
    let templates = step(&report, 2)?["resourceTemplates"].as_array().cloned().unwrap_or_default();
    assert!(
        templates.iter().any(|t| t["uriTemplate"] == "resource:///tool_descriptions?tools={tools}"),
        "{templates:?}"
    );

    // Before fetching: a tool error the SDK hands over as a normal result.
    let refused = step(&report, 3)?;
    assert_eq!(refused["isError"], true, "{refused}");
    let error = json_of(refused);
    assert_eq!(error["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");
    assert_eq!(error["error"]["message"], format!("Tool '{tool}' requires fetching its description before use."));
    assert_eq!(error["error"]["resource_uri"], descriptions);

    // The full definition, read with the SDK's resource API.
    let read = step(&report, 4)?;
    assert_eq!(read["contents"][0]["uri"], descriptions);
    assert_eq!(read["contents"][0]["mimeType"], "application/json");
    let body: Value = serde_json::from_str(read["contents"][0]["text"].as_str().unwrap_or(""))?;
    assert_eq!(body[tool]["name"], tool, "{body}");
    assert!(body[tool]["inputSchema"]["properties"].is_object(), "the full input schema: {body}");
    assert!(
        body[tool]["description"].as_str().unwrap_or("").len() >= short.len(),
        "the full description is at least the short one: {body}"
    );
    Ok(step(&report, 5)?.clone())
}

#[tokio::test]
async fn sdk_client_goes_modern_and_follows_the_workflow_in_front_of_the_fixture() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let result = sdk_workflow(&gw.url, "echo", json!({"text": "through the Python SDK"})).await?;
    assert_eq!(result["content"], json!([{"type": "text", "text": "through the Python SDK"}]), "{result}");
    assert_ne!(result["isError"], true);
    Ok(())
}

#[tokio::test]
async fn sdk_client_goes_modern_and_follows_the_workflow_in_front_of_the_python_upstream() -> Result<()> {
    // Over HTTP: one Python process serves every session (startup is slow).
    let (_upstream, url) = python_http_upstream().await?;
    let gw = Toolgate::start(&http_upstream("py", &url, "")).await?;
    let result = sdk_workflow(&gw.url, "convert_currency", json!({"amount": 100, "from": "USD", "to": "EUR"})).await?;
    assert_eq!(result["content"], json!([{"type": "text", "text": "100.00 USD = 90.00 EUR"}]), "{result}");
    assert_eq!(result["structuredContent"], json!({"result": "100.00 USD = 90.00 EUR"}));
    assert_ne!(result["isError"], true);
    Ok(())
}
