use serde_json::json;

use super::*;

/// An upstream config from its JSON form (as the TOML would give it).
fn upstream(v: Value) -> UpstreamConfig {
    let mut v = v;
    if v.get("command").is_none() {
        v["command"] = json!("server");
    }
    serde_json::from_value(v).expect("valid upstream config")
}

fn disclosure() -> DisclosureConfig {
    DisclosureConfig::default()
}

/// Builds a catalog from (config, tools, extras) triples.
fn build(ups: &[(UpstreamConfig, Vec<Value>, HashMap<String, Extras>)], d: &DisclosureConfig) -> Catalog {
    let views: Vec<UpstreamTools<'_>> =
        ups.iter().map(|(config, tools, extras)| UpstreamTools { config, tools, extras }).collect();
    Catalog::build(&views, d)
}

fn read_text_file() -> Value {
    json!({
        "name": "read_text_file",
        "title": "Read Text File",
        "description": "Read the complete contents of a file from the file system as text. Handles various text \
                        encodings. Only works within allowed directories.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"}
            },
            "required": ["path"]
        },
        "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}}},
        "annotations": {"readOnlyHint": true},
        "icons": [{"src": "https://example.com/file.png"}],
        "execution": {"taskSupport": "optional"},
        "_meta": {"vendor/id": 7},
        "x-vendor": {"kept": "in the full form"},
        "examples": "the upstream's own examples field"
    })
}

/// A realistic gateway: a filesystem server, GitHub with an explicit prefix, a
/// passthrough "everything" server without prefix and an unprefixed utility
/// server whose `echo` and `describe_tools` collide.
fn realistic() -> Vec<(UpstreamConfig, Vec<Value>, HashMap<String, Extras>)> {
    let fs = upstream(json!({
        "name": "fs",
        "tools": {
            "read_text_file": {"examples": [{"input": {"path": "notes.txt"}, "description": "from the config"}]},
            "list_directory": {
                "description": "List a folder.",
                "error_guidance": {"ENOENT": "The folder does not exist; call list_allowed_directories."}
            }
        }
    }));
    let fs_tools = vec![
        read_text_file(),
        json!({
            "name": "list_directory",
            "title": "List Directory",
            "description": "Get a detailed listing of all files and directories in a specified path. Results \
                            distinguish files and directories.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "annotations": {"readOnlyHint": true}
        }),
    ];
    let fs_extras = HashMap::from([(
        "read_text_file".to_owned(),
        Extras {
            examples: Some(json!(["from the descriptions folder"])),
            usage_guidance: Some(json!("Prefer head for large files.")),
            error_guidance: None,
        },
    )]);

    let github = upstream(json!({"name": "github", "prefix": "gh"}));
    let github_tools = vec![
        json!({
            "name": "create_issue",
            "description": "Create a new issue in a GitHub repository",
            "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "title": {"type": "string"}}}
        }),
        json!({"description": "A tool without a name."}),
        json!({
            "name": "search_repositories",
            "description": "This tool allows you to search for GitHub repositories by name, topic or language.",
            "inputSchema": {"type": "object"}
        }),
    ];

    let everything = upstream(json!({"name": "everything", "mode": "passthrough", "prefix": ""}));
    let everything_tools = vec![
        json!({
            "name": "echo",
            "description": "Echoes back the input",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "execution": {"taskSupport": "forbidden"}
        }),
        json!({"name": "add", "description": "Adds two numbers", "inputSchema": {"type": "object"}}),
    ];

    let util = upstream(json!({"name": "util", "prefix": ""}));
    let util_tools = vec![
        json!({"name": "echo", "description": "Repeat a message.", "inputSchema": {"type": "object"}}),
        json!({"name": "describe_tools", "description": "Describe this server's tools.", "inputSchema": {"type": "object"}}),
    ];

    vec![
        (fs, fs_tools, fs_extras),
        (github, github_tools, HashMap::new()),
        (everything, everything_tools, HashMap::new()),
        (util, util_tools, HashMap::new()),
    ]
}

#[test]
fn realistic_tools_list() {
    let catalog = build(&realistic(), &disclosure());
    insta::assert_json_snapshot!("realistic_tools_list", catalog.list_result());
}

