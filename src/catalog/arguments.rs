//! A call's arguments checked against the tool's full `inputSchema` before
//! the call goes upstream (`validate_arguments`).
//!
//! - The schema's `$schema` names its draft: draft-07, 2019-09 and 2020-12
//!   (draft-04 and draft-06 too); without one it is 2020-12, as MCP
//!   2025-11-25 says. `format` is an annotation only, in every draft.
//! - Nothing is ever fetched: a `$ref` that does not resolve within the
//!   schema (or to a draft's meta-schema, which ship with the validator)
//!   makes the schema broken. An upstream's schema must not make toolgate
//!   reach out anywhere.
//! - Each schema is compiled once per definition fingerprint, on the first
//!   call that needs it, and kept in a cache bounded by the size of the
//!   schemas ([`CACHE_BYTES`]), so a catalog rebuild that keeps a definition
//!   keeps its compiled schema.
//! - A schema that does not compile (not a schema, an unknown `$schema`, an
//!   unresolvable `$ref`, an invalid `pattern`) is logged once as a warning,
//!   and its tool's calls are not checked: toolgate never refuses a call
//!   because an upstream's schema is broken.
//!
//! An invalid call gets an [`InvalidArguments`]: a tool error
//! (`isError: true`, as SEP-1303 asks of input validation errors) whose text
//! is a JSON object shaped like the `TOOL_DESCRIPTION_REQUIRED` refusal,
//! code `INVALID_ARGUMENTS`, naming each failing instance path with its
//! keyword, the validator's message and the part of the schema it failed,
//! within [`MAX_TEXT`] bytes (and how many more errors there were), so the
//! model can correct its call.

use std::sync::Arc;

use jsonschema::{Draft, ValidationError, Validator};
use serde_json::{Map, Value, json};

use super::ToolEntry;

#[cfg(test)]
mod tests;

/// Room for compiled schemas, weighed by the size of their JSON text
/// (compiled, a schema takes a few times that).
pub const CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// Longest text of an [`InvalidArguments`] refusal, in bytes.
pub const MAX_TEXT: usize = 4096;

/// Most errors counted in a refusal; more are not looked for.
const MAX_COUNTED: usize = 1000;

/// Longest message of one error, in bytes.
const MAX_MESSAGE: usize = 300;

/// Longest instance or schema path of one error, in bytes.
const MAX_PATH: usize = 200;

/// Largest schema excerpt of one error, serialized; a larger one is given
/// as truncated text.
const MAX_EXCERPT: usize = 400;

/// Room kept for `,"more_errors":N`.
const MORE_ROOM: usize = 24;

/// The checker: compiled schemas by definition fingerprint.
pub struct Arguments {
    /// foldhash: looked up on every checked call.
    compiled: moka::sync::Cache<u64, Arc<Compiled>, foldhash::fast::RandomState>,
}

impl std::fmt::Debug for Arguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arguments").field("compiled", &self.compiled.entry_count()).finish()
    }
}

impl Default for Arguments {
    fn default() -> Self {
        Self::new(CACHE_BYTES)
    }
}

/// Where a [`ToolEntry`] keeps the schema it was last checked with, so a
/// call does not look it up in the cache (a cache lookup costs more than
/// the check of a small call). It holds it weakly: the cache alone keeps a
/// compiled schema alive, so its bound on memory still holds, and a schema
/// the cache let go is looked up (and compiled) again.
#[derive(Default)]
pub struct CompiledSlot(parking_lot::Mutex<std::sync::Weak<Compiled>>);

impl CompiledSlot {
    fn get(&self) -> Option<Arc<Compiled>> {
        self.0.lock().upgrade()
    }

    fn set(&self, compiled: &Arc<Compiled>) {
        *self.0.lock() = Arc::downgrade(compiled);
    }
}

/// A copy of an entry starts with an empty slot (it is only a shortcut).
impl Clone for CompiledSlot {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// A shortcut, not part of what an entry is: slots are always equal.
impl PartialEq for CompiledSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for CompiledSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledSlot")
    }
}

/// A tool's schema, compiled once.
struct Compiled {
    /// `None`: nothing to check against (no schema, or a broken one).
    validator: Option<Validator>,
    /// Its weight in the cache: the schema's JSON text, in bytes.
    weight: u32,
}

/// Why a tool's `inputSchema` is not checked against.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// `$schema` names a meta-schema toolgate does not know (it never
    /// fetches one).
    #[error("unknown $schema {0:?} (known: draft-04, draft-06, draft-07, 2019-09, 2020-12)")]
    UnknownDraft(String),
    /// The schema is not valid under its draft, or does not compile.
    #[error("{0}")]
    Invalid(String),
}

impl Arguments {
    /// A checker keeping compiled schemas of at most `cache_bytes` of JSON
    /// text.
    pub fn new(cache_bytes: u64) -> Self {
        let compiled = moka::sync::Cache::builder()
            .weigher(|_: &u64, compiled: &Arc<Compiled>| compiled.weight)
            .max_capacity(cache_bytes)
            .build_with_hasher(foldhash::fast::RandomState::default());
        Self { compiled }
    }

