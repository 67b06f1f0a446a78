//! Loading: the TOML file, then `TOOLGATE_<SECTION>__<KEY>` environment
//! overrides, then `${VAR}` expansion, then typing, path resolution and
//! validation.
//!
//! The layered tree is kept as a figment [`Value`] until expansion is done,
//! so every error can name both the key (`upstream[1].timeout`) and where the
//! value came from (the file, or the environment variable that set it).

use std::path::{Component, Path, PathBuf};

use figment::error::{Actual, Kind};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::Value;
use figment::{Figment, Metadata};

use super::Config;
use super::expand;
use super::path::TomlPath;
use super::validate::{self, Problem};

/// Prefix of environment overrides.
const ENV_PREFIX: &str = "TOOLGATE_";
/// Separator between section and key: only `TOOLGATE_<SECTION>__<KEY>`
/// variables are overrides. The rest (`TOOLGATE_CONFIG`, `TOOLGATE_LOG`,
/// `TOOLGATE_EXE`, the `${TOOLGATE_EXE}` built-in, variables of other tools
/// that share the prefix) are not configuration keys and must not trip
/// `deny_unknown_fields`.
const ENV_SEPARATOR: &str = "__";

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

/// Loads and validates the configuration file at `path`, with environment
/// overrides and `${VAR}` expansion. Relative `cwd` and `descriptions_dir`
/// are resolved against the file's directory.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Parse(format!("cannot read config file {}: {e}", path.display())))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = std::path::absolute(dir)
        .map_err(|e| ConfigError::Parse(format!("cannot resolve the directory of {}: {e}", path.display())))?;
    load_layered(&text, &path.display().to_string(), &base)
}

/// Runs `f` in a figment jail (private cwd, environment restored after) and
/// hands its result out. For tests: loading reads `TOOLGATE_*` variables,
/// which other tests set (in their own jails) at the same time.
#[cfg(test)]
#[allow(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
pub(crate) fn in_jail<T>(f: impl FnOnce(&mut figment::Jail) -> T) -> T {
    let mut out = None;
    figment::Jail::expect_with(|jail| {
        out = Some(f(jail));
        Ok(())
    });
    out.expect("the jail ran the closure")
}

/// [`load_str`] inside figment's jail, for tests (see [`in_jail`]).
#[cfg(test)]
pub(crate) fn load_str_jailed(text: &str) -> Result<Config, ConfigError> {
    in_jail(|_| load_str(text))
}

/// Loads and validates configuration text, with environment overrides and
/// `${VAR}` expansion. Relative paths are resolved against the current
/// directory.
pub fn load_str(text: &str) -> Result<Config, ConfigError> {
    let base = std::env::current_dir()
        .map_err(|e| ConfigError::Parse(format!("cannot determine the current directory: {e}")))?;
    load_layered(text, "config text", &base)
}

/// As [`load_str`], resolving relative paths against `base_dir`.
pub fn load_str_in(text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
    let base = std::path::absolute(base_dir)
        .map_err(|e| ConfigError::Parse(format!("cannot resolve {}: {e}", base_dir.display())))?;
    load_layered(text, "config text", &base)
}

/// The environment override provider.
fn env_overrides() -> Env {
    Env::prefixed(ENV_PREFIX).filter(|key| key.as_str().contains(ENV_SEPARATOR)).split(ENV_SEPARATOR)
}

/// `label` names the source in messages (the file path); `base` is absolute.
fn load_layered(text: &str, label: &str, base: &Path) -> Result<Config, ConfigError> {
    reject_upstream_overrides()?;
    let figment = Figment::from(Toml::string(text)).merge(env_overrides());
    let raw = figment.find_value("").map_err(|e| ConfigError::Parse(describe_source_error(e, label)))?;

    let mut expanded = raw.clone();
    let problems = expand::expand_tree(&mut expanded, &expand::process_env);
    if !problems.is_empty() {
        return Err(ConfigError::Invalid(with_env_sources(problems, &figment)));
    }

    // Lossy: after expansion, "8080" or "true" in a string must still fill a
    // number or a boolean (`max_body_bytes = "${MAX_BODY:-4194304}"`).
    let mut config: Config = Figment::from(Serialized::defaults(&expanded))
        .extract_lossy()
        .map_err(|e| ConfigError::Parse(describe_type_error(e, &raw, &figment, label)))?;

    resolve_paths(&mut config, base);
    let problems = validate::check(&config, &|i, key| written_upstream_key(&raw, i, key));
    if problems.is_empty() { Ok(config) } else { Err(ConfigError::Invalid(with_env_sources(problems, &figment))) }
}

/// `[[upstream]]` is an array; `TOOLGATE_UPSTREAM__...` would replace it with a
/// table and lose every upstream, so it is refused with a pointer to `${VAR}`.
fn reject_upstream_overrides() -> Result<(), ConfigError> {
    let names: Vec<String> = env_overrides()
        .iter()
        .filter(|(key, _)| key.as_str() == "upstream" || key.as_str().starts_with("upstream."))
        .map(|(key, _)| env_var_name(key.as_str()))
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(ConfigError::Parse(format!(
        "environment variable {}: [[upstream]] entries cannot be overridden from the environment; \
         use ${{VAR}} references in the config file instead",
        names.join(", ")
    )))
}

