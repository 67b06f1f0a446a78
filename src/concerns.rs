//! Concern-based filtering (MCP discussion #1936), as toolgate applies it in
//! front of its upstreams.
//!
//! The operator declares concerns (`[[concerns]]`: a name, a description,
//! the values, maybe a default) and maps primitives to values. A client
//! configures values; what it is *shown* (`tools/list`, the search listing,
//! `resources/list`, `resources/templates/list`, `prompts/list`) is filtered
//! by them:
//! - a primitive is shown iff, for every concern in effect, its mapped value
//!   (if it has one) equals the configured value; unmapped primitives stay;
//! - a client that configured nothing sees everything;
//! - once a client has a configuration, the concerns it omits take their
//!   declared `default` where there is one; those without a default do not
//!   filter.
//!
//! It is not access control (the proposal says so): a filtered-out tool can
//! still be described and called. Client policy decides what may be used.
//!
//! This module is pure: [`Declared`] (the declarations), [`Mapping`] (one
//! primitive's values, resolved from its layers) and [`Configuration`] (a
//! client's values and the [`Filter`] they make).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::config::{ConcernConfig, ConcernValues};
use crate::jsonrpc::ErrorObject;

/// The key of a primitive's concern values in its `_meta` (the proposal's).
pub const META_KEY: &str = "concerns";

/// The concerns toolgate declares, in configuration order.
#[derive(Debug, Default)]
pub struct Declared {
    concerns: Vec<ConcernConfig>,
}

/// One primitive's concern values: for each declared concern (by position),
/// the index of its value, or `None` when it has none (it matches any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Mapping(Box<[Option<u16>]>);

/// What a client is shown: for each declared concern (by position), the
/// value a primitive must have if it has one; `None` does not filter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Filter(Box<[Option<u16>]>);

/// A client's concern configuration: the values it set (only declared
/// concerns, only declared values), and the filter they make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration {
    values: ConcernValues,
    filter: Filter,
}

/// Why a configuration was refused: a value its concern does not have
/// (JSON-RPC `-32602`, naming the concern).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConcernError {
    /// The configuration is not an object of strings.
    #[error("concerns must be an object mapping concern names to values")]
    NotAnObject,
    /// A value outside its concern's `values`.
    #[error("`{value}` is not a value of concern `{concern}` (one of: {allowed})")]
    UnknownValue { concern: String, value: String, allowed: String },
    /// More concern names than [`MAX_SENT`].
    #[error("a configuration may name at most {max} concerns")]
    TooMany { max: usize },
}

/// Most concern names one configuration may hold (declared or not): a
/// client has no reason to send more than the few a server declares.
pub const MAX_SENT: usize = 64;

impl ConcernError {
    /// What is wrong, for toolgate's log: never the client's value (a
    /// concern it names is a declared one).
    pub fn summary(&self) -> String {
        match self {
            ConcernError::NotAnObject | ConcernError::TooMany { .. } => self.to_string(),
            ConcernError::UnknownValue { concern, .. } => format!("a value concern `{concern}` does not have"),
        }
    }

    /// The JSON-RPC error (`-32602`).
    pub fn to_error_object(&self) -> ErrorObject {
        let e = ErrorObject::invalid_params(format!("Invalid concerns: {self}"));
        match self {
            ConcernError::NotAnObject | ConcernError::TooMany { .. } => e,
            ConcernError::UnknownValue { concern, value, .. } => {
                e.with_data(json!({"concern": concern, "value": value}))
            }
        }
    }
}

impl Declared {
    /// The configured declarations (already validated).
    pub fn new(concerns: &[ConcernConfig]) -> Self {
        Self { concerns: concerns.to_vec() }
    }

    /// Whether no concern is declared (then nothing is filtered or
    /// announced).
    pub fn is_empty(&self) -> bool {
        self.concerns.is_empty()
    }

