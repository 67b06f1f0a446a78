//! The cost of checking a call's arguments against its tool's full
//! `inputSchema` (`validate_arguments`), on the real schemas of the 25
//! catalogs in `tests/corpus` (`cargo bench --bench validation`).
//!
//! Each tool is put in a catalog as toolgate builds it (a progressive
//! upstream per server), and two calls are made up for it from its schema:
//! a valid one (the required arguments, each the least its schema accepts)
//! and an invalid one (a required argument left out, or one of the wrong
//! type, or an unknown one). Every schema is compiled once first (the
//! compile time per schema is reported), then each call is checked
//! `TOOLGATE_BENCH_ROUNDS` times (default 200) through
//! [`Arguments::check`], exactly as the gateway checks a call (the cache
//! lookup by fingerprint, the check, and for an invalid call the refusal's
//! text), each timed on its own. It prints p50, p90, p99 and the maximum
//! per call, for valid and invalid calls, and whether the p50 of all calls
//! is within the 20 µs target.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde_json::{Map, Value, json};
#[path = "../support/timing.rs"]
mod timing;

use timing::{figures, histogram, micros, p50, record};
use toolgate::catalog::{Arguments, Catalog, ToolEntry, UpstreamTools, validator_for};
use toolgate::config::{DisclosureConfig, UpstreamConfig};

/// The target: the p50 of a check per call.
const TARGET: Duration = Duration::from_micros(20);

/// How deep the made-up arguments nest at most.
const MAX_DEPTH: usize = 8;

fn main() -> Result<()> {
    // `cargo test --all-targets` runs bench targets without `--bench`.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("validation: run with `cargo bench --bench validation` (skipped: not a bench run)");
        return Ok(());
    }
    let rounds: usize = std::env::var("TOOLGATE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(200);
    let entries = corpus()?;
    let checker = Arguments::default();

    // Every schema compiled once (the first check of a tool compiles it).
    let mut compile = histogram();
    let mut broken = 0;
    for entry in &entries {
        let schema = entry.full.get("inputSchema").cloned().unwrap_or(Value::Null);
        let started = Instant::now();
        let compiled = validator_for(&schema);
        record(&mut compile, started.elapsed());
        if compiled.is_err() {
            broken += 1;
        }
        let _ = checker.check(entry, Some(&json!({})));
    }

    // The calls made up for each tool.
    let mut calls: Vec<(&Arc<ToolEntry>, Value, bool)> = Vec::new();
    let (mut no_valid, mut no_invalid) = (0, 0);
    for entry in &entries {
        let schema = entry.full.get("inputSchema").cloned().unwrap_or(Value::Null);
        let Ok(validator) = validator_for(&schema) else { continue };
        let valid = example(&schema, &schema, 0).filter(|v| validator.is_valid(v));
        match &valid {
            Some(valid) => calls.push((entry, valid.clone(), true)),
            None => no_valid += 1,
        }
        let base = valid.unwrap_or_else(|| json!({}));
        match mutations(&schema, &base).into_iter().find(|v| !validator.is_valid(v)) {
            Some(invalid) => calls.push((entry, invalid, false)),
            None => no_invalid += 1,
        }
    }

    let (mut valid, mut invalid, mut all) = (histogram(), histogram(), histogram());
    for _ in 0..rounds {
        for (entry, arguments, ok) in &calls {
            let started = Instant::now();
            let checked = checker.check(entry, Some(arguments));
            let took = started.elapsed();
            debug_assert_eq!(checked.is_ok(), *ok);
            black_box(checked).ok();
            record(if *ok { &mut valid } else { &mut invalid }, took);
            record(&mut all, took);
        }
    }

    let servers = std::fs::read_dir(corpus_dir())?.filter(|e| is_catalog(e.as_ref().ok())).count();
    println!("argument validation on tests/corpus: {servers} servers, {} tools", entries.len());
    println!(
        "  schemas: {} compiled, {broken} not compiling (not checked); compile per schema {}",
        entries.len() - broken,
        figures(&compile)
    );
    println!(
        "  calls made up: {} valid ({no_valid} tools without one), {} invalid ({no_invalid} without one); \
         {rounds} rounds",
        calls.iter().filter(|c| c.2).count(),
        calls.iter().filter(|c| !c.2).count()
    );
    println!("  check per call, valid:   {}", figures(&valid));
    println!("  check per call, invalid: {} (the refusal's text included)", figures(&invalid));
    println!("  check per call, all:     {}", figures(&all));
    let p50 = p50(&all);
    let verdict = if p50 <= TARGET { "met" } else { "NOT met" };
    println!("  target p50 <= {} µs per call: {verdict} ({})", TARGET.as_micros(), micros(p50));
    Ok(())
}

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn is_catalog(entry: Option<&std::fs::DirEntry>) -> bool {
    entry.is_some_and(|e| e.path().extension().is_some_and(|x| x == "json"))
}