/// `server.listen` -> `TOOLGATE_SERVER__LISTEN`.
fn env_var_name(dotted: &str) -> String {
    format!("{ENV_PREFIX}{}", dotted.replace('.', "__").to_ascii_uppercase())
}

fn is_env(metadata: &Metadata) -> bool {
    metadata.name.contains("environment variable")
}

/// The environment variable that set the value at `path`, if any. Only
/// `[server]` and `[disclosure]` keys can come from the environment, and
/// their keys are bare, so the display path maps back to a figment key.
fn env_source(figment: &Figment, path: &str) -> Option<String> {
    let key = path.split('[').next().unwrap_or(path);
    if key.contains('"') || key.is_empty() {
        return None;
    }
    figment.find_metadata(key).filter(|m| is_env(m)).map(|_| env_var_name(key))
}

fn with_env_sources(problems: Vec<Problem>, figment: &Figment) -> Vec<Problem> {
    problems
        .into_iter()
        .map(|mut p| {
            if let Some(var) = env_source(figment, &p.path) {
                p.message = format!("{} (set by environment variable {var})", p.message);
            }
            p
        })
        .collect()
}

/// Errors from reading the sources themselves (TOML syntax).
fn describe_source_error(error: figment::Error, label: &str) -> String {
    error.into_iter().map(|e| format!("{label}: {}", e.kind)).collect::<Vec<_>>().join("\n")
}

/// A deserialization error, with the key path and where the value came from.
fn describe_type_error(error: figment::Error, raw: &Value, figment: &Figment, label: &str) -> String {
    error
        .into_iter()
        .map(|e| {
            let path = display_path(raw, &e.path);
            let shown = path.to_string();
            let source =
                env_source(figment, &shown).map_or_else(|| label.to_owned(), |v| format!("environment variable {v}"));
            let message = describe_kind(&e.kind);
            let hint = hint(&shown, &e.kind);
            if path.segments().is_empty() {
                format!("{source}: {message}{hint}")
            } else {
                format!("{source}: {shown}: {message}{hint}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Figment error paths are keys, with array indexes as numbers; use the
/// tree to tell `upstream.1` (an index) from a table key that is a number.
fn display_path(raw: &Value, segments: &[String]) -> TomlPath {
    let mut path = TomlPath::root();
    let mut current = Some(raw);
    for segment in segments {
        current = match (current, segment.parse::<usize>()) {
            (Some(Value::Array(_, items)), Ok(i)) => {
                path = path.index(i);
                items.get(i)
            }
            (Some(Value::Dict(_, dict)), _) => {
                path = path.key(segment);
                dict.get(segment)
            }
            _ => {
                path = path.key(segment);
                None
            }
        };
    }
    path
}

/// figment's own wording for these nests backticks (``expected `one of `a`...``).
fn describe_kind(kind: &Kind) -> String {
    match kind {
        Kind::UnknownField(found, expected) => format!("unknown key `{found}`, expected {}", one_of(expected)),
        Kind::UnknownVariant(found, expected) => format!("unknown value `{found}`, expected {}", one_of(expected)),
        other => other.to_string(),
    }
}

fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => "nothing here".to_owned(),
        [one] => one.clone(),
        [a, b] => format!("{a} or {b}"),
        many => format!("one of {}", many.join(", ")),
    }
}

/// A nudge for mistakes that produce cryptic serde messages.
fn hint(path: &str, kind: &Kind) -> &'static str {
    match kind {
        Kind::InvalidType(Actual::Map, _) if path == "upstream" => {
            " (write each upstream as an [[upstream]] table, with double brackets)"
        }
        Kind::InvalidType(Actual::Unsigned(_) | Actual::Signed(_) | Actual::Float(_), expected)
            if expected == "a duration" =>
        {
            " (write durations as strings, e.g. \"30s\", \"5m\" or \"1h\")"
        }
        _ => "",
    }
}

/// Whether upstream `index` has `key` in the source (before defaults).
fn written_upstream_key(raw: &Value, index: usize, key: &str) -> bool {
    let Some(Value::Array(_, upstreams)) = raw.find_ref("upstream") else { return false };
    matches!(upstreams.get(index), Some(Value::Dict(_, dict)) if dict.contains_key(key))
}

/// Makes relative `cwd`, `descriptions_dir`, `auth.jwt.jwks_file`,
/// `disclosure.lock` and `identity.signing_keys` absolute against `base`.
fn resolve_paths(config: &mut Config, base: &Path) {
    let jwks_file = config.auth.jwt.as_mut().and_then(|jwt| jwt.jwks_file.as_mut());
    let files = config.disclosure.lock.as_mut().into_iter().chain(config.identity.signing_keys.iter_mut());
    let upstream_paths =
        config.upstreams.iter_mut().flat_map(|u| [u.cwd.as_mut(), u.descriptions_dir.as_mut()]).flatten();
    for path in upstream_paths.chain(jwks_file).chain(files) {
        if path.is_relative() {
            *path = join_clean(base, path);
        }
    }
}

/// `base.join(rel)` without `.` components, so `./x` prints as `<base>/x`.
fn join_clean(base: &Path, rel: &Path) -> PathBuf {
    let mut out = base.to_path_buf();
    for component in rel.components() {
        if component != Component::CurDir {
            out.push(component);
        }
    }
    out
}

#[cfg(test)]
mod tests;
