//! The scenario every client runs, on one connection, against toolgate in
//! front of two upstreams, one `progressive` and one `passthrough`:
//!
//! 0. `tools/list`: the progressive upstream's tools in minimal form, the
//!    passthrough upstream's verbatim, `describe_tools` last;
//! 1. `resources/list`: the descriptions resource first;
//! 2. a call of progressive tool A before fetching: refused, as a tool error;
//! 3. `resources/read` of `resource:///tool_descriptions?tools=A`: A's full definition;
//! 4. the call of A again: the upstream's real result;
//! 5. `describe_tools` for progressive tool B: B's full definition;
//! 6. the call of B: the upstream's real result;
//! 7. a call of passthrough tool C, never fetched: the upstream's real result.

use anyhow::{Context as _, Result, anyhow, ensure};
use serde_json::{Value, json};

use super::peers::{ToolCase, Upstream};

/// The exposed name of `tool` of `upstream` (two upstreams: prefixed).
pub fn exposed(upstream: Upstream, tool: &str) -> String {
    format!("{}__{tool}", upstream.name())
}

fn descriptions_uri(tool: &str) -> String {
    format!("resource:///tool_descriptions?tools={tool}")
}

/// The probe script of the scenario.
pub fn steps(progressive: Upstream, passthrough: Upstream) -> Value {
    let (a, b, c) = (progressive.first(), progressive.second(), passthrough.first());
    let (a_name, b_name, c_name) =
        (exposed(progressive, a.tool), exposed(progressive, b.tool), exposed(passthrough, c.tool));
    json!([
        {"op": "list_tools"},
        {"op": "list_resources"},
        {"op": "call_tool", "name": a_name, "arguments": a.arguments},
        {"op": "read_resource", "uri": descriptions_uri(&a_name)},
        {"op": "call_tool", "name": a_name, "arguments": a.arguments},
        {"op": "call_tool", "name": "describe_tools", "arguments": {"tools": [b_name]}},
        {"op": "call_tool", "name": b_name, "arguments": b.arguments},
        {"op": "call_tool", "name": c_name, "arguments": c.arguments},
    ])
}

/// The result of step `i` (a failed step is an Err).
fn step(report: &Value, i: usize) -> Result<&Value> {
    let s = &report["steps"][i];
    ensure!(s["ok"] == true, "step {i} failed: {s}");
    Ok(&s["result"])
}

/// The full definition of `name` in a descriptions body (resource text or
/// `describe_tools` text), checked against what the upstream documents.
fn full_definition(text: &str, name: &str, case: &ToolCase) -> Result<()> {
    let body: Value = serde_json::from_str(text).with_context(|| format!("descriptions body is not JSON: {text}"))?;
    let def = &body[name];
    ensure!(def["name"] == name, "no definition of {name}: {body}");
    for param in case.params {
        ensure!(
            def["inputSchema"]["properties"][param]["description"].is_string(),
            "the full schema documents {param}: {def}"
        );
    }
    ensure!(def["description"].as_str().is_some_and(|d| !d.is_empty()), "{def}");
    Ok(())
}

/// Checks a report of the scenario.
pub fn check(report: &Value, progressive: Upstream, passthrough: Upstream) -> Result<()> {
    let (a, b, c) = (progressive.first(), progressive.second(), passthrough.first());
    let (a_name, b_name, c_name) =
        (exposed(progressive, a.tool), exposed(progressive, b.tool), exposed(passthrough, c.tool));
    // Every client asks for the latest revision it knows, 2025-11-25 for all of them.
    ensure!(report["negotiated_version"] == "2025-11-25", "negotiated: {}", report["negotiated_version"]);
    ensure!(report["server_info"]["name"] == "toolgate", "server_info: {}", report["server_info"]);

    // 0. Minimal forms for the progressive upstream, verbatim ones for the other.
    let tools = step(report, 0)?["tools"].as_array().cloned().unwrap_or_default();
    let find =
        |name: &str| tools.iter().find(|t| t["name"] == name).ok_or_else(|| anyhow!("{name} is not listed: {tools:?}"));
    let prefix = format!("{}__", progressive.name());
    let minimal: Vec<&Value> =
        tools.iter().filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with(&prefix))).collect();
    ensure!(minimal.len() >= 2, "the progressive upstream's tools: {tools:?}");
    for t in minimal {
        ensure!(t["inputSchema"] == json!({"type": "object"}), "minimal form: {t}");
        ensure!(t.get("outputSchema").is_none(), "minimal form: {t}");
        let short = t["description"].as_str().unwrap_or("");
        ensure!(!short.is_empty() && short.chars().count() <= 160, "minimal description: {t}");
    }
    find(&a_name)?;
    find(&b_name)?;
    let verbatim = find(&c_name)?;
    for param in c.params {
        ensure!(verbatim["inputSchema"]["properties"][param].is_object(), "passthrough is verbatim: {verbatim}");
    }
    ensure!(tools.last().map(|t| &t["name"]) == Some(&json!("describe_tools")), "describe_tools last: {tools:?}");

    // 1. The descriptions resource leads the resource list.
    let resources = step(report, 1)?["resources"].as_array().cloned().unwrap_or_default();
    ensure!(
        resources.first().map(|r| &r["uri"]) == Some(&json!("resource:///tool_descriptions")),
        "resources: {resources:?}"
    );

    // 2. Refused before fetching, as a tool error the model can read.
    let refused = step(report, 2)?;
    ensure!(refused["isError"] == true, "refusal: {refused}");
    let error: Value = serde_json::from_str(refused["content"][0]["text"].as_str().unwrap_or(""))
        .with_context(|| format!("refusal text is not JSON: {refused}"))?;
    ensure!(error["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED", "{error}");
    ensure!(error["error"]["resource_uri"] == descriptions_uri(&a_name), "{error}");

    // 3. The full definition from the resource.
    let read = step(report, 3)?;
    let content = &read["contents"][0];
    ensure!(content["uri"] == descriptions_uri(&a_name) && content["mimeType"] == "application/json", "{read}");
    full_definition(content["text"].as_str().unwrap_or(""), &a_name, &a)?;

    // 4. The call goes through and the upstream's result comes back.
    (a.check)(step(report, 4)?).with_context(|| format!("{a_name} after fetching"))?;

    // 5-6. The same through describe_tools.
    let described = step(report, 5)?;
    ensure!(described["isError"] != true, "describe_tools: {described}");
    full_definition(described["content"][0]["text"].as_str().unwrap_or(""), &b_name, &b)?;
    (b.check)(step(report, 6)?).with_context(|| format!("{b_name} after describe_tools"))?;

    // 7. Passthrough: called without fetching anything.
    (c.check)(step(report, 7)?).with_context(|| format!("{c_name} (passthrough)"))?;
    Ok(())
}