#[test]
fn realistic_names_and_order() {
    let catalog = build(&realistic(), &disclosure());
    assert_eq!(
        catalog.names(),
        [
            "fs__read_text_file",
            "fs__list_directory",
            "gh__create_issue",
            "gh__search_repositories",
            "echo",
            "add",
            "echo_2",
            "describe_tools_2",
        ]
    );
    let listed: Vec<&str> =
        catalog.list_result()["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut expected = catalog.names();
    expected.push("describe_tools");
    assert_eq!(listed, expected, "tools/list has every tool in order, then the describe tool");
    assert_eq!(catalog.describe_tool_name(), Some("describe_tools"));
    assert!(catalog.has_progressive());
    assert_eq!(catalog.len(), 8);
    assert!(catalog.get("describe_tools").is_none(), "the describe tool is not an upstream tool");

    let echo2 = catalog.get("echo_2").unwrap();
    assert_eq!((echo2.upstream, echo2.original.as_str(), echo2.mode), (3, "echo", Mode::Progressive));
    let echo = catalog.get("echo").unwrap();
    assert_eq!((echo.upstream, echo.mode), (2, Mode::Passthrough));
    assert_eq!(catalog.get("describe_tools_2").unwrap().original, "describe_tools");
}

#[test]
fn realistic_problems() {
    let catalog = build(&realistic(), &disclosure());
    assert_eq!(
        catalog.problems(),
        [
            "upstream `github`: tool #2 has no name; skipped",
            "tool name collision on `echo`: upstream `everything` tool `echo` keeps it; upstream `util` tool `echo` is \
             exposed as `echo_2`",
            "upstream `util` tool `describe_tools` would be exposed as `describe_tools`, the name of toolgate's \
             describe tool (disclosure.describe_tool_name); it is exposed as `describe_tools_2`",
        ]
    );
}

#[test]
fn full_definitions_keep_every_field_and_add_extras() {
    let catalog = build(&realistic(), &disclosure());
    let full = &catalog.get("fs__read_text_file").unwrap().full;
    let mut expected = read_text_file();
    expected["name"] = json!("fs__read_text_file");
    // The config's examples win over the folder's and replace the upstream's.
    expected["examples"] = json!([{"input": {"path": "notes.txt"}, "description": "from the config"}]);
    expected["usage_guidance"] = json!("Prefer head for large files.");
    assert_eq!(full, &expected);
    // Key order is the upstream's; extras that were not there come last.
    let keys: Vec<&str> = full.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
            "icons",
            "execution",
            "_meta",
            "x-vendor",
            "examples",
            "usage_guidance"
        ]
    );

    let list_dir = &catalog.get("fs__list_directory").unwrap().full;
    assert_eq!(list_dir["error_guidance"]["ENOENT"], "The folder does not exist; call list_allowed_directories.");
    assert!(list_dir.get("examples").is_none() && list_dir.get("usage_guidance").is_none());
    assert_eq!(
        list_dir["description"],
        "Get a detailed listing of all files and directories in a specified path. Results distinguish files and \
         directories.",
        "the full form keeps the upstream description even when the minimal one is overridden"
    );
}

#[test]
fn minimal_forms_keep_only_selection_fields() {
    let catalog = build(&realistic(), &disclosure());
    let entry = catalog.get("fs__read_text_file").unwrap();
    assert_eq!(
        entry.minimal,
        json!({
            "name": "fs__read_text_file",
            "title": "Read Text File",
            "description": "Read the complete contents of a file from the file system as text. Handles various text encodings.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true},
            "_meta": {"vendor/id": 7}
        })
    );
    assert_eq!(catalog.get("fs__list_directory").unwrap().minimal["description"], "List a folder.");
    assert_eq!(
        catalog.get("gh__search_repositories").unwrap().minimal["description"],
        "Search for GitHub repositories by name, topic or language."
    );
}

#[test]
fn passthrough_tools_are_listed_verbatim_but_renamed() {
    let tools = vec![json!({"name": "echo", "description": "Echoes back the input", "execution": {"x": 1}, "z": 2})];
    let ups = vec![
        (
            upstream(json!({"name": "a", "mode": "passthrough", "tools": {"echo": {"usage_guidance": "x"}}})),
            tools,
            HashMap::new(),
        ),
        (upstream(json!({"name": "b"})), vec![], HashMap::new()),
    ];
    let catalog = build(&ups, &disclosure());
    let entry = catalog.get("a__echo").unwrap();
    let expected = json!({"name": "a__echo", "description": "Echoes back the input", "execution": {"x": 1}, "z": 2});
    assert_eq!(entry.minimal, expected);
    assert_eq!(entry.full, expected, "no extras for passthrough tools");
    assert_eq!(catalog.list_result()["tools"][0], expected);
}

