//! The lockfile's format: reading, writing, and the digest of a tool.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

/// A lockfile: the approved definition of every tool of every upstream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lockfile {
    /// The format version (1).
    pub version: u32,
    /// By upstream name.
    pub upstreams: BTreeMap<String, LockedUpstream>,
}

/// One upstream's approved tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedUpstream {
    /// By the upstream's own tool name.
    pub tools: BTreeMap<String, LockedTool>,
}

/// One approved tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedTool {
    /// `sha256:<hex>` of the definition's canonical JSON.
    pub digest: String,
    /// The whole `Tool` object, as the upstream listed it.
    pub definition: Value,
}

impl LockedTool {
    /// `definition`, approved.
    pub fn of(definition: &Value) -> Self {
        Self { digest: digest(definition), definition: canonical(definition) }
    }
}

/// Why a lockfile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read the lockfile {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the lockfile {path} is not a toolgate lockfile: {reason}")]
    Format { path: String, reason: String },
    #[error("cannot write the lockfile {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

impl Lockfile {
    /// An empty lockfile of this version.
    pub fn new() -> Self {
        Self { version: VERSION, upstreams: BTreeMap::new() }
    }

    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Self, LockError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| LockError::Read { path: shown.clone(), source })?;
        let lock: Lockfile = serde_json::from_str(&text)
            .map_err(|e| LockError::Format { path: shown.clone(), reason: e.to_string() })?;
        if lock.version != VERSION {
            let reason = format!("version {} (this toolgate reads version {VERSION})", lock.version);
            return Err(LockError::Format { path: shown, reason });
        }
        for (upstream, tools) in &lock.upstreams {
            for (name, tool) in &tools.tools {
                if tool.digest != digest(&tool.definition) {
                    let reason =
                        format!("the digest of {upstream}/{name} does not match its definition (edited by hand?)");
                    return Err(LockError::Format { path: shown, reason });
                }
            }
        }
        Ok(lock)
    }

    /// The lockfile as written: pretty JSON, keys sorted, a final newline.
    pub fn to_text(&self) -> String {
        pretty(&serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// Writes it to `path` (a new file renamed over the old one).
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let shown = path.display().to_string();
        let tmp = path.with_extension("lock.new");
        std::fs::write(&tmp, self.to_text())
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|source| LockError::Write { path: shown, source })
    }
}

/// `sha256:<hex>` of `definition`'s canonical JSON (RFC 8785).
pub fn digest<T: Serialize>(definition: &T) -> String {
    let canonical = serde_json_canonicalizer::to_vec(definition).unwrap_or_default();
    let hash = crate::config::sha256(&canonical);
    format!("sha256:{}", hex::encode(hash))
}

/// `value` pretty-printed with every object's keys in RFC 8785's order and
/// a final newline: the lockfile's text, and each side of a drift's diff.
pub(super) fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&canonical(value)).unwrap_or_default();
    text.push('\n');
    text
}

/// `value` with every object's keys in sorted order (RFC 8785's order), so
/// that it prints the same whatever order it was built in.
fn canonical(value: &Value) -> Value {
    serde_json_canonicalizer::to_string(value)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| value.clone())
}
