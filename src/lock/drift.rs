//! How an upstream's tools now differ from the approved ones, and what is
//! served for them.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file::{LockedUpstream, digest};

/// What the gateway does with a definition that drifted from the lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnDrift {
    /// Serve the approved definition; refuse calls while the input schema
    /// differs; serve no new tool until it is approved.
    #[default]
    Hold,
    /// Serve what the upstream says now, and report the drift.
    Warn,
}

/// How one tool drifted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DriftKind {
    /// Listed now with another definition than the approved one.
    Changed,
    /// Listed now, never approved.
    New,
    /// New, with the definition (name aside) of an approved tool no longer
    /// listed.
    Renamed,
    /// Approved, no longer listed.
    Removed,
}

impl DriftKind {
    /// Its name in metrics, logs and `toolgate lock --diff`.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftKind::Changed => "changed",
            DriftKind::New => "new",
            DriftKind::Renamed => "renamed",
            DriftKind::Removed => "removed",
        }
    }
}

/// One tool's drift.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// The upstream's own name for the tool (now; the approved one for
    /// `Removed`).
    pub tool: String,
    pub kind: DriftKind,
    /// For `Renamed`: the approved name it had.
    pub from: Option<String>,
    /// For `Changed`: whether its `inputSchema` differs from the approved one.
    pub schema_changed: bool,
    /// The approved definition (`Changed`, `Removed`, and `Renamed`'s old one).
    pub approved: Option<Value>,
    /// The definition now (`Changed`, `New`, `Renamed`).
    pub current: Option<Value>,
}

/// How `current` (an upstream's tools now) differs from `approved` (its
/// entry in the lock; `None`: the lock does not know the upstream).
pub fn compare(approved: Option<&LockedUpstream>, current: &[Value]) -> Vec<Drift> {
    let empty = LockedUpstream::default();
    let approved = approved.unwrap_or(&empty);
    let mut out = Vec::new();
    let listed: HashSet<&str> = current.iter().filter_map(name_of).collect();
    let gone: Vec<(&String, &Value)> = approved
        .tools
        .iter()
        .filter(|(name, _)| !listed.contains(name.as_str()))
        .map(|(name, tool)| (name, &tool.definition))
        .collect();
    let gone_by_shape: HashMap<String, &String> = gone.iter().map(|(name, d)| (nameless_digest(d), *name)).collect();
    let mut renamed_from = HashSet::new();
    for tool in current {
        let Some(name) = name_of(tool) else { continue };
        match approved.tools.get(name) {
            Some(locked) if locked.digest == digest(tool) => {}
            Some(locked) => out.push(Drift {
                tool: name.to_owned(),
                kind: DriftKind::Changed,
                from: None,
                schema_changed: locked.definition.get("inputSchema") != tool.get("inputSchema"),
                approved: Some(locked.definition.clone()),
                current: Some(tool.clone()),
            }),
            None => {
                let from = gone_by_shape.get(&nameless_digest(tool)).map(|n| (*n).clone());
                if let Some(from) = &from {
                    renamed_from.insert(from.clone());
                }
                let approved = from.as_ref().and_then(|f| approved.tools.get(f)).map(|t| t.definition.clone());
                let kind = if from.is_some() { DriftKind::Renamed } else { DriftKind::New };
                out.push(Drift {
                    tool: name.to_owned(),
                    kind,
                    from,
                    schema_changed: false,
                    approved,
                    current: Some(tool.clone()),
                });
            }
        }
    }
    for (name, definition) in gone {
        if renamed_from.contains(name) {
            continue;
        }
        out.push(Drift {
            tool: name.clone(),
            kind: DriftKind::Removed,
            from: None,
            schema_changed: false,
            approved: Some(definition.clone()),
            current: None,
        });
    }
    out
}

/// What the gateway serves of an upstream's tools under a lock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Served {
    /// The definitions to serve, in the upstream's order.
    pub tools: Vec<Value>,
    /// Tools served in their approved form whose calls are refused (their
    /// input schema changed), by the upstream's own name.
    pub held_calls: HashSet<String>,
    /// Every drift found (removals included).
    pub drift: Vec<Drift>,
}

/// What to serve of `current` against `approved`, under `mode`.
pub fn serve(approved: Option<&LockedUpstream>, current: &[Value], mode: OnDrift) -> Served {
    let drift = compare(approved, current);
    if mode == OnDrift::Warn {
        return Served { tools: current.to_vec(), held_calls: HashSet::new(), drift };
    }
    let by_name: HashMap<&str, &Drift> = drift.iter().map(|d| (d.tool.as_str(), d)).collect();
    let mut tools = Vec::with_capacity(current.len());
    let mut held_calls = HashSet::new();
    for tool in current {
        let Some(name) = name_of(tool) else { continue };
        match by_name.get(name) {
            None => tools.push(tool.clone()),
            Some(d) if d.kind == DriftKind::Changed => {
                tools.push(d.approved.clone().unwrap_or_else(|| tool.clone()));
                if d.schema_changed {
                    held_calls.insert(name.to_owned());
                }
            }
            // New or renamed: not served until approved.
            Some(_) => {}
        }
    }
    Served { tools, held_calls, drift }
}

fn name_of(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

/// The digest of a definition without its name.
fn nameless_digest(definition: &Value) -> String {
    let mut copy = definition.clone();
    if let Value::Object(map) = &mut copy {
        map.remove("name");
    }
    digest(&copy)
}
