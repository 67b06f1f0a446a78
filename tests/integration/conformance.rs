//! The conformance scenarios a progressive toolgate fails
//! (tests/conformance/progressive-expected-failures.yml) fail only because
//! the suite calls tools without fetching their descriptions. Here each of
//! those calls is made the way the workflow intends, through a progressive
//! toolgate in front of the fixture over stdio and over Streamable HTTP:
//! refused first, then `resource:///tool_descriptions?tools=<tool>`, then the
//! call, checking what the suite's scenario checks.

use anyhow::{Context as _, Result, anyhow, ensure};
use serde_json::{Value, json};

use crate::common::*;

/// Each expected failure of the progressive runs and the fixture tool its
/// scenario calls; every one is exercised below.
const EXPECTED_FAILURES: &[(&str, &str)] = &[
    ("tools-call-image", "test_image_content"),
    ("tools-call-audio", "test_audio_content"),
    ("tools-call-embedded-resource", "test_embedded_resource"),
    ("tools-call-mixed-content", "test_multiple_content_types"),
    ("tools-call-with-logging", "test_tool_with_logging"),
    ("tools-call-with-progress", "test_tool_with_progress"),
    ("tools-call-sampling", "test_sampling"),
    ("tools-call-elicitation", "test_elicitation"),
    ("elicitation-sep1034-defaults", "test_elicitation_sep1034_defaults"),
    ("elicitation-sep1330-enums", "test_elicitation_sep1330_enums"),
    ("json-schema-2020-12", "json_schema_2020_12_tool"),
];

/// How the fixture is connected to toolgate.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    Stdio,
    Http,
}

const UPSTREAMS: [Upstream; 2] = [Upstream::Stdio, Upstream::Http];

/// A progressive toolgate (the default mode) in front of the fixture; the
/// HTTP fixture process, when there is one, lives as long as the returned
/// value.
async fn progressive(upstream: Upstream) -> Result<(Toolgate, Option<Proc>)> {
    match upstream {
        Upstream::Stdio => Ok((Toolgate::start(&fixture_upstream("fx", &[], "")).await?, None)),
        Upstream::Http => {
            let (fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
            Ok((Toolgate::start(&http_upstream("fx", &url, "")).await?, Some(fixture)))
        }
    }
}

/// A session with `capabilities` that first sees `tool` refused (what the
/// suite sees), then fetches its description; returns the session and the
/// tool's full definition from the resource.
async fn unlocked(gw: &Toolgate, capabilities: Value, tool: &str, arguments: Value) -> Result<(Client, Value)> {
    let c = Client::connected(&gw.url, capabilities).await?;
    let refused = c.call_tool(tool, arguments).await?;
    ensure!(refused["isError"] == true, "{tool} before its description: {refused}");
    let error = json_of(&refused);
    ensure!(error["error"]["code"] == "TOOL_DESCRIPTION_REQUIRED", "{tool}: {refused}");
    ensure!(error["error"]["resource_uri"] == format!("resource:///tool_descriptions?tools={tool}"), "{refused}");

    let body = c.read_descriptions(tool).await?;
    let definition = body.get(tool).cloned().ok_or_else(|| anyhow!("no definition of {tool}: {body}"))?;
    ensure!(definition["name"] == tool && definition["inputSchema"].is_object(), "{definition}");
    Ok((c, definition))
}

/// What one `tools/call` produced on its response stream.
struct Call {
    result: Value,
    /// Server-to-client requests, in order (each was answered).
    requests: Vec<Value>,
    /// Notifications, in order.
    notifications: Vec<Value>,
}

/// Calls `tool` and reads its response stream to the end, answering every
/// server-to-client request with `answer(request)`.
async fn call(c: &Client, tool: &str, params: Value, answer: impl Fn(&Value) -> Value) -> Result<Call> {
    let id = json!(format!("call-{tool}"));
    let mut params = params;
    params["name"] = json!(tool);
    let mut stream = c.open(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})).await?;
    let (mut requests, mut notifications) = (Vec::new(), Vec::new());
    loop {
        let message = stream.next().await.with_context(|| format!("reading the answer to {tool}"))?;
        if message.get("method").is_some() && message.get("id").is_some() {
            let status = c.respond(&message["id"], answer(&message)).await?;
            ensure!(status == reqwest::StatusCode::ACCEPTED, "answering {message}: HTTP {status}");
            requests.push(message);
        } else if message.get("method").is_some() {
            notifications.push(message);
        } else if message["id"] == id {
            let result = message.get("result").cloned().ok_or_else(|| anyhow!("{tool} failed: {message}"))?;
            return Ok(Call { result, requests, notifications });
        }
    }
}