    /// The declarations as clients see them (`capabilities.concerns`,
    /// `concerns/list`): `[{name, description, values, default?}]`.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.concerns
                .iter()
                .map(|c| {
                    let mut d = json!({"name": c.name, "description": c.description, "values": c.values});
                    if let Some(default) = &c.default {
                        d["default"] = json!(default);
                    }
                    d
                })
                .collect(),
        )
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.concerns.iter().position(|c| c.name == name)
    }

    fn value_index(&self, concern: usize, value: &str) -> Option<u16> {
        let i = self.concerns[concern].values.iter().position(|v| v == value)?;
        u16::try_from(i).ok()
    }

    /// A primitive's values, from its layers, the first that sets a concern
    /// winning: e.g. its `[upstream.tools.<tool>]` entry, then its
    /// upstream's entry. `meta` (the primitive's own `_meta`, as its
    /// upstream sent it) fills what no layer sets; a value there that is not
    /// declared is ignored.
    pub fn resolve(&self, layers: &[&ConcernValues], meta: Option<&Value>) -> Mapping {
        if self.is_empty() {
            return Mapping::default();
        }
        let own = meta.and_then(|m| m.get(META_KEY)).and_then(Value::as_object);
        let values = (0..self.concerns.len())
            .map(|i| {
                let name = self.concerns[i].name.as_str();
                let from_layers = layers.iter().find_map(|l| l.get(name)).map(String::as_str);
                let value = from_layers.or_else(|| own.and_then(|o| o.get(name)).and_then(Value::as_str))?;
                self.value_index(i, value)
            })
            .collect();
        Mapping(values)
    }

    /// The values of `mapping`, by concern name (for a primitive's
    /// `_meta.concerns`); `None` when it has none.
    pub fn values_of(&self, mapping: &Mapping) -> Option<Map<String, Value>> {
        let values: Map<String, Value> = mapping
            .0
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let c = self.concerns.get(i)?;
                Some((c.name.clone(), json!(c.values.get(usize::from((*v)?))?)))
            })
            .collect();
        (!values.is_empty()).then_some(values)
    }

    /// A client's configuration from the object it sent (`{"security":
    /// "high"}`), or from its stored one: values are checked against their
    /// concern (one outside `values` refuses the whole configuration);
    /// undeclared concern names are dropped, each with a warning.
    pub fn configure(&self, sent: &Value) -> Result<Configuration, ConcernError> {
        let object = sent.as_object().ok_or(ConcernError::NotAnObject)?;
        if object.len() > MAX_SENT {
            return Err(ConcernError::TooMany { max: MAX_SENT });
        }
        let mut values = ConcernValues::new();
        let mut undeclared = Vec::new();
        for (name, value) in object {
            let value = value.as_str().ok_or(ConcernError::NotAnObject)?;
            let Some(i) = self.position(name) else {
                undeclared.push(name.as_str());
                continue;
            };
            if self.value_index(i, value).is_none() {
                return Err(ConcernError::UnknownValue {
                    concern: name.clone(),
                    value: value.to_owned(),
                    allowed: self.concerns[i].values.join(", "),
                });
            }
            values.insert(name.clone(), value.to_owned());
        }
        if !undeclared.is_empty() {
            // One line per configuration, whatever it holds; the names are
            // the client's, so only a few, shortened, and escaped (`?`).
            let some: Vec<String> = undeclared.iter().take(3).map(|n| n.chars().take(64).collect()).collect();
            tracing::warn!(
                undeclared = undeclared.len(),
                names = ?some,
                "a client configured a concern toolgate does not declare; ignored"
            );
        }
        Ok(self.configuration(values))
    }

    /// The configuration of checked `values` (a client's stored ones).
    pub fn configuration(&self, values: ConcernValues) -> Configuration {
        let filter = (0..self.concerns.len())
            .map(|i| {
                let c = &self.concerns[i];
                let value = values.get(&c.name).or(c.default.as_ref())?;
                self.value_index(i, value)
            })
            .collect();
        Configuration { values, filter: Filter(filter) }
    }
}

impl Filter {
    /// Whether a primitive with `mapping` is shown.
    pub fn shows(&self, mapping: &Mapping) -> bool {
        self.0.iter().enumerate().all(|(i, want)| match (want, mapping.0.get(i).copied().flatten()) {
            (Some(want), Some(has)) => *want == has,
            _ => true,
        })
    }

    /// Whether it filters nothing (every concern left open).
    pub fn is_open(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

impl Configuration {
    /// The values the client set (declared concerns only).
    pub fn values(&self) -> &ConcernValues {
        &self.values
    }

    /// What it shows.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }
}

/// A client's configuration, shared by the requests that read it.
pub type Configured = Arc<Configuration>;

/// `concerns` in a JSON object (`initialize` or `notifications/initialized`
/// params, `concerns/update` params, a sessionless request's `_meta`).
pub fn sent_in(object: Option<&Value>) -> Option<&Value> {
    object?.get(META_KEY).filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests;
