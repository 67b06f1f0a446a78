//! Arguments checked against the tool's full `inputSchema` at the gate
//! (`validate_arguments`), on the real binary in front of the fixture's
//! validation tools (`--validation-tools`): an invalid call is a tool error
//! naming every failing path and never reaches the upstream, `$schema`
//! picks the draft, `format` is not asserted, a broken schema is not
//! checked (and warned about once), the switches per upstream, per tool and
//! across a reload, and the counter.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::common::*;
use crate::metrics::scrape;

/// How long a reload (and the restart of the upstream it changes) may take
/// on a loaded machine.
const WITHIN: Duration = Duration::from_secs(30);

const VALIDATION_TOOLS: &[&str] = &["--validation-tools"];

/// The `(path, keyword)` of every error a refusal lists, sorted.
fn failures(result: &Value) -> Vec<(String, String)> {
    let body = json_of(result);
    let mut found: Vec<(String, String)> = body["error"]["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["path"].as_str().unwrap_or("?").to_owned(), e["keyword"].as_str().unwrap_or("?").to_owned()))
        .collect();
    found.sort();
    found
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(p, k)| ((*p).to_owned(), (*k).to_owned())).collect()
}

/// Asserts `result` is an `INVALID_ARGUMENTS` refusal of `tool` listing
/// exactly `expected`.
fn assert_refused(result: &Value, tool: &str, expected: &[(&str, &str)]) {
    assert_eq!(result["isError"], true, "a tool error: {result}");
    let body = json_of(result);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS", "{body}");
    assert_eq!(body["error"]["tool"], tool, "{body}");
    assert_eq!(failures(result), pairs(expected), "{body}");
}

/// Asserts the upstream answered `result`: the arguments it received.
fn assert_reached(result: &Value, arguments: &Value) {
    assert!(result.get("isError").is_none_or(|e| e == false), "the upstream answered: {result}");
    assert_eq!(result["structuredContent"]["received"], *arguments, "{result}");
}

/// How many calls of each validation tool the session's upstream process took.
async fn calls_seen(c: &Client, tool: &str) -> Result<Value> {
    let result = c.call_tool(tool, json!({})).await?;
    let calls = result["structuredContent"]["calls"].clone();
    if !calls.is_object() {
        bail!("{tool} failed: {result}");
    }
    Ok(calls)
}

#[tokio::test]
async fn an_invalid_call_names_every_failing_path_and_never_reaches_the_upstream() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", VALIDATION_TOOLS, "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let invalid = json!({
        "priority": "urgent",
        "owner": {"email": 7, "extra": true},
        "labels": ["a", 2, "c", "d"],
        "estimate": 0,
        "typo": 1
    });

    // The gate first: an ungranted call is told to fetch the description,
    // whatever its arguments.
    let refused = c.call_tool("fixture_form", invalid.clone()).await?;
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");

    c.read_descriptions("fixture_form,fixture_calls_seen").await?;
    let refused = c.call_tool("fixture_form", invalid).await?;
    assert_refused(
        &refused,
        "fixture_form",
        &[
            ("", "additionalProperties"),
            ("", "required"),
            ("/estimate", "minimum"),
            ("/labels", "maxItems"),
            ("/labels/1", "type"),
            ("/owner", "additionalProperties"),
            ("/owner", "required"),
            ("/owner/email", "type"),
            ("/priority", "enum"),
        ],
    );
    let body = json_of(&refused);
    let priority = body["error"]["errors"].as_array().unwrap().iter().find(|e| e["path"] == "/priority").unwrap();
    assert_eq!(priority["expected"], json!(["low", "normal", "high"]), "the schema's part: {priority}");
    assert!(text_of(&refused).len() <= 4096, "bounded");

    // No `arguments` is `{}`.
    let missing = c.result("tools/call", json!({"name": "fixture_form"})).await?;
    assert_refused(&missing, "fixture_form", &[("", "required"), ("", "required")]);
    let expected = json!({"required": ["title", "priority"]});
    assert_eq!(json_of(&missing)["error"]["errors"][0]["expected"], expected["required"]);

    assert_eq!(calls_seen(&c, "fixture_calls_seen").await?["fixture_form"], 0, "the upstream saw no call");

    // A valid call goes through, and `format` is not asserted.
    let valid = json!({
        "title": "The build is red",
        "priority": "high",
        "owner": {"team": "core", "email": "not an address"},
        "due": "next week",
        "estimate": 3
    });
    assert_reached(&c.call_tool("fixture_form", valid.clone()).await?, &valid);
    assert_eq!(calls_seen(&c, "fixture_calls_seen").await?["fixture_form"], 1);

    // Counted per upstream and tool; the client's request is a tool error
    // toolgate answered itself.
    let s = scrape(&format!("http://127.0.0.1:{}/metrics", gw.port()), None).await?;
    assert_eq!(s.get("toolgate_argument_errors_total", &[("upstream", "fx"), ("tool", "fixture_form")]), Some(2.0));
    let tool_errors = [("method", "tools/call"), ("upstream", ""), ("outcome", "tool_error")];
    assert_eq!(s.count("toolgate_requests_total", &tool_errors), 2.0);
    Ok(())
}

