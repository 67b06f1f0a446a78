//! The JSON Schema of `toolgate.toml`, generated from the config types
//! (`toolgate config-schema`, committed as `config/toolgate.schema.json`).
//!
//! Editors with a TOML language server (Taplo, Even Better TOML) read it
//! through the `#:schema` line at the top of a config file and complete and
//! check keys as the user types. The schema is derived with `schemars` from
//! the same structs toolgate deserializes, so every key's type, default and
//! `///` doc comment comes from one place. What serde's derive cannot see is
//! said here: durations are humantime strings, tool policies are globs, and
//! any value may be a `${VAR}` reference that toolgate expands before typing
//! (see [`AcceptReferences`]).

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

use super::Config;

/// A string that holds a `${VAR}` reference somewhere (unanchored: text may
/// surround it). toolgate expands it before the value is typed, so such a
/// string may stand where a number, a boolean or an enumerated value goes.
const REFERENCE: &str = r"\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}";

/// One span of a humantime duration: a number (with an optional fraction)
/// and a unit, as `humantime::parse_duration` spells them.
const DURATION_SPAN: &str = r"[0-9]+(\.[0-9]+)?\s*(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)";

/// The schema as `toolgate config-schema` prints it: pretty JSON and a
/// final newline, byte for byte what `config/toolgate.schema.json` holds.
pub fn schema_json() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The JSON Schema (draft 7, which every TOML language server reads) of the
/// configuration file.
pub fn schema() -> Schema {
    let generator = SchemaSettings::draft07().with_transform(AcceptReferences).into_generator();
    let mut schema = generator.into_root_schema_for::<Config>();
    schema.insert("title".into(), "toolgate configuration (toolgate.toml)".into());
    schema.insert(
        "description".into(),
        "The configuration file of toolgate, a transparent MCP gateway. Any string value may hold `${NAME}` \
         (the environment variable NAME; an error if it is unset), `${NAME:-default}` (default when NAME is unset \
         or empty) or `$${` (a literal `${`); after expansion a string may fill a number or a boolean, e.g. \
         `max_body_bytes = \"${MAX_BODY:-4194304}\"`. Keys of [server], [disclosure], [metrics], [tracing], \
         [state] and [mrtr] can also be set as TOOLGATE_<SECTION>__<KEY> environment variables. Unknown keys are \
         errors."
            .into(),
    );
    schema
}

/// Schema of a `humantime` duration string (`"30s"`, `"1h 30m"`), the form
/// of every duration in the file (`humantime_serde` reads them). A
/// `Duration` field takes `#[schemars(with = "super::schema::DurationText")]`
/// beside `#[serde(with = "humantime_serde")]`; without it the derive fails
/// with "expected type, found crate `humantime_serde`".
pub(crate) struct DurationText;

impl JsonSchema for DurationText {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A span of time: a number and a unit, e.g. `\"500ms\"`, `\"30s\"`, `\"5m\"`, `\"1h\"`, \
                or several, e.g. `\"1h 30m\"`. Units: `ns`, `us`, `ms`, `s` (`sec`, `seconds`), `m` (`min`, \
                `minutes`), `h` (`hr`, `hours`), `d` (`days`), `w` (`weeks`), `M` (`months`), `y` (`years`). \
                `\"0\"` is zero. A bare number is not a duration.",
            "pattern": format!(r"^(0|\s*({DURATION_SPAN}\s*)+)$|{REFERENCE}"),
        })
    }
}

/// Schema of a tool-name glob of `[[auth.clients]]` policies (compiled by
/// `globset`).
pub(crate) struct Glob;

impl JsonSchema for Glob {
    fn schema_name() -> Cow<'static, str> {
        "Glob".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A glob over exposed tool names (after prefixing, e.g. `github__get_*`): `*` matches \
                any run of characters (`_` included), `?` one character, `[abc]` one of a class, `{a,b}` either \
                alternative. The whole name must match.",
            "minLength": 1,
        })
    }
}

/// Lets every value that toolgate would also take from an expanded `${VAR}`
/// string accept one, removes `null` (TOML has none: an unset option is a
/// missing key), and drops the defaults of whole tables (each key keeps its
/// own, which is what editors and the book show).
#[derive(Clone)]
struct AcceptReferences;

impl Transform for AcceptReferences {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else { return };

        // `Option<T>`: toolgate never reads a null, TOML cannot write one.
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                object.insert("type".into(), only);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = object.get_mut(key) {
                options.retain(|o| o.get("type").and_then(Value::as_str) != Some("null"));
            }
        }
        if let Some(Value::Array(options)) = object.get("anyOf")
            && options.len() == 1
        {
            // One schema left after dropping null. `allOf` rather than its
            // keys in place: beside a `$ref`, draft 7 ignores every other key
            // (the description, the default).
            if let Some(only) = object.remove("anyOf") {
                object.insert("allOf".into(), only);
            }
        }

        // Doc comments keep their line breaks; a hover or a table cell
        // wants paragraphs.
        if let Some(Value::String(text)) = object.get_mut("description") {
            *text = text
                .split("\n\n")
                .map(|para| para.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
                .join("\n\n");
        }

        // Rust's integer widths (`uint`, `uint32`, `double`) mean nothing to
        // a TOML editor; the minimum stays.
        object.remove("format");

        // Numbers and booleans: a `${VAR}` string is expanded, then typed.
        if let Some(Value::String(t)) = object.get("type")
            && matches!(t.as_str(), "integer" | "number" | "boolean")
        {
            let t = t.clone();
            object.insert("type".into(), Value::Array(vec![t.into(), "string".into()]));
            object.insert("pattern".into(), REFERENCE.into());
        }

        // Enumerated strings (`mode`, `sharing`, …): a reference may name one.
        if let Some(Value::Array(options)) = object.get_mut("oneOf")
            && !options.is_empty()
            && options.iter().all(|o| o.get("const").is_some_and(Value::is_string))
        {
            options.push(serde_json::json!({
                "type": "string",
                "pattern": REFERENCE,
                "description": "A `${VAR}` reference that expands to one of the values above.",
            }));
        }

        // A table's default repeats its keys' defaults (an empty one stays:
        // `env = {}` says what an unset map means).
        if object.get("default").and_then(Value::as_object).is_some_and(|d| !d.is_empty()) {
            object.remove("default");
        }
    }
}
