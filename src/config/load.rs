//! Loading: TOML file, `TOOLGATE_*` env overrides, `${VAR}` expansion.

use std::path::Path;

use super::Config;
use super::validate::Problem;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read or parsed, or a value has the wrong type.
    #[error("{0}")]
    Parse(String),
    /// The configuration parsed but is invalid; every problem is listed.
    #[error("invalid configuration:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
}

/// Loads and validates the configuration at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Parse(format!("{}: {e}", path.display())))?;
    load_str(&text)
}

/// Loads and validates configuration text.
pub fn load_str(text: &str) -> Result<Config, ConfigError> {
    toml_from_str(text)
}

fn toml_from_str(text: &str) -> Result<Config, ConfigError> {
    use figment::Figment;
    use figment::providers::{Format, Toml};
    Figment::from(Toml::string(text)).extract().map_err(|e| ConfigError::Parse(e.to_string()))
}
