use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::catalog::Extras;
use crate::config::{DisclosureConfig, UpstreamConfig};
use crate::disclosure;

fn upstream(v: Value) -> UpstreamConfig {
    let mut v = v;
    v["command"] = json!("server");
    serde_json::from_value(v).expect("valid upstream config")
}

fn input(config: UpstreamConfig, tools: Vec<Value>) -> UpstreamInput {
    UpstreamInput {
        config,
        tools: Ok(tools),
        server_info: Some(json!({"name": "srv", "version": "1.0.0"})),
        package: Some("@scope/srv".to_owned()),
        version: Some("1.0.0".to_owned()),
        extras: HashMap::new(),
    }
}

fn long_tool() -> Value {
    json!({
        "name": "read_text_file",
        "title": "Read Text File",
        "description": "Read the complete contents of a file from the file system as text. Handles various text \
                        encodings and provides detailed error messages if the file cannot be read. Use this tool \
                        when you need to examine the contents of a single file. Only works within allowed \
                        directories.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the file to read"},
                "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"},
                "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"}
            },
            "required": ["path"],
            "additionalProperties": false
        },
        "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}}},
        "annotations": {"readOnlyHint": true}
    })
}

fn short_tool() -> Value {
    json!({"name": "echo", "description": "Echoes back the input", "inputSchema": {"type": "object"}})
}

#[test]
fn counts_real_tokens() {
    assert_eq!(ENCODING, "o200k_base");
    assert_eq!(count_text(""), 0);
    assert_eq!(count_text("hello world"), 2);
    // Not characters divided by four: a long common word is one token, a
    // string of symbols is many.
    assert_eq!(count_text(" information"), 1);
    assert!(count_text("}{][)(|^") > 2);
    // Special-token markers are ordinary text.
    assert!(count_text("<|endoftext|>") > 1);
    assert_eq!(count_json(&json!({"a": [1, 2]})), count_text(r#"{"a":[1,2]}"#));
}

#[test]
fn the_projection_is_name_description_and_input_schema() {
    let projection = model_projection(&long_tool());
    let keys: Vec<&String> = projection.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "description", "input_schema"], "in this order, nothing else");
    assert_eq!(projection["input_schema"], long_tool()["inputSchema"]);
    assert_eq!(projection_tokens(&long_tool()), count_text(&projection.to_string()));
    // Missing fields are left out, not null.
    assert_eq!(model_projection(&json!({"name": "x", "title": "X"})), json!({"name": "x"}));
    assert_eq!(model_projection(&json!("not a tool")), json!({}));
    // Fields the model does not get do not count.
    let mut annotated = short_tool();
    annotated["annotations"] = json!({"readOnlyHint": true, "title": "A long title for the user interface"});
    annotated["_meta"] = json!({"vendor/x": "y"});
    assert_eq!(projection_tokens(&annotated), projection_tokens(&short_tool()));
}