/// Every tool of the corpus, as a progressive upstream's catalog entry.
fn corpus() -> Result<Vec<Arc<ToolEntry>>> {
    let mut paths: Vec<_> = std::fs::read_dir(corpus_dir())?
        .filter_map(Result::ok)
        .filter(|e| is_catalog(Some(e)))
        .map(|e| e.path())
        .collect();
    paths.sort();
    let mut entries = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)?;
        let captured: Value = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
        let tools = captured["tools"].as_array().cloned().unwrap_or_default();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("server").to_owned();
        let config: UpstreamConfig = serde_json::from_value(json!({"name": name, "command": "stored-catalog"}))?;
        let extras = HashMap::new();
        let upstream = UpstreamTools { config: &config, tools: &tools, extras: &extras };
        let catalog = Catalog::build(&[upstream], &DisclosureConfig::default());
        entries.extend(catalog.tools().cloned());
    }
    Ok(entries)
}

/// The schema a local `$ref` points to in `root`.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => root.pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

/// The least value `schema` accepts, as far as a simple walk can tell (the
/// caller checks it): `const`, the first `enum` value, then by `type`; an
/// object with its required properties only.
fn example(schema: &Value, root: &Value, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let schema = resolve(schema, root);
    let Some(object) = schema.as_object() else { return Some(json!("x")) };
    if let Some(value) = object.get("const") {
        return Some(value.clone());
    }
    if let Some(first) = object.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return Some(first.clone());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = object.get(key).and_then(Value::as_array) {
            return branches.iter().find_map(|b| example(b, root, depth + 1));
        }
    }
    if let Some(parts) = object.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in parts {
            if let Some(Value::Object(fields)) = example(part, root, depth + 1) {
                merged.extend(fields);
            }
        }
        return Some(Value::Object(merged));
    }
    let kind = match object.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if object.contains_key("properties") => "object",
        _ => return Some(json!("x")),
    };
    let number = |integer: bool| {
        let bound = |key: &str| object.get(key).and_then(Value::as_f64);
        let low = bound("minimum").or_else(|| bound("exclusiveMinimum").map(|m| m + 1.0));
        let high = bound("maximum").or_else(|| bound("exclusiveMaximum").map(|m| m - 1.0));
        let n = low.unwrap_or_else(|| high.map_or(1.0, |h| h.min(1.0)));
        if integer { json!(n.ceil() as i64) } else { json!(n) }
    };
    Some(match kind {
        "object" => {
            let properties = object.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for name in object.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let property = properties.and_then(|p| p.get(name)).cloned().unwrap_or(json!({}));
                out.insert(name.to_owned(), example(&property, root, depth + 1)?);
            }
            Value::Object(out)
        }
        "array" => {
            let min = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = object.get("items").cloned().unwrap_or(json!({}));
            let items = (0..min).map(|_| example(&items, root, depth + 1)).collect::<Option<Vec<_>>>()?;
            Value::Array(items)
        }
        "string" => {
            let min = object.get("minLength").and_then(Value::as_u64).unwrap_or(1).max(1);
            json!("x".repeat(usize::try_from(min).unwrap_or(1)))
        }
        "integer" => number(true),
        "number" => number(false),
        "boolean" => json!(true),
        _ => Value::Null,
    })
}

/// Calls that likely do not match `schema`, made from the valid `base`:
/// a required argument left out, each property with a value of the wrong
/// type, an unknown argument, arguments that are not an object.
fn mutations(schema: &Value, base: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let Some(fields) = base.as_object() else { return vec![json!("not an object")] };
    if let Some(first) = fields.keys().next() {
        let mut missing = fields.clone();
        missing.shift_remove(first);
        out.push(Value::Object(missing));
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        let wrong = match property.get("type").and_then(Value::as_str) {
            Some("string") => json!(12345),
            _ => json!({"unexpected": [1, 2, 3]}),
        };
        let mut changed = fields.clone();
        changed.insert(name.clone(), wrong);
        out.push(Value::Object(changed));
    }
    let mut unknown = fields.clone();
    unknown.insert("__unexpected_argument__".into(), json!(true));
    out.push(Value::Object(unknown));
    out.push(json!("not an object"));
    out
}
