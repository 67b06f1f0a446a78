//! Extras for full descriptions, read from an upstream's `descriptions_dir`.
//!
//! Each `<tool>.json` file may carry `examples`, `usage_guidance` and
//! `error_guidance`; they are added to the tool's full definition. Everything
//! else in such a file (spec 7.1 files also hold `name`, `description`,
//! `inputSchema`) is ignored with a warning: the upstream's own definition is
//! authoritative. Nothing here panics on a bad file; problems become warnings.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

#[cfg(test)]
mod tests;

/// The keys an extras file may set.
pub const EXTRA_KEYS: [&str; 3] = ["examples", "usage_guidance", "error_guidance"];

/// Additions to one tool's full definition. `None` (or JSON `null`) means not set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// Usage examples.
    pub examples: Option<Value>,
    /// Usage notes.
    pub usage_guidance: Option<Value>,
    /// Error documentation.
    pub error_guidance: Option<Value>,
}

impl Extras {
    /// Whether no extra is set.
    pub fn is_empty(&self) -> bool {
        self.examples.is_none() && self.usage_guidance.is_none() && self.error_guidance.is_none()
    }

    /// The extra stored under `key` (one of [`EXTRA_KEYS`]).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match key {
            "examples" => self.examples.as_ref(),
            "usage_guidance" => self.usage_guidance.as_ref(),
            "error_guidance" => self.error_guidance.as_ref(),
            _ => None,
        }
    }
}

/// Reads every `<tool>.json` file in `dir` (not recursively), keyed by the
/// file stem, which is the upstream's tool name. Returns the extras and
/// human-readable warnings, each naming the file. Files other than `*.json`
/// and subfolders are skipped silently; files without any extra are left out.
pub fn load_extras_dir(dir: &Path) -> (HashMap<String, Extras>, Vec<String>) {
    let mut extras = HashMap::new();
    let mut warnings = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            warnings.push(format!("descriptions_dir {}: cannot be read: {e}", dir.display()));
            return (extras, warnings);
        }
    };
    let mut paths: Vec<_> = entries
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry.path()),
            Err(e) => {
                warnings.push(format!("descriptions_dir {}: cannot list an entry: {e}", dir.display()));
                None
            }
        })
        .filter(|p| p.extension().is_some_and(|ext| ext == "json") && !p.is_dir())
        .collect();
    // Sorted so warnings come out in a stable order.
    paths.sort();
    for path in paths {
        let Some(tool) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            warnings.push(format!("{}: the file name is not valid UTF-8; skipped", path.display()));
            continue;
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                warnings.push(format!("{}: cannot be read: {e}", path.display()));
                continue;
            }
        };
        let (found, file_warnings) = parse_extras(&text);
        warnings.extend(file_warnings.into_iter().map(|w| format!("{}: {w}", path.display())));
        if let Some(found) = found.filter(|e| !e.is_empty()) {
            extras.insert(tool, found);
        }
    }
    (extras, warnings)
}

/// Parses one extras file. `None` when the text is not a JSON object.
pub(crate) fn parse_extras(text: &str) -> (Option<Extras>, Vec<String>) {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return (None, vec![format!("invalid JSON: {e}")]),
    };
    let Value::Object(map) = value else {
        return (None, vec!["expected a JSON object".to_owned()]);
    };
    let mut extras = Extras::default();
    let mut ignored = Vec::new();
    for (key, value) in map {
        let slot = match key.as_str() {
            "examples" => &mut extras.examples,
            "usage_guidance" => &mut extras.usage_guidance,
            "error_guidance" => &mut extras.error_guidance,
            _ => {
                ignored.push(key);
                continue;
            }
        };
        *slot = (!value.is_null()).then_some(value);
    }
    let warnings = ignored
        .into_iter()
        .map(|key| {
            format!(
                "key `{key}` ignored (only {} are used; the upstream definition is authoritative)",
                EXTRA_KEYS.map(|k| format!("`{k}`")).join(", ")
            )
        })
        .collect();
    (Some(extras), warnings)
}
