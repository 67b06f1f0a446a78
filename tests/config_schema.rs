//! The JSON Schema of `toolgate.toml` (`toolgate config-schema`): the
//! committed copy is current, the shipped configs follow it, and it accepts
//! and refuses what toolgate itself accepts and refuses when it reads a file.
//!
//! Run with `TOOLGATE_BLESS=1` (or just run it: a stale file is rewritten
//! before the test fails) to update `config/toolgate.schema.json`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The schema as toolgate generates it, parsed.
fn schema() -> Value {
    serde_json::from_str(&toolgate::config::schema_json()).expect("the generated schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the generated schema is a valid JSON Schema")
}

/// TOML text as the JSON value a TOML language server validates.
fn toml_to_json(text: &str) -> anyhow::Result<Value> {
    let table: toml::Table = toml::from_str(text)?;
    Ok(serde_json::to_value(table)?)
}

/// The schema's verdict on a TOML document: `Err` lists every violation.
fn schema_verdict(text: &str) -> Result<(), Vec<String>> {
    let instance = toml_to_json(text).map_err(|e| vec![format!("not TOML: {e}")])?;
    let errors: Vec<String> =
        validator().iter_errors(&instance).map(|e| format!("{}: {e}", e.instance_path())).collect();
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// toolgate's verdict on the same text, loaded as `toolgate serve` would
/// (relative paths against the repository).
fn toolgate_verdict(text: &str) -> Result<(), String> {
    toolgate::config::load_str_in(text, &repo()).map(drop).map_err(|e| e.to_string())
}

#[test]
fn the_committed_schema_is_current() -> anyhow::Result<()> {
    let path = repo().join("config/toolgate.schema.json");
    let want = toolgate::config::schema_json();
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        std::fs::write(&path, &want).with_context(|| format!("writing {}", path.display()))?;
        anyhow::bail!(
            "config/toolgate.schema.json was stale and has been rewritten from the config types \
             (`toolgate config-schema`); review and commit it"
        );
    }
    Ok(())
}

/// Every config file the repository ships, with the `#:schema` line a TOML
/// language server reads (relative to the file).
const SHIPPED: [(&str, &str); 3] = [
    ("config/example.toml", "#:schema ./toolgate.schema.json"),
    ("config/demo.toml", "#:schema ./toolgate.schema.json"),
    ("docker/compose.toml", "#:schema ../config/toolgate.schema.json"),
];

