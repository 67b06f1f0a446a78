//! The scenario every client runs, on one connection, against toolgate in
//! front of two upstreams, one `progressive` and one `passthrough`:
//!
//! 1. `tools/list`: the progressive upstream's tools in minimal form, the
//!    passthrough upstream's verbatim, `describe_tools` last;
//! 2. `resources/list`: the descriptions resource first;
//! 3. a call of progressive tool A before fetching: refused, as a tool error;
//! 4. `resources/read` of `resource:///tool_descriptions?tools=A`: A's full definition;
//! 5. the call of A again: the upstream's real result;
//! 6. `describe_tools` for progressive tool B: B's full definition;
//! 7. the call of B: the upstream's real result;
//! 8. a call of passthrough tool C, never fetched: the upstream's real result.
//!
//! The core scenario leaves out 2, 6 and 7, for clients that pay a process
//! start per request (the Inspector's `mcpdo`).

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

/// One step of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    ListTools,
    ListResources,
    Refused,
    Read,
    CallA,
    DescribeB,
    CallB,
    Passthrough,
}

/// The revision and era a client must end up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// The latest revision the client knows: 2025-11-25, or 2026-07-28 for
    /// the Python SDK 2.x in its default `auto` mode (toolgate answers its
    /// `server/discover` probe).
    Latest,
    /// 2026-07-28, sessionless. `probed`: the client sent `server/discover`
    /// first (the TypeScript SDK v2 pinned), so it knows toolgate's
    /// `serverInfo`; a client told its era (the Python SDK's explicit mode)
    /// sends no probe and knows none.
    Modern { probed: bool },
}

/// The scenario for one pair of upstreams.
pub struct Scenario {
    pub progressive: Upstream,
    pub passthrough: Upstream,
    steps: &'static [Step],
    era: Era,
}

impl Scenario {
    /// Every step.
    pub fn full(progressive: Upstream, passthrough: Upstream) -> Scenario {
        use Step::*;
        Scenario {
            progressive,
            passthrough,
            steps: &[ListTools, ListResources, Refused, Read, CallA, DescribeB, CallB, Passthrough],
            era: Era::Latest,
        }
    }

    /// Every step, by a client in the 2026-07-28 era.
    pub fn modern(progressive: Upstream, passthrough: Upstream, probed: bool) -> Scenario {
        Scenario { era: Era::Modern { probed }, ..Scenario::full(progressive, passthrough) }
    }

    /// Without `resources/list` and the `describe_tools` path.
    pub fn core(progressive: Upstream, passthrough: Upstream) -> Scenario {
        use Step::*;
        Scenario { progressive, passthrough, steps: &[ListTools, Refused, Read, CallA, Passthrough], era: Era::Latest }
    }

    fn names(&self) -> (String, String, String) {
        let (p, q) = (self.progressive, self.passthrough);
        (exposed(p, p.first().tool), exposed(p, p.second().tool), exposed(q, q.first().tool))
    }