fn no_requests(request: &Value) -> Value {
    panic!("unexpected server-to-client request: {request}")
}

/// The baseline file lists exactly the scenarios this module covers, so a new
/// expected failure cannot be added without showing why it is one.
#[test]
fn the_baseline_lists_exactly_the_scenarios_covered_here() {
    let path = repo_path("tests/conformance/progressive-expected-failures.yml");
    let text = std::fs::read_to_string(&path).expect("the baseline file exists");
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .map(|entry| entry.split('#').next().unwrap_or_default().trim())
        .collect();
    let covered: Vec<&str> = EXPECTED_FAILURES.iter().map(|(scenario, _)| *scenario).collect();
    assert_eq!(listed, covered, "{} and EXPECTED_FAILURES disagree", path.display());
}

/// `tools-call-image`, `-audio`, `-embedded-resource`, `-mixed-content`; and
/// `tools-call-simple-text` and `tools-call-error`, which the progressive
/// runs pass only on the refusal itself (a text result with `isError`).
#[tokio::test]
async fn content_tools_answer_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;

        let (c, _) = unlocked(&gw, json!({}), "test_image_content", json!({})).await?;
        let r = c.call_tool("test_image_content", json!({})).await?;
        let image = &r["content"][0];
        assert_eq!((&image["type"], &image["mimeType"]), (&json!("image"), &json!("image/png")), "{upstream:?}: {r}");
        assert!(image["data"].as_str().is_some_and(|d| d.starts_with("iVBORw0KGgo")), "a PNG: {r}");

        let (c, _) = unlocked(&gw, json!({}), "test_audio_content", json!({})).await?;
        let r = c.call_tool("test_audio_content", json!({})).await?;
        let audio = &r["content"][0];
        assert_eq!((&audio["type"], &audio["mimeType"]), (&json!("audio"), &json!("audio/wav")), "{upstream:?}: {r}");
        assert!(audio["data"].as_str().is_some_and(|d| d.starts_with("UklGR")), "a RIFF/WAV: {r}");

        let (c, _) = unlocked(&gw, json!({}), "test_embedded_resource", json!({})).await?;
        let r = c.call_tool("test_embedded_resource", json!({})).await?;
        assert_eq!(
            r["content"],
            json!([{"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                                     "text": "This is an embedded resource content."}}]),
            "{upstream:?}"
        );

        let (c, _) = unlocked(&gw, json!({}), "test_multiple_content_types", json!({})).await?;
        let r = c.call_tool("test_multiple_content_types", json!({})).await?;
        let types: Vec<&str> = r["content"].as_array().unwrap().iter().filter_map(|i| i["type"].as_str()).collect();
        assert_eq!(types, ["text", "image", "resource"], "{upstream:?}: {r}");
        assert_eq!(r["content"][2]["resource"]["text"], r#"{"test":"data","value":123}"#);

        let (c, _) = unlocked(&gw, json!({}), "test_simple_text", json!({})).await?;
        let r = c.call_tool("test_simple_text", json!({})).await?;
        assert_eq!(r, json!({"content": [{"type": "text", "text": "This is a simple text response for testing."}]}));

        let (c, _) = unlocked(&gw, json!({}), "test_error_handling", json!({})).await?;
        let r = c.call_tool("test_error_handling", json!({})).await?;
        assert_eq!(r["isError"], true, "{upstream:?}: {r}");
        assert_eq!(text_of(&r), "This tool intentionally returns an error for testing", "the tool's own error");
    }
    Ok(())
}

/// `tools-call-with-logging`: with the level at debug, at least 3
/// `notifications/message` arrive on the call's stream, before its result.
#[tokio::test]
async fn logging_tool_notifies_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let (c, _) = unlocked(&gw, json!({}), "test_tool_with_logging", json!({})).await?;
        assert_eq!(c.result("logging/setLevel", json!({"level": "debug"})).await?, json!({}));
        let call = call(&c, "test_tool_with_logging", json!({"arguments": {}}), no_requests).await?;
        assert_eq!(text_of(&call.result), "Tool with logging executed successfully");
        let logs: Vec<&Value> = call.notifications.iter().filter(|n| n["method"] == "notifications/message").collect();
        assert!(logs.len() >= 3, "{upstream:?}: {:?}", call.notifications);
        let texts: Vec<&str> = logs.iter().filter_map(|n| n["params"]["data"].as_str()).collect();
        for expected in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
            assert!(texts.contains(&expected), "{upstream:?}: {expected:?} in {texts:?}");
        }
    }
    Ok(())
}