#[test]
fn the_shipped_configs_point_at_the_schema_and_follow_it() -> anyhow::Result<()> {
    for (file, directive) in SHIPPED {
        let text = std::fs::read_to_string(repo().join(file)).with_context(|| file.to_owned())?;
        assert_eq!(text.lines().next(), Some(directive), "{file} must start with `{directive}`");
        let target = repo()
            .join(file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join(directive.trim_start_matches("#:schema ").trim());
        assert!(target.is_file(), "{file}: {} does not exist", target.display());
        if let Err(errors) = schema_verdict(&text) {
            panic!("{file} does not follow the schema:\n{}", errors.join("\n"));
        }
    }
    Ok(())
}

/// Documents toolgate refuses while reading them, for a reason a schema can
/// state: each must fail the schema too. (toolgate checks more than a schema
/// can: that directories exist, that URLs parse, that `command` and `url` are
/// not both set; those are left out.)
const REFUSED: &[(&str, &str)] = &[
    ("a misspelt key", "[server]\nlisen = \"127.0.0.1:8080\"\n"),
    ("an unknown section", "[sever]\nlisten = \"127.0.0.1:8080\"\n"),
    ("an unknown upstream key", "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout_ms = 5\n"),
    ("a string for a number", "[server]\nmax_body_bytes = \"large\"\n"),
    ("a number for a duration", "[server]\nsession_idle_timeout = 30\n"),
    ("a duration without a unit", "[server]\nsession_idle_timeout = \"30\"\n"),
    ("a duration with an unknown unit", "[server]\nsse_keep_alive = \"5 parsecs\"\n"),
    ("a list for a boolean", "[disclosure]\ndescribe_tool = [true]\n"),
    ("an unknown mode", "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nmode = \"lazy\"\n"),
    ("an unknown protocol", "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2024-11-05\"\n"),
    ("an upstream without a name", "[[upstream]]\ncommand = \"x\"\n"),
    ("[upstream] as a table", "[upstream]\nname = \"a\"\ncommand = \"x\"\n"),
    ("a number below its minimum", "[server]\nmax_body_bytes = 100\n"),
    ("a count of zero", "[server]\nmax_sessions = 0\n"),
    ("a ratio above one", "[tracing]\nsample_ratio = 1.5\n"),
    ("a string for a list", "[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef0123\"\ntools = \"*\"\n"),
    ("an unknown client key", "[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef0123\"\nrole = \"x\"\n"),
    ("jwt without an issuer", "[auth.jwt]\naudiences = [\"https://g.example/mcp\"]\njwks_file = \"x\"\n"),
    (
        "an unknown tool override key",
        "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[upstream.tools.t]\ntitle = \"T\"\n",
    ),
];

/// Documents toolgate reads: the schema must accept them.
const ACCEPTED: &[(&str, &str)] = &[
    ("an empty file", ""),
    ("a duration in several units", "[server]\nsession_idle_timeout = \"1h 30m\"\n"),
    ("a fractional duration", "[server]\nshutdown_grace = \"2.5s\"\n"),
    ("a zero duration", "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ninstance_wait = \"0\"\n"),
    ("a number from a ${VAR} reference", "[server]\nmax_body_bytes = \"${TG_SCHEMA_TEST_UNSET:-4194304}\"\n"),
    ("a boolean from a ${VAR} reference", "[disclosure]\ndescribe_tool = \"${TG_SCHEMA_TEST_UNSET:-false}\"\n"),
    ("a duration from a ${VAR} reference", "[server]\nsse_keep_alive = \"${TG_SCHEMA_TEST_UNSET:-20s}\"\n"),
    (
        "a mode from a ${VAR} reference",
        "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nmode = \"${TG_SCHEMA_TEST_UNSET:-passthrough}\"\n",
    ),
    ("a ratio of zero", "[tracing]\nsample_ratio = 0\n"),
    (
        "tool overrides of any shape",
        "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[upstream.tools.t]\nexamples = [{ input = { a = 1 } }]\nusage_guidance = \"text\"\n",
    ),
];

#[test]
fn the_schema_refuses_what_toolgate_refuses() {
    for (what, text) in REFUSED {
        assert!(toolgate_verdict(text).is_err(), "{what}: toolgate accepted\n{text}");
        assert!(schema_verdict(text).is_err(), "{what}: the schema accepted what toolgate refuses\n{text}");
    }
}

#[test]
fn the_schema_accepts_what_toolgate_accepts() {
    for (what, text) in ACCEPTED {
        if let Err(e) = toolgate_verdict(text) {
            panic!("{what}: toolgate refused: {e}\n{text}");
        }
        if let Err(errors) = schema_verdict(text) {
            panic!("{what}: the schema refused what toolgate accepts:\n{}\n{text}", errors.join("\n"));
        }
    }
}

/// The duration pattern is humantime's grammar: both take or refuse the
/// same strings.
#[test]
fn durations_are_what_humantime_reads() {
    let samples = [
        "0",
        "1s",
        "30s",
        "500ms",
        "5m",
        "1h",
        "1h 30m",
        "1h30m",
        "2.5s",
        "10 min",
        "3 days",
        "1w",
        "2 months",
        "1y",
        "100ns",
        "7us",
        "7µs",
        " 5s",
        "5s ",
        "30",
        "",
        "s",
        "5 parsecs",
        "1.s",
        "-1s",
        "1e3s",
        "5S",
        "1h,2m",
        "0s",
        "00",
        "1 hour 2 minutes",
    ];
    for sample in samples {
        let humantime = humantime::parse_duration(sample).is_ok();
        let doc = json!({ "server": { "sse_keep_alive": sample } });
        let schema = validator().is_valid(&doc);
        assert_eq!(schema, humantime, "{sample:?}: the schema says {schema}, humantime::parse_duration {humantime}");
    }
}

/// Every key of the file has a description: the doc comment of its field.
#[test]
fn every_key_is_described() {
    let schema = schema();
    let definitions = schema["definitions"].as_object().expect("definitions");
    let mut missing = Vec::new();
    let objects = std::iter::once(("(top level)", &schema)).chain(definitions.iter().map(|(k, v)| (k.as_str(), v)));
    for (name, def) in objects {
        for (key, property) in def["properties"].as_object().into_iter().flatten() {
            let described = property["description"].as_str().is_some_and(|d| !d.trim().is_empty());
            if !described {
                missing.push(format!("{name}.{key}"));
            }
        }
    }
    assert!(missing.is_empty(), "keys without a doc comment: {missing:?}");
}