    /// Checks the `arguments` of a call to `entry` (missing or `null`:
    /// `{}`) against its full `inputSchema`, when the tool is checked
    /// ([`ToolEntry::validate_arguments`]) and its schema compiles.
    pub fn check(&self, entry: &ToolEntry, arguments: Option<&Value>) -> Result<(), InvalidArguments> {
        if !entry.validate_arguments {
            return Ok(());
        }
        let compiled = match entry.compiled.get() {
            Some(compiled) => compiled,
            None => {
                let compiled = self.compiled.get_with(entry.fingerprint, || Arc::new(compile(entry)));
                entry.compiled.set(&compiled);
                compiled
            }
        };
        let Some(validator) = &compiled.validator else { return Ok(()) };
        let empty;
        let arguments = match arguments {
            None | Some(Value::Null) => {
                empty = Value::Object(Map::new());
                &empty
            }
            Some(arguments) => arguments,
        };
        if validator.is_valid(arguments) {
            return Ok(());
        }
        let schema = entry.full.get("inputSchema").unwrap_or(&Value::Null);
        Err(InvalidArguments::new(&entry.exposed, schema, validator.iter_errors(arguments)))
    }
}

/// `entry`'s schema compiled, or nothing to check against (warned).
fn compile(entry: &ToolEntry) -> Compiled {
    let Some(schema) = entry.full.get("inputSchema") else {
        tracing::debug!(tool = %entry.exposed, "no inputSchema: the tool's arguments are not checked");
        return Compiled { validator: None, weight: 64 };
    };
    let weight = u32::try_from(schema.to_string().len() + 64).unwrap_or(u32::MAX);
    match validator_for(schema) {
        Ok(validator) => Compiled { validator: Some(validator), weight },
        Err(e) => {
            tracing::warn!(
                tool = %entry.exposed,
                upstream_tool = %entry.original,
                error = %e,
                "the tool's inputSchema does not compile: its calls' arguments are not checked"
            );
            Compiled { validator: None, weight }
        }
    }
}

/// `schema` compiled under the draft its `$schema` names (2020-12 without
/// one), with `format` as an annotation and nothing fetched.
pub fn validator_for(schema: &Value) -> Result<Validator, SchemaError> {
    let draft = match schema.get("$schema") {
        Some(Value::String(uri)) => match Draft::from_schema_uri(uri) {
            Draft::Unknown => return Err(SchemaError::UnknownDraft(uri.clone())),
            draft => draft,
        },
        _ => Draft::Draft202012,
    };
    jsonschema::options()
        .with_draft(draft)
        .should_validate_formats(false)
        .offline()
        .build(schema)
        .map_err(|e| SchemaError::Invalid(truncated(&e.to_string(), MAX_MESSAGE)))
}

/// A call whose arguments do not match the tool's `inputSchema`: the tool
/// error the caller gets instead of the upstream's answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the arguments of `{tool}` do not match its inputSchema ({errors} errors)")]
pub struct InvalidArguments {
    /// The tool's exposed name.
    pub tool: String,
    /// How many errors were found (at most [`MAX_COUNTED`]).
    pub errors: usize,
    /// The JSON text the caller reads.
    text: String,
}

impl InvalidArguments {
    fn new<'a>(tool: &str, schema: &Value, found: impl Iterator<Item = ValidationError<'a>>) -> Self {
        let mut listed = Vec::new();
        let mut errors = 0;
        // The text without errors, and the room left for them.
        let head = |count: usize, listed: Vec<Value>| {
            let plural = if count == 1 { "" } else { "s" };
            json!({"error": {
                "code": "INVALID_ARGUMENTS",
                "message": format!(
                    "The arguments of tool '{tool}' do not match its inputSchema ({count} error{plural}); \
                     correct them and call again."
                ),
                "tool": tool,
                "errors": listed,
            }})
        };
        let mut used = head(MAX_COUNTED, Vec::new()).to_string().len() + MORE_ROOM;
        let mut full = false;
        for error in found.take(MAX_COUNTED) {
            errors += 1;
            if full {
                continue;
            }
            let entry = failure(&error, schema);
            let size = entry.to_string().len() + 1;
            if used + size <= MAX_TEXT {
                used += size;
                listed.push(entry);
            } else {
                full = true;
            }
        }
        let more = errors - listed.len();
        let mut body = head(errors, listed);
        if more > 0 {
            body["error"]["more_errors"] = json!(more);
        }
        Self { tool: tool.to_owned(), errors, text: body.to_string() }
    }

    /// The JSON text of the refusal.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `tools/call` result: the refusal as text, `isError: true`.
    pub fn tool_result(&self) -> Value {
        json!({"content": [{"type": "text", "text": self.text}], "isError": true})
    }
}

/// One error as the caller reads it: where, which keyword, the validator's
/// message, and the part of the schema it failed.
fn failure(error: &ValidationError<'_>, schema: &Value) -> Value {
    let schema_path = error.schema_path().as_str();
    // A property a `dependencies` (or `dependentRequired`) entry requires
    // is reported as `required`: named by the keyword the schema has.
    let keyword = match schema_path.rsplit('/').next() {
        Some(k @ ("dependencies" | "dependentRequired")) => k,
        _ => error.kind().keyword(),
    };
    let mut entry = json!({
        "path": truncated(error.instance_path().as_str(), MAX_PATH),
        "keyword": keyword,
        "message": truncated(&error.to_string(), MAX_MESSAGE),
        "schema_path": truncated(schema_path, MAX_PATH),
    });
    if let Some(expected) = schema.pointer(schema_path) {
        let text = expected.to_string();
        entry["expected"] = match text.len() <= MAX_EXCERPT {
            true => expected.clone(),
            false => Value::String(truncated(&text, MAX_EXCERPT)),
        };
    }
    entry
}

/// `text` cut to at most `max` bytes (on a character boundary), marked `…`
/// when cut.
fn truncated(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