/// `tools-call-with-progress`: at least 3 progress notifications with the
/// request's token, non-decreasing, before the result.
#[tokio::test]
async fn progress_tool_reports_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let (c, _) = unlocked(&gw, json!({}), "test_tool_with_progress", json!({})).await?;
        let params = json!({"arguments": {}, "_meta": {"progressToken": "progress-test-1"}});
        let call = call(&c, "test_tool_with_progress", params, no_requests).await?;
        let progress: Vec<&Value> =
            call.notifications.iter().filter(|n| n["method"] == "notifications/progress").collect();
        assert_eq!(progress.len(), 3, "{upstream:?}: {:?}", call.notifications);
        let values: Vec<f64> = progress.iter().filter_map(|p| p["params"]["progress"].as_f64()).collect();
        assert_eq!(values, [0.0, 50.0, 100.0], "{upstream:?}");
        for p in &progress {
            assert_eq!(p["params"]["progressToken"], "progress-test-1", "the client's token comes back");
            assert_eq!(p["params"]["total"], 100);
        }
        // The fixture echoes the token it received: toolgate's own, per
        // upstream connection (it is restored on the way back, above).
        let seen = text_of(&call.result);
        assert!(!seen.is_empty() && seen != "0", "the upstream got a progress token: {}", call.result);
    }
    Ok(())
}

/// `tools-call-sampling`: the tool's `sampling/createMessage` reaches the
/// client with the prompt, and the client's answer comes back in the result.
#[tokio::test]
async fn sampling_tool_asks_the_client_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let args = json!({"prompt": "Test prompt for sampling"});
        let (c, _) = unlocked(&gw, json!({"sampling": {}}), "test_sampling", args.clone()).await?;
        let answer = |_: &Value| {
            json!({"role": "assistant", "content": {"type": "text", "text": "This is a test response from the client"},
                   "model": "test-model", "stopReason": "endTurn"})
        };
        let call = call(&c, "test_sampling", json!({"arguments": args}), answer).await?;
        assert_eq!(call.requests.len(), 1, "{upstream:?}: {:?}", call.requests);
        let request = &call.requests[0];
        assert_eq!(request["method"], "sampling/createMessage");
        assert_eq!(request["params"]["messages"][0]["content"]["text"], "Test prompt for sampling", "{request}");
        assert_eq!(request["params"]["maxTokens"], 100);
        assert_eq!(text_of(&call.result), "LLM response: This is a test response from the client", "{upstream:?}");
    }
    Ok(())
}

/// `tools-call-elicitation`: the tool's `elicitation/create` reaches the
/// client with the message and schema, and the accepted content comes back.
#[tokio::test]
async fn elicitation_tool_asks_the_client_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let args = json!({"message": "Please provide your information"});
        let (c, _) = unlocked(&gw, json!({"elicitation": {}}), "test_elicitation", args.clone()).await?;
        let answer = |_: &Value| json!({"action": "accept", "content": {"response": "Jane"}});
        let call = call(&c, "test_elicitation", json!({"arguments": args}), answer).await?;
        assert_eq!(call.requests.len(), 1, "{upstream:?}: {:?}", call.requests);
        let request = &call.requests[0];
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "Please provide your information");
        assert_eq!(request["params"]["requestedSchema"]["type"], "object");
        assert_eq!(request["params"]["requestedSchema"]["required"], json!(["response"]));
        assert_eq!(text_of(&call.result), r#"User response: action=accept, content={"response":"Jane"}"#);
    }
    Ok(())
}

/// `elicitation-sep1034-defaults`: every primitive field of the requested
/// schema reaches the client with its type and default.
#[tokio::test]
async fn sep1034_defaults_reach_the_client_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let tool = "test_elicitation_sep1034_defaults";
        let (c, _) = unlocked(&gw, json!({"elicitation": {}}), tool, json!({})).await?;
        let content = json!({"name": "Jane Smith", "age": 25, "score": 88, "status": "inactive", "verified": false});
        let call =
            call(&c, tool, json!({"arguments": {}}), |_| json!({"action": "accept", "content": content})).await?;
        assert_eq!(call.requests.len(), 1, "{upstream:?}: {:?}", call.requests);
        let props = &call.requests[0]["params"]["requestedSchema"]["properties"];
        for (field, kind, default) in [
            ("name", "string", json!("John Doe")),
            ("age", "integer", json!(30)),
            ("score", "number", json!(95.5)),
            ("status", "string", json!("active")),
            ("verified", "boolean", json!(true)),
        ] {
            assert_eq!(props[field]["type"], kind, "{upstream:?}: {field} in {props}");
            assert_eq!(props[field]["default"], default, "{upstream:?}: {field} in {props}");
        }
        assert_eq!(props["status"]["enum"], json!(["active", "inactive", "pending"]));
        assert!(text_of(&call.result).starts_with("Elicitation completed: action=accept"), "{}", call.result);
    }
    Ok(())
}