#[test]
fn a_single_upstream_keeps_tool_names_unless_it_sets_a_prefix() {
    let tools = vec![json!({"name": "read_file", "inputSchema": {"type": "object"}})];
    let plain = build(&[(upstream(json!({"name": "fs"})), tools.clone(), HashMap::new())], &disclosure());
    assert_eq!(plain.names(), ["read_file"]);
    let prefixed = build(&[(upstream(json!({"name": "fs", "prefix": "files"})), tools, HashMap::new())], &disclosure());
    assert_eq!(prefixed.names(), ["files__read_file"]);
    assert_eq!(prefixed.get("files__read_file").unwrap().original, "read_file");
}

#[test]
fn the_describe_tool_needs_a_progressive_upstream_and_the_setting() {
    let tools = vec![json!({"name": "describe_tools", "inputSchema": {"type": "object"}})];
    let passthrough =
        build(&[(upstream(json!({"name": "a", "mode": "passthrough"})), tools.clone(), HashMap::new())], &disclosure());
    assert!(!passthrough.has_progressive());
    assert_eq!(passthrough.describe_tool_name(), None);
    assert_eq!(passthrough.names(), ["describe_tools"], "no reservation when the describe tool is not offered");
    assert!(passthrough.problems().is_empty());

    let off = DisclosureConfig { describe_tool: false, ..DisclosureConfig::default() };
    let progressive = build(&[(upstream(json!({"name": "a"})), tools.clone(), HashMap::new())], &off);
    assert!(progressive.has_progressive());
    assert_eq!(progressive.describe_tool_name(), None);
    assert_eq!(progressive.list_result()["tools"].as_array().unwrap().len(), 1);

    let renamed = DisclosureConfig { describe_tool_name: "tool_docs".into(), ..DisclosureConfig::default() };
    let catalog = build(&[(upstream(json!({"name": "a"})), tools, HashMap::new())], &renamed);
    assert_eq!(catalog.describe_tool_name(), Some("tool_docs"));
    assert_eq!(catalog.list_result()["tools"][1]["name"], "tool_docs");
}

#[test]
fn a_progressive_upstream_without_tools_still_offers_the_describe_tool() {
    let catalog = build(&[(upstream(json!({"name": "a"})), vec![], HashMap::new())], &disclosure());
    assert!(catalog.is_empty());
    assert_eq!(catalog.describe_tool_name(), Some("describe_tools"));
    assert_eq!(
        catalog.list_result(),
        &json!({"tools": [crate::disclosure::describe_tool_definition("describe_tools")]})
    );
}

#[test]
fn reports_bad_tools_names_and_unknown_overrides() {
    let long = "x".repeat(70);
    let tools = vec![
        json!("not an object"),
        json!({"name": "", "inputSchema": {"type": "object"}}),
        json!({"name": 5}),
        json!({"name": "read file", "inputSchema": {"type": "object"}}),
        json!({"name": long, "inputSchema": {"type": "object"}}),
    ];
    let config = upstream(json!({"name": "a", "tools": {"raed_file": {"description": "Typo."}}}));
    let extras = HashMap::from([("wirte".to_owned(), Extras { examples: Some(json!([])), ..Extras::default() })]);
    let catalog = build(&[(config, tools, extras)], &disclosure());
    assert_eq!(catalog.names(), ["read file", long.as_str()], "bad names are kept");
    assert_eq!(
        catalog.problems(),
        [
            "upstream `a`: tool #1 is not a JSON object; skipped".to_owned(),
            "upstream `a`: tool #2 has no name; skipped".to_owned(),
            "upstream `a`: tool #3 has no name; skipped".to_owned(),
            "upstream `a`: [upstream.tools.raed_file] names no tool of this upstream".to_owned(),
            "upstream `a`: descriptions_dir file `wirte.json` names no tool of this upstream".to_owned(),
            "upstream `a` tool `read file`: exposed name `read file` has characters outside [A-Za-z0-9_.-] (' '); \
             some LLM clients reject such names"
                .to_owned(),
            format!(
                "upstream `a` tool `{long}`: exposed name `{long}` is 70 characters long (over 64); some LLM clients \
                 reject such names"
            ),
        ]
    );
}

