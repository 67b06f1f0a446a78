use std::fs;

use serde_json::json;

use super::*;

#[test]
fn reads_the_three_extras() {
    let (extras, warnings) = parse_extras(
        r#"{"examples": [{"input": {"path": "a"}}], "usage_guidance": "Read small files.", "error_guidance": {"ENOENT": "No such file."}}"#,
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        extras,
        Some(Extras {
            examples: Some(json!([{"input": {"path": "a"}}])),
            usage_guidance: Some(json!("Read small files.")),
            error_guidance: Some(json!({"ENOENT": "No such file."})),
        })
    );
}

#[test]
fn ignores_other_keys_with_a_warning_per_key() {
    let (extras, warnings) =
        parse_extras(r#"{"name": "x", "description": "Full.", "inputSchema": {}, "examples": [1]}"#);
    assert_eq!(extras, Some(Extras { examples: Some(json!([1])), ..Extras::default() }));
    assert_eq!(warnings.len(), 3);
    for (warning, key) in warnings.iter().zip(["name", "description", "inputSchema"]) {
        assert!(warning.starts_with(&format!("key `{key}` ignored")), "{warning}");
        assert!(warning.contains("authoritative"), "{warning}");
    }
}

#[test]
fn null_means_not_set() {
    let (extras, warnings) = parse_extras(r#"{"examples": null}"#);
    assert!(warnings.is_empty());
    assert_eq!(extras, Some(Extras::default()));
}

#[test]
fn bad_files_give_warnings_not_panics() {
    let (extras, warnings) = parse_extras("{not json");
    assert_eq!(extras, None);
    assert!(warnings[0].starts_with("invalid JSON"), "{warnings:?}");
    let (extras, warnings) = parse_extras("[1, 2]");
    assert_eq!(extras, None);
    assert_eq!(warnings, ["expected a JSON object"]);
}

#[test]
fn loads_a_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path();
    fs::write(path.join("read_file.json"), r#"{"name": "read_file", "examples": [{"path": "a.txt"}]}"#).unwrap();
    fs::write(path.join("write_file.json"), r#"{"usage_guidance": "Overwrites."}"#).unwrap();
    fs::write(path.join("broken.json"), "{").unwrap();
    fs::write(path.join("only_schema.json"), r#"{"inputSchema": {"type": "object"}}"#).unwrap();
    fs::write(path.join("README.md"), "not an extras file").unwrap();
    fs::create_dir(path.join("nested.json")).unwrap();

    let (extras, warnings) = load_extras_dir(path);

    let mut tools: Vec<&str> = extras.keys().map(String::as_str).collect();
    tools.sort();
    assert_eq!(tools, ["read_file", "write_file"]);
    assert_eq!(extras["read_file"].examples, Some(json!([{"path": "a.txt"}])));
    assert_eq!(extras["write_file"].usage_guidance, Some(json!("Overwrites.")));

    assert_eq!(warnings.len(), 3, "{warnings:?}");
    let file = |name: &str| path.join(name).display().to_string();
    assert!(warnings[0].starts_with(&format!("{}: invalid JSON", file("broken.json"))), "{}", warnings[0]);
    assert!(warnings[1].starts_with(&format!("{}: key `inputSchema` ignored", file("only_schema.json"))));
    assert!(warnings[2].starts_with(&format!("{}: key `name` ignored", file("read_file.json"))));
}

#[test]
fn a_missing_folder_is_a_warning() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope");
    let (extras, warnings) = load_extras_dir(&missing);
    assert!(extras.is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("cannot be read"), "{}", warnings[0]);
}