/// `elicitation-sep1330-enums`: the five enum variants reach the client in
/// their exact shapes.
#[tokio::test]
async fn sep1330_enums_reach_the_client_once_described() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let tool = "test_elicitation_sep1330_enums";
        let (c, _) = unlocked(&gw, json!({"elicitation": {}}), tool, json!({})).await?;
        let content = json!({"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
                             "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]});
        let call =
            call(&c, tool, json!({"arguments": {}}), |_| json!({"action": "accept", "content": content})).await?;
        assert_eq!(call.requests.len(), 1, "{upstream:?}: {:?}", call.requests);
        let props = &call.requests[0]["params"]["requestedSchema"]["properties"];
        // Untitled single: a plain enum, no oneOf / enumNames.
        assert_eq!(props["untitledSingle"]["enum"], json!(["option1", "option2", "option3"]));
        assert!(props["untitledSingle"].get("oneOf").is_none() && props["untitledSingle"].get("enumNames").is_none());
        // Titled single: oneOf of const/title, no enum.
        let one_of = props["titledSingle"]["oneOf"].as_array().expect("oneOf");
        assert!(one_of.iter().all(|o| o["const"].is_string() && o["title"].is_string()), "{one_of:?}");
        assert!(props["titledSingle"].get("enum").is_none());
        // Legacy: enum + enumNames of the same length.
        assert_eq!(props["legacyEnum"]["enumNames"], json!(["Option One", "Option Two", "Option Three"]));
        assert_eq!(props["legacyEnum"]["enum"].as_array().map(Vec::len), Some(3));
        // Multi-selects: arrays with items.enum / items.anyOf.
        assert_eq!(props["untitledMulti"]["type"], "array");
        assert_eq!(
            props["untitledMulti"]["items"],
            json!({"type": "string", "enum": ["option1", "option2", "option3"]})
        );
        assert_eq!(props["titledMulti"]["type"], "array");
        assert_eq!(props["titledMulti"]["items"]["anyOf"][0], json!({"const": "value1", "title": "First Choice"}));
        assert!(text_of(&call.result).starts_with("Elicitation completed: action=accept"), "{}", call.result);
    }
    Ok(())
}

/// `json-schema-2020-12` looks for `$schema`, `$defs` and
/// `additionalProperties` in `tools/list`. The minimal list replaces the
/// schema by design; the descriptions resource serves it untouched, the
/// tool takes arguments shaped by it, and toolgate refuses arguments it
/// does not accept (`validate_arguments`: its `anyOf` and `if`/`else`).
#[tokio::test]
async fn the_2020_12_schema_is_whole_in_the_descriptions_resource() -> Result<()> {
    for upstream in UPSTREAMS {
        let (gw, _fixture) = progressive(upstream).await?;
        let tool = "json_schema_2020_12_tool";
        let c = Client::connected(&gw.url, json!({})).await?;
        let tools = c.result("tools/list", json!({})).await?;
        let listed = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == tool).expect("listed").clone();
        assert_eq!(listed["inputSchema"], json!({"type": "object"}), "{upstream:?}: the minimal form, by design");

        let args = json!({"name": "Ada", "address": {"street": "1 Main St", "city": "Springfield"}});
        let (c, definition) = unlocked(&gw, json!({}), tool, args.clone()).await?;
        assert_eq!(
            definition["inputSchema"],
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                                      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"},
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false,
            }),
            "{upstream:?}: every keyword kept, in the upstream's order"
        );
        let order: Vec<&String> = definition["inputSchema"].as_object().unwrap().keys().collect();
        assert_eq!(
            order,
            ["$schema", "type", "$defs", "properties", "allOf", "if", "then", "else", "additionalProperties"]
        );

        // Neither phone nor email: refused at the gate, never sent upstream.
        let r = c.call_tool(tool, args).await?;
        let refusal = json_of(&r);
        assert_eq!(refusal["error"]["code"], "INVALID_ARGUMENTS", "{upstream:?}: {r}");
        let keywords: Vec<&str> =
            refusal["error"]["errors"].as_array().unwrap().iter().filter_map(|e| e["keyword"].as_str()).collect();
        assert_eq!(keywords, ["anyOf", "required"], "{upstream:?}: {r}");

        let args = json!({"name": "Ada", "address": {"street": "1 Main St", "city": "Springfield"}, "email": "a@b.c"});
        let r = c.call_tool(tool, args).await?;
        assert_eq!(
            text_of(&r),
            r#"JSON Schema 2020-12 tool called with: {"name":"Ada","address":{"street":"1 Main St","city":"Springfield"},"email":"a@b.c"}"#,
            "{upstream:?}"
        );
    }
    Ok(())
}