#[tokio::test]
async fn the_schema_draft_is_honoured() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", VALIDATION_TOOLS, "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fixture_draft7").await?;

    // draft-07: `items` as a tuple, `additionalItems`, `dependencies`.
    let valid = json!({"card": "4111", "billing_address": "1 Main St", "point": [1, 2.5]});
    assert_reached(&c.call_tool("fixture_draft7", valid.clone()).await?, &valid);
    let refused = c.call_tool("fixture_draft7", json!({"card": "4111", "point": [1, "2", 3]})).await?;
    assert_refused(
        &refused,
        "fixture_draft7",
        &[("", "dependencies"), ("/point", "additionalItems"), ("/point/1", "type")],
    );
    Ok(())
}

#[tokio::test]
async fn a_broken_schema_is_not_checked_and_is_warned_about_once() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", VALIDATION_TOOLS, "sharing = \"shared\"")).await?;
    for _ in 0..2 {
        let c = Client::connected(&gw.url, json!({})).await?;
        c.read_descriptions("fixture_broken_schema").await?;
        for arguments in [json!({"a": 1}), json!({})] {
            assert_reached(&c.call_tool("fixture_broken_schema", arguments.clone()).await?, &arguments);
        }
    }
    let logs = gw.logs();
    let warnings: Vec<&str> = logs.lines().filter(|l| l.contains("inputSchema does not compile")).collect();
    assert_eq!(warnings.len(), 1, "warned once: {warnings:#?}");
    assert!(warnings[0].contains("WARN") && warnings[0].contains("fixture_broken_schema"), "{}", warnings[0]);
    let s = scrape(&format!("http://127.0.0.1:{}/metrics", gw.port()), None).await?;
    assert_eq!(s.count("toolgate_argument_errors_total", &[("tool", "fixture_broken_schema")]), 0.0);
    Ok(())
}

#[tokio::test]
async fn the_switches_per_upstream_and_per_tool() -> Result<()> {
    let per_tool = |on: bool| format!("[upstream.tools.fixture_draft7]\nvalidate_arguments = {on}");
    let upstreams = [
        // passthrough: off by default.
        fixture_upstream("pass", VALIDATION_TOOLS, "mode = \"passthrough\""),
        // passthrough, switched on, but for one tool.
        fixture_upstream(
            "on",
            VALIDATION_TOOLS,
            &format!("mode = \"passthrough\"\nvalidate_arguments = true\n{}", per_tool(false)),
        ),
        // progressive, switched off, but for one tool.
        fixture_upstream("off", VALIDATION_TOOLS, &format!("validate_arguments = false\n{}", per_tool(true))),
    ];
    let gw = Toolgate::start(&upstreams.concat()).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("off__fixture_form,off__fixture_draft7").await?;
    let form = json!({"priority": "urgent"});
    let draft7 = json!({"point": ["x"]});

    assert_reached(&c.call_tool("pass__fixture_form", form.clone()).await?, &form);
    assert_reached(&c.call_tool("pass__fixture_draft7", draft7.clone()).await?, &draft7);

    let refused = c.call_tool("on__fixture_form", form.clone()).await?;
    assert_refused(&refused, "on__fixture_form", &[("", "required"), ("/priority", "enum")]);
    assert_reached(&c.call_tool("on__fixture_draft7", draft7.clone()).await?, &draft7);

    assert_reached(&c.call_tool("off__fixture_form", form.clone()).await?, &form);
    let refused = c.call_tool("off__fixture_draft7", draft7).await?;
    assert_refused(&refused, "off__fixture_draft7", &[("/point/0", "type")]);
    Ok(())
}

/// Replaces the file as editors do: a new file renamed over the old one.
fn replace_file(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("toml.new");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[tokio::test]
async fn a_reload_changes_the_switch() -> Result<()> {
    const SERVER: &str = "[server]\nlisten = \"127.0.0.1:0\"\n";
    let upstream = |extra: &str| fixture_upstream("fx", VALIDATION_TOOLS, extra);
    let gw = Toolgate::start_raw(&format!("{SERVER}{}", upstream(""))).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    c.read_descriptions("fixture_form").await?;
    let form = json!({"priority": "urgent"});
    let refused = c.call_tool("fixture_form", form.clone()).await?;
    assert_refused(&refused, "fixture_form", &[("", "required"), ("/priority", "enum")]);

    replace_file(&gw.config_path, &format!("{SERVER}{}", upstream("validate_arguments = false")))?;
    gw.wait_log("configuration reloaded: upstreams restarted: fx", WITHIN).await?;
    // The restarted upstream takes the call once it is up (its tools, and
    // so the session's grant, are unchanged).
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let result = c.call_tool("fixture_form", form.clone()).await?;
        if result["structuredContent"]["received"] == form {
            break;
        }
        let body = json_of(&result);
        assert_ne!(body["error"]["code"], "INVALID_ARGUMENTS", "the switch is off now: {result}");
        if tokio::time::Instant::now() > deadline {
            bail!("the call never went through: {result}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let logs = gw.logs();
    logs.lines().find(|l| l.contains("configuration reloaded")).context("reloaded")?;
    Ok(())
}
