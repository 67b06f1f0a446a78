//! A description fetch held to its limits: how many names, how long a
//! name, how large the answer, and unknown names without the catalog
//! repeated.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::catalog::{Catalog, UpstreamTools};
use crate::config::{DisclosureConfig, UpstreamConfig};
use crate::disclosure::{describe, describe_within, read_result, selection_uri};

/// One progressive upstream `up` with `count` tools whose descriptions are
/// `description_bytes` long.
fn catalog(count: usize, description_bytes: usize, disclosure: &DisclosureConfig) -> Catalog {
    let up: UpstreamConfig = serde_json::from_value(json!({"name": "up", "command": "up-server"})).unwrap();
    let tools: Vec<Value> = (0..count)
        .map(|i| {
            json!({"name": format!("tool_{i}"), "description": "d\"".repeat(description_bytes / 2),
                   "inputSchema": {"type": "object"}})
        })
        .collect();
    let none = HashMap::new();
    Catalog::build(&[UpstreamTools { config: &up, tools: &tools, extras: &none }], disclosure)
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn more_names_than_the_limit_are_refused_as_a_whole() {
    let catalog = catalog(70, 10, &DisclosureConfig::default());
    let ok = describe(&catalog, &names("tool_", 64));
    assert_eq!(ok.authorized.len(), 64);
    let refused = describe(&catalog, &names("tool_", 65));
    assert!(refused.authorized.is_empty());
    assert_eq!(refused.body["error"]["code"], "TOO_MANY_TOOLS");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 64") && message.contains("names 65"), "{message}");
    // Configurable.
    let strict = catalog_with(2);
    assert_eq!(describe(&strict, &names("tool_", 3)).body["error"]["code"], "TOO_MANY_TOOLS");
    assert_eq!(describe(&strict, &names("tool_", 2)).authorized.len(), 2);
}

fn catalog_with(max_tools: usize) -> Catalog {
    catalog(5, 10, &DisclosureConfig { max_tools_per_fetch: max_tools, ..DisclosureConfig::default() })
}

#[test]
fn a_name_too_long_to_be_a_tool_is_refused() {
    let catalog = catalog(1, 10, &DisclosureConfig::default());
    let refused = describe(&catalog, &["x".repeat(MAX_REQUESTED_NAME + 1)]);
    assert_eq!(refused.body["error"]["code"], "TOOL_NAME_TOO_LONG");
    assert!(refused.authorized.is_empty());
}

#[test]
fn only_the_first_unknown_name_lists_the_catalog() {
    let catalog = catalog(200, 10, &DisclosureConfig::default());
    let mut asked = names("nope_", 60);
    asked.push("tool_3".into());
    let described = describe(&catalog, &asked);
    assert_eq!(described.authorized, vec!["tool_3".to_owned()]);
    let first = &described.body["nope_0"];
    assert_eq!(first["available_tools"].as_array().unwrap().len(), 200);
    for name in &asked[1..60] {
        let entry = &described.body[name];
        assert!(entry.get("available_tools").is_none(), "{entry}");
        assert!(entry["error"].as_str().unwrap().contains("listed under 'nope_0'"), "{entry}");
    }
    // 60 unknown names cost little more than one.
    assert!(described.body.to_string().len() < 8 * 1024, "{} bytes", described.body.to_string().len());
}

#[test]
fn definitions_that_would_overflow_the_answer_are_left_out_and_not_authorized() {
    // Three definitions of about 400 KB each (escaped: 600 KB) against 1 MiB.
    let catalog = catalog(3, 400_000, &DisclosureConfig::default());
    let asked = names("tool_", 3);
    let uri = selection_uri(&asked);
    let budget = catalog.fetch_limits().body_budget(escaped_len(&uri));
    let described = describe_within(&catalog, &asked, budget);
    assert_eq!(described.authorized, vec!["tool_0".to_owned()]);
    for left_out in ["tool_1", "tool_2"] {
        let error = described.body[left_out]["error"].as_str().unwrap();
        assert!(error.contains("fetch it in a separate request"), "{error}");
    }
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": read_result(&uri, &described.body)}).to_string();
    assert!(answer.len() <= DEFAULT_MAX_ANSWER_BYTES, "{} bytes", answer.len());
    // Alone, each fits.
    assert_eq!(describe(&catalog, &["tool_2".to_owned()]).authorized, vec!["tool_2".to_owned()]);
}

#[test]
fn a_definition_larger_than_any_answer_says_so() {
    let catalog = catalog(1, 2 * 1024 * 1024, &DisclosureConfig::default());
    let described = describe(&catalog, &["tool_0".to_owned()]);
    assert!(described.authorized.is_empty());
    let error = described.body["tool_0"]["error"].as_str().unwrap();
    assert!(error.contains("larger than an answer may be"), "{error}");
}

#[test]
fn the_list_of_available_tools_is_cut_to_fit_the_answer() {
    let small = DisclosureConfig { max_answer_bytes: 64 * 1024, ..DisclosureConfig::default() };
    let catalog = catalog(10_000, 10, &small);
    let described = describe(&catalog, &["nope".to_owned()]);
    let entry = &described.body["nope"];
    let listed = entry["available_tools"].as_array().unwrap().len();
    assert!(listed > 100 && listed < 10_000, "{listed}");
    assert_eq!(entry["more_tools"], 10_000 - listed);
    assert!(escaped_len(&described.body.to_string()) <= 64 * 1024);
}

#[test]
fn escaped_length_counts_what_a_json_string_adds() {
    for text in ["plain", "a \"quoted\" \\ path\n", "\u{1}ctl", "ünïcode"] {
        let encoded = Value::String(text.to_owned()).to_string();
        assert_eq!(escaped_len(text), encoded.len() - 2, "{text:?}");
    }
}

mod properties {
    use std::sync::OnceLock;

    use proptest::prelude::*;

    use super::*;

    const ANSWER: usize = 64 * 1024;

    /// Catalogs of 50 tools whose descriptions are small, medium and large
    /// against a 64 KiB answer.
    fn catalogs() -> &'static [Catalog; 3] {
        static CATALOGS: OnceLock<[Catalog; 3]> = OnceLock::new();
        CATALOGS.get_or_init(|| {
            let config = DisclosureConfig { max_answer_bytes: ANSWER, ..DisclosureConfig::default() };
            [catalog(50, 10, &config), catalog(50, 5_000, &config), catalog(50, 40_000, &config)]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_selection_stays_within_the_limits(
            names in prop::collection::vec("tool_[0-9]{1,2}|[a-z_0-9\"\\\\]{0,140}", 0..90),
            which in 0usize..3,
        ) {
            let catalog = &catalogs()[which];
            let mut unique: Vec<String> = Vec::new();
            for n in names {
                if !n.is_empty() && !unique.contains(&n) {
                    unique.push(n);
                }
            }
            let uri = selection_uri(&unique);
            let echoed = if uri.len() <= 4096 { uri } else { crate::disclosure::RESOURCE_URI.to_owned() };
            let budget = catalog.fetch_limits().body_budget(escaped_len(&echoed));
            let described = describe_within(catalog, &unique, budget);
            let answer = json!({"jsonrpc": "2.0", "id": 1, "result": read_result(&echoed, &described.body)});
            prop_assert!(answer.to_string().len() <= ANSWER, "{} bytes", answer.to_string().len());
            prop_assert!(described.authorized.len() <= 64);
            for name in &described.authorized {
                // Only what the answer carries in full is authorized.
                prop_assert!(described.body[name].get("inputSchema").is_some(), "{name}");
            }
        }
    }
}