    /// The probe script (client_probe's format).
    pub fn script(&self) -> Value {
        let (a, b, c) = (self.progressive.first(), self.progressive.second(), self.passthrough.first());
        let (a_name, b_name, c_name) = self.names();
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|s| match s {
                Step::ListTools => json!({"op": "list_tools"}),
                Step::ListResources => json!({"op": "list_resources"}),
                Step::Refused | Step::CallA => json!({"op": "call_tool", "name": a_name, "arguments": a.arguments}),
                Step::Read => json!({"op": "read_resource", "uri": descriptions_uri(&a_name)}),
                Step::DescribeB => {
                    json!({"op": "call_tool", "name": "describe_tools", "arguments": {"tools": [b_name]}})
                }
                Step::CallB => json!({"op": "call_tool", "name": b_name, "arguments": b.arguments}),
                Step::Passthrough => json!({"op": "call_tool", "name": c_name, "arguments": c.arguments}),
            })
            .collect();
        Value::Array(steps)
    }

    /// The result of `which` in `report`: None when the scenario has no such
    /// step, an Err when it failed.
    fn result<'r>(&self, report: &'r Value, which: Step) -> Result<Option<&'r Value>> {
        let Some(i) = self.steps.iter().position(|s| *s == which) else { return Ok(None) };
        let s = &report["steps"][i];
        ensure!(s["ok"] == true, "step {which:?} failed: {s}");
        Ok(Some(&s["result"]))
    }

    /// Checks a report of the scenario.
    pub fn check(&self, report: &Value) -> Result<()> {
        let (a, b, c) = (self.progressive.first(), self.progressive.second(), self.passthrough.first());
        let (a_name, b_name, c_name) = self.names();
        let steps = report["steps"].as_array().map_or(0, Vec::len);
        ensure!(steps == self.steps.len(), "{steps} steps reported for {:?}", self.steps);
        let negotiated = report["negotiated_version"].as_str().unwrap_or_default();
        let server_info = &report["server_info"];
        match self.era {
            Era::Latest => {
                ensure!(["2025-11-25", "2026-07-28"].contains(&negotiated), "negotiated: {negotiated}");
                ensure!(server_info["name"] == "toolgate", "server_info: {server_info}");
            }
            Era::Modern { probed } => {
                ensure!(negotiated == "2026-07-28", "negotiated: {negotiated}");
                ensure!(report["mode_used"] == "modern", "era: {}", report["mode_used"]);
                if probed || !server_info.is_null() {
                    ensure!(server_info["name"] == "toolgate", "server_info: {server_info}");
                }
            }
        }

        // Minimal forms for the progressive upstream, verbatim ones for the other.
        if let Some(listed) = self.result(report, Step::ListTools)? {
            let tools = listed["tools"].as_array().cloned().unwrap_or_default();
            let find = |name: &str| {
                tools.iter().find(|t| t["name"] == name).ok_or_else(|| anyhow!("{name} is not listed: {tools:?}"))
            };
            let prefix = format!("{}__", self.progressive.name());
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
                ensure!(
                    verbatim["inputSchema"]["properties"][param].is_object(),
                    "passthrough is verbatim: {verbatim}"
                );
            }
            let last = tools.last().map(|t| &t["name"]);
            ensure!(last == Some(&json!("describe_tools")), "describe_tools last: {tools:?}");
        }

        // The descriptions resource leads the resource list.
        if let Some(listed) = self.result(report, Step::ListResources)? {
            let resources = listed["resources"].as_array().cloned().unwrap_or_default();
            let first = resources.first().map(|r| &r["uri"]);
            ensure!(first == Some(&json!("resource:///tool_descriptions")), "resources: {resources:?}");
        }

        // Refused before fetching, as a tool error the model can read.
        if let Some(refused) = self.result(report, Step::Refused)? {
            ensure!(refused["isError"] == true, "refusal: {refused}");
            let error: Value = serde_json::from_str(refused["content"][0]["text"].as_str().unwrap_or(""))
                .with_context(|| format!("refusal text is not JSON: {refused}"))?;
            ensure!(error["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED", "{error}");
            ensure!(error["error"]["resource_uri"] == descriptions_uri(&a_name), "{error}");
        }

        // The full definition from the resource, then the real call.
        if let Some(read) = self.result(report, Step::Read)? {
            let content = &read["contents"][0];
            let uri = descriptions_uri(&a_name);
            ensure!(content["uri"] == uri && content["mimeType"] == "application/json", "{read}");
            full_definition(content["text"].as_str().unwrap_or(""), &a_name, &a)?;
        }
        if let Some(result) = self.result(report, Step::CallA)? {
            (a.check)(result).with_context(|| format!("{a_name} after fetching"))?;
        }

        // The same through describe_tools.
        if let Some(described) = self.result(report, Step::DescribeB)? {
            ensure!(described["isError"] != true, "describe_tools: {described}");
            full_definition(described["content"][0]["text"].as_str().unwrap_or(""), &b_name, &b)?;
        }
        if let Some(result) = self.result(report, Step::CallB)? {
            (b.check)(result).with_context(|| format!("{b_name} after describe_tools"))?;
        }

        // Passthrough: called without fetching anything.
        if let Some(result) = self.result(report, Step::Passthrough)? {
            (c.check)(result).with_context(|| format!("{c_name} (passthrough)"))?;
        }
        Ok(())
    }
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
