//! Typed access to tool arguments, with the error messages a model can act on.
//!
//! Every getter treats an absent key and `null` alike (`Ok(None)`), and fails
//! with a [`ToolFailure::Tool`] naming the argument, what was expected and
//! what arrived.

use serde_json::{Map, Value};

use super::registry::ToolFailure;

/// A view of a tool's `arguments` object (or of an object nested in it).
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    map: &'a Map<String, Value>,
    path: Option<&'a str>,
}

impl<'a> Args<'a> {
    /// Wraps the top-level arguments.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self { map, path: None }
    }

    fn name(&self, key: &str) -> String {
        match self.path {
            Some(p) => format!("{p}.{key}"),
            None => key.to_owned(),
        }
    }

    fn fail(&self, key: &str, expected: &str, got: &Value) -> ToolFailure {
        ToolFailure::msg(format!("Argument '{}' must be {expected} (got {}).", self.name(key), describe(got)))
    }

    /// Fails if any key is not in `allowed`, listing the accepted ones.
    pub fn allow_only(&self, allowed: &[&str]) -> Result<(), ToolFailure> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(ToolFailure::msg(format!(
                "Unknown argument '{}'. Accepted arguments: {}.",
                self.name(k),
                allowed.join(", ")
            ))),
        }
    }

    /// The raw value; `None` if absent or `null`.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether the key is present with an explicit `null`.
    pub fn is_null(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(Value::is_null)
    }

    /// An optional string.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.fail(key, "a string", v)),
        }
    }

    /// A required, non-blank string.
    pub fn required_str(&self, key: &str) -> Result<&'a str, ToolFailure> {
        match self.str(key)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(ToolFailure::msg(format!("Argument '{}' must not be empty.", self.name(key)))),
            None => Err(ToolFailure::msg(format!("Missing required argument '{}'.", self.name(key)))),
        }
    }

    /// An optional integer (`3.0` counts as 3).
    pub fn int(&self, key: &str) -> Result<Option<i64>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match (v.as_i64(), v.as_f64()) {
                (Some(n), _) => Ok(Some(n)),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                _ => Err(self.fail(key, "an integer", v)),
            },
        }
    }

    /// An optional integer within `min..=max`.
    pub fn int_in(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, ToolFailure> {
        match self.int(key)? {
            Some(n) if !(min..=max).contains(&n) => Err(ToolFailure::msg(format!(
                "Argument '{}' must be between {min} and {max} (got {n}).",
                self.name(key)
            ))),
            n => Ok(n),
        }
    }

    /// An optional finite number.
    pub fn number(&self, key: &str) -> Result<Option<f64>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_f64().filter(|f| f.is_finite()).map(Some).ok_or_else(|| self.fail(key, "a number", v)),
        }
    }

    /// A required finite number.
    pub fn required_number(&self, key: &str) -> Result<f64, ToolFailure> {
        self.number(key)?.ok_or_else(|| ToolFailure::msg(format!("Missing required argument '{}'.", self.name(key))))
    }

    /// An optional boolean.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.fail(key, "true or false", v)),
        }
    }

    /// An optional string that must be one of `allowed`.
    pub fn one_of(&self, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, ToolFailure> {
        match self.str(key)? {
            Some(s) if !allowed.contains(&s) => Err(ToolFailure::msg(format!(
                "Argument '{}' must be one of: {} (got \"{s}\").",
                self.name(key),
                allowed.join(", ")
            ))),
            s => Ok(s),
        }
    }

    /// An optional array of strings.
    pub fn str_list(&self, key: &str) -> Result<Option<Vec<&'a str>>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.fail(key, "an array of strings", v)))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.fail(key, "an array of strings", v)),
        }
    }

    /// An optional array of numbers.
    pub fn number_list(&self, key: &str) -> Result<Option<Vec<f64>>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_f64().filter(|f| f.is_finite()).ok_or_else(|| self.fail(key, "an array of numbers", v)))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.fail(key, "an array of numbers", v)),
        }
    }

    /// An optional nested object, as `Args` whose messages name `key.field`.
    pub fn object(&self, key: &'a str) -> Result<Option<Args<'a>>, ToolFailure> {
        match self.get(key) {
            None => Ok(None),
            // Messages name the innermost key only; the demo nests one level.
            Some(Value::Object(map)) => Ok(Some(Args { map, path: Some(key) })),
            Some(v) => Err(self.fail(key, "an object", v)),
        }
    }

    /// Whether no keys are present.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A short description of a JSON value for error messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() > 40 => format!("a {}-character string", s.chars().count()),
        Value::String(s) => format!("\"{s}\""),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(_) => "an object".into(),
    }
}