#[test]
fn fingerprints_follow_the_full_definition() {
    let catalog = build(&realistic(), &disclosure());
    let again = build(&realistic(), &disclosure());
    for (a, b) in catalog.tools().zip(again.tools()) {
        assert_eq!(a.fingerprint, b.fingerprint, "{}", a.exposed);
    }
    let mut changed = realistic();
    changed[0].1[0]["inputSchema"]["properties"]["tail"] = json!({"type": "number"});
    let changed = build(&changed, &disclosure());
    let fp = |c: &Catalog, n: &str| c.get(n).unwrap().fingerprint;
    assert_ne!(fp(&catalog, "fs__read_text_file"), fp(&changed, "fs__read_text_file"));
    assert_eq!(fp(&catalog, "fs__list_directory"), fp(&changed, "fs__list_directory"));
    assert_ne!(fp(&catalog, "fs__read_text_file"), fp(&catalog, "fs__list_directory"));
}

#[test]
fn description_max_chars_applies_to_derived_descriptions_only() {
    let d = DisclosureConfig { description_max_chars: 20, ..DisclosureConfig::default() };
    let catalog = build(&realistic(), &d);
    for tool in catalog.list_result()["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let description = tool["description"].as_str().unwrap_or_default();
        let limited = catalog.get(name).is_some_and(|e| e.mode == Mode::Progressive) && name != "fs__list_directory";
        if limited {
            assert!(description.chars().count() <= 20, "{name}: {description}");
        }
    }
    assert_eq!(catalog.get("fs__read_text_file").unwrap().minimal["description"], "Read the complete…");
    assert_eq!(catalog.get("fs__list_directory").unwrap().minimal["description"], "List a folder.");
}

#[test]
fn builds_a_thousand_tools() {
    let tools: Vec<Value> = (0..1000)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "description": format!("Do thing number {i} with the given input. Then report back."),
                "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}
            })
        })
        .collect();
    let catalog = build(&[(upstream(json!({"name": "big"})), tools, HashMap::new())], &disclosure());
    assert_eq!(catalog.len(), 1000);
    assert_eq!(catalog.list_result()["tools"].as_array().unwrap().len(), 1001);
    assert_eq!(
        catalog.get("tool_999").unwrap().minimal["description"],
        "Do thing number 999 with the given input. Then report back."
    );
    assert!(catalog.problems().is_empty());
}

#[test]
fn the_raw_list_result_is_the_serialized_value() {
    let catalog = build(&realistic(), &disclosure());
    let reparsed: Value = serde_json::from_str(catalog.list_result_raw().get()).unwrap();
    assert_eq!(&reparsed, catalog.list_result());
    assert_eq!(Catalog::empty().list_result_raw().get(), r#"{"tools":[]}"#);
}

#[test]
fn an_empty_catalog_lists_nothing() {
    let catalog = Catalog::default();
    assert_eq!(catalog.list_result(), &json!({"tools": []}));
    assert!(catalog.is_empty() && !catalog.has_progressive() && catalog.describe_tool_name().is_none());
}

#[test]
fn tools_with_invalid_header_annotations_are_left_out_and_the_minimal_form_hides_valid_ones() {
    let valid = json!({"name": "valid_tool", "description": "d", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}});
    let number = json!({"name": "number_header", "inputSchema": {"type": "object", "properties": {
        "n": {"type": "number", "x-mcp-header": "N"}}}});
    let duplicate = json!({"name": "dup_header", "inputSchema": {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}});
    let ups = [(upstream(json!({"name": "u"})), vec![valid, number, duplicate], HashMap::new())];
    let catalog = build(&ups, &disclosure());
    assert_eq!(catalog.names(), ["valid_tool"]);
    let problems = catalog.problems().join("\n");
    assert!(problems.contains("tool `number_header`") && problems.contains("`number`"), "{problems}");
    assert!(problems.contains("tool `dup_header`") && problems.contains("declared twice"), "{problems}");
    let entry = catalog.get("valid_tool").expect("listed");
    assert!(!entry.minimal.to_string().contains("x-mcp-header"), "the minimal form shows no annotations");
    assert!(entry.full.to_string().contains("x-mcp-header"), "the full definition keeps them");
}