#[test]
fn list_json_counts_the_whole_result() {
    let tools = [short_tool(), long_tool()];
    let expected = count_text(&json!({"tools": tools}).to_string());
    assert_eq!(list_json_tokens(&tools), expected);
    assert!(list_json_tokens(&tools) > projection_tokens(&tools[0]) + projection_tokens(&tools[1]));
    assert_eq!(list_json_tokens(&[]), count_text(r#"{"tools":[]}"#));
}

#[test]
fn measures_what_toolgate_serves() {
    let config = upstream(json!({"name": "fs"}));
    let section = measure("test", &DisclosureConfig::default(), &[input(config, vec![long_tool(), short_tool()])]);
    let up = &section.upstreams[0];
    assert_eq!(up.name, "fs");
    assert_eq!(up.error, None);
    let names: Vec<&str> = up.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_text_file", "echo"], "one upstream: names are not prefixed");

    let read = &up.tools[0];
    assert_eq!(read.full, projection_tokens(&long_tool()));
    let minimal = json!({
        "name": "read_text_file",
        "description": "Read the complete contents of a file from the file system as text.",
        "input_schema": {"type": "object"}
    });
    assert_eq!(read.minimal, count_json(&minimal));
    assert!(read.minimal * 4 < read.full, "{read:?}");

    // Fetching returns the full definition as the resource text.
    let body = json!({"read_text_file": long_tool()});
    assert_eq!(read.fetch, count_text(&body.to_string()));

    let totals = &up.totals;
    assert_eq!(totals.tools, 2);
    assert_eq!(totals.full, read.full + up.tools[1].full);
    assert_eq!(totals.minimal, read.minimal + up.tools[1].minimal);
    assert_eq!(totals.saving_percent, saving_percent(totals.full, totals.minimal));
    assert_eq!(totals.full_list_json, list_json_tokens(&[long_tool(), short_tool()]));
    assert_eq!(section.totals, *totals);

    let describe = disclosure::describe_tool_definition("describe_tools");
    assert_eq!(section.added.describe_tool, Some(projection_tokens(&describe)));
    assert_eq!(section.added.resource_entry, Some(count_json(&disclosure::resource_entry(Some("describe_tools")))));
    assert_eq!(section.added.template_entry, Some(count_json(&disclosure::template_entry(Some("describe_tools")))));
    assert_eq!(section.served_projection, totals.minimal + projection_tokens(&describe));
    assert!(section.served_list_json > section.served_projection);
}

#[test]
fn typical_sessions_add_fetched_descriptions_to_the_served_list() {
    let config = upstream(json!({"name": "fs"}));
    let section = measure("test", &DisclosureConfig::default(), &[input(config, vec![long_tool(), short_tool()])]);
    let tools = &section.upstreams[0].tools;
    let base = section.served_projection + section.added.resource_entry.unwrap();
    let fetched: Vec<usize> = section.sessions.iter().map(|s| s.fetched).collect();
    assert_eq!(fetched, [1, 2], "no session fetches more tools than there are");
    let one = &section.sessions[0];
    let mean = (tools[0].fetch + tools[1].fetch) as f64 / 2.0;
    assert_eq!(one.typical, base + mean.round() as usize);
    assert_eq!(one.worst, base + tools[0].fetch.max(tools[1].fetch));
    assert_eq!(one.baseline, section.totals.full);
    assert_eq!(one.saving_percent, saving_percent(one.baseline, one.typical));
    assert_eq!(section.sessions[1].worst, base + tools[0].fetch + tools[1].fetch);
}

#[test]
fn overrides_and_extras_count_where_they_land() {
    let config = upstream(json!({
        "name": "fs",
        "tools": {"read_text_file": {"description": "Read a text file.", "examples": ["a", "b"]}}
    }));
    let mut plain = input(config.clone(), vec![long_tool()]);
    plain.config.tools.clear();
    let plain = measure("plain", &DisclosureConfig::default(), &[plain]);
    let mut with_extras = input(config, vec![long_tool()]);
    with_extras.extras.insert(
        "read_text_file".to_owned(),
        Extras { usage_guidance: Some(json!("Prefer head.")), ..Extras::default() },
    );
    let tuned = measure("tuned", &DisclosureConfig::default(), &[with_extras]);
    let (p, t) = (&plain.upstreams[0].tools[0], &tuned.upstreams[0].tools[0]);
    assert_eq!(t.full, p.full, "extras are not part of the projection");
    let minimal =
        json!({"name": "read_text_file", "description": "Read a text file.", "input_schema": {"type": "object"}});
    assert_eq!(t.minimal, count_json(&minimal), "the override is what is listed");
    assert!(t.fetch > p.fetch, "extras are fetched: {} vs {}", t.fetch, p.fetch);
}

#[test]
fn several_upstreams_are_prefixed_and_failures_are_reported() {
    let fs = input(upstream(json!({"name": "fs"})), vec![long_tool()]);
    let mut down = input(upstream(json!({"name": "down"})), Vec::new());
    down.tools = Err("upstream `down` could not start".to_owned());
    let echo = input(upstream(json!({"name": "echo"})), vec![short_tool()]);
    let section = measure("multi", &DisclosureConfig::default(), &[fs, down, echo]);
    assert_eq!(section.upstreams[0].tools[0].name, "fs__read_text_file");
    assert_eq!(section.upstreams[1].error.as_deref(), Some("upstream `down` could not start"));
    assert!(section.upstreams[1].tools.is_empty());
    assert_eq!(section.upstreams[1].totals, Totals::default());
    assert_eq!(section.upstreams[2].tools[0].name, "echo__echo");
    assert_eq!(section.totals.tools, 2);
    assert_eq!(section.totals.full, section.upstreams[0].totals.full + section.upstreams[2].totals.full);
}

#[test]
fn passthrough_upstreams_cost_the_same_and_add_nothing() {
    let config = upstream(json!({"name": "raw", "mode": "passthrough"}));
    let section = measure("raw", &DisclosureConfig::default(), &[input(config, vec![long_tool()])]);
    let tool = &section.upstreams[0].tools[0];
    assert_eq!(tool.full, tool.minimal);
    assert_eq!(section.added, Added::default());
    assert!(section.sessions.is_empty());
    assert_eq!(section.served_projection, tool.full);
}

#[test]
fn reports_sum_sections_and_render_as_a_table_and_json() {
    let a =
        measure("a.json", &DisclosureConfig::default(), &[input(upstream(json!({"name": "a"})), vec![long_tool()])]);
    let b =
        measure("b.json", &DisclosureConfig::default(), &[input(upstream(json!({"name": "b"})), vec![short_tool()])]);
    let report = Report::new(vec![a.clone(), b.clone()]);
    assert_eq!(report.total.tools, 2);
    assert_eq!(report.total.full, a.totals.full + b.totals.full);
    assert_eq!(report.total.minimal, a.totals.minimal + b.totals.minimal);
    assert_eq!(report.total.saving_percent, saving_percent(report.total.full, report.total.minimal));

    let text = report.render(true);
    assert!(text.contains("encoding: o200k_base"), "{text}");
    assert!(text.contains("input_schema"), "{text}");
    assert!(text.contains("== a.json") && text.contains("== b.json"), "{text}");
    assert!(text.contains("a  @scope/srv 1.0.0  (serverInfo srv 1.0.0)"), "{text}");
    let row = text.lines().find(|l| l.starts_with("  read_text_file ")).expect("a row for the tool");
    let cells: Vec<&str> = row.split_whitespace().collect();
    let tool = &a.upstreams[0].tools[0];
    let expected = [tool.full.to_string(), tool.minimal.to_string(), "78.6%".to_owned(), tool.fetch.to_string()];
    assert_eq!(cells[1..], expected, "{row}");
    assert!(text.contains("describe tool") && text.contains("resource entry"), "{text}");
    assert!(text.contains("N=1: typical"), "{text}");
    assert!(text.contains("== all 2 catalogs: 2 tools"), "{text}");
    assert!(!report.render(false).contains(row), "--summary leaves out tool rows");

    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["encoding"], "o200k_base");
    assert_eq!(value["sections"][0]["upstreams"][0]["tools"][0]["name"], "read_text_file");
    assert_eq!(value["sections"][0]["upstreams"][0]["serverInfo"]["name"], "srv");
    assert_eq!(value["total"]["full"], report.total.full);
    assert_eq!(value["sections"][0]["sessions"][0]["fetched"], 1);
}

#[test]
fn saving_is_rounded_and_safe_on_empty_catalogs() {
    assert_eq!(saving_percent(0, 0), 0.0);
    assert_eq!(saving_percent(3, 1), 66.7);
    assert_eq!(saving_percent(100, 150), -50.0);
    let empty = measure("empty", &DisclosureConfig::default(), &[]);
    assert_eq!(empty.totals, Totals::default());
    assert!(empty.sessions.is_empty());
    assert_eq!(Report::new(vec![empty]).total.ratio(), 0.0);
}

#[test]
fn forms_are_what_the_catalog_serves_in_both_shapes() {
    let fs = upstream(json!({"name": "fs"}));
    let echo = upstream(json!({"name": "echo", "mode": "passthrough"}));
    let inputs = [input(fs, vec![long_tool()]), input(echo, vec![short_tool()])];
    let forms = forms(&DisclosureConfig::default(), &inputs);
    assert_eq!(forms.upstreams, ["fs", "echo"]);
    let names: Vec<&str> = forms.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fs__read_text_file", "echo__echo"], "several upstreams: prefixed, as served");

    let read = &forms.tools[0];
    assert_eq!((read.upstream.as_str(), read.mode), ("fs", crate::config::Mode::Progressive));
    let mut renamed = long_tool();
    renamed["name"] = json!("fs__read_text_file");
    assert_eq!(read.full, model_projection(&renamed), "the upstream definition, renamed, as a model reads it");
    assert_eq!(
        read.served,
        json!({
            "name": "fs__read_text_file",
            "description": "Read the complete contents of a file from the file system as text.",
            "input_schema": {"type": "object"}
        })
    );
    assert_eq!(read.full_tokens, projection_tokens(&renamed));
    assert_eq!(read.served_tokens, count_json(&read.served));

    // A passthrough tool is served in full.
    let echo = &forms.tools[1];
    assert_eq!(echo.served, echo.full);
    assert_eq!(echo.served_tokens, echo.full_tokens);

    let describe = model_projection(&disclosure::describe_tool_definition("describe_tools"));
    assert_eq!(forms.describe_tool_tokens, count_json(&describe));
    assert_eq!(forms.describe_tool, Some(describe));
    assert!(forms.problems.is_empty(), "{:?}", forms.problems);
}

#[test]
fn forms_of_files_apply_a_configs_upstream_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fs.json");
    let file = capture::CatalogFile {
        server: "fs".into(),
        package: None,
        version: None,
        captured: "2026-11-23".into(),
        source: None,
        server_info: json!({"name": "fs"}),
        tools: vec![long_tool()],
    };
    std::fs::write(&path, file.to_pretty()).unwrap();
    let plain = forms_of_files(&[&path], None).unwrap();
    assert_eq!(plain.tools[0].name, "read_text_file", "one upstream: not prefixed");
    let config = crate::config::load_str(
        "[disclosure]\ndescribe_tool = false\n\n[[upstream]]\nname = \"fs\"\ncommand = \"x\"\nprefix = \"files\"\n\n\
         [upstream.tools.read_text_file]\ndescription = \"Read a text file.\"\n",
    )
    .unwrap();
    let configured = forms_of_files(&[&path], Some(&config)).unwrap();
    assert_eq!(configured.tools[0].name, "files__read_text_file");
    assert_eq!(configured.tools[0].served["description"], "Read a text file.", "the override is served");
    assert_eq!((configured.describe_tool.as_ref(), configured.describe_tool_tokens), (None, 0));
    assert!(forms_of_files(&[dir.path().join("missing.json")], None).is_err());
}
