//! The environment a stdio child gets when `inherit_env` is off: a fixed
//! list of basic variables (what the official SDKs pass), plus the package
//! managers' own settings, minus anything that can carry a credential.
//!
//! `npx` and `uvx` children read their settings from the environment
//! (`NPM_CONFIG_UPDATE_NOTIFIER=false`, `UV_CACHE_DIR`, a registry mirror,
//! `XDG_CACHE_HOME`). A container image or an operator sets those for
//! toolgate's process; without passing them on, npm prints update notices
//! into the log and caches land where the operator did not want them. npm
//! and uv also accept credentials through the same prefixes (npm's `_auth`,
//! `_authToken` and `//registry/:_authToken`, client keys and certificates;
//! uv's `UV_INDEX_<NAME>_PASSWORD`, `UV_PUBLISH_TOKEN`), and any URL may
//! embed `user:password@`: those stay behind, so toolgate's own secrets
//! still do not leak into children. A child that needs one gets it through
//! `env` (or `inherit_env = true`).

use std::ffi::OsString;

/// Passed as they are (what the official SDKs pass).
const BASIC: [&str; 10] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"];

/// XDG base directories: where npm, uv and most tools put caches and config.
const XDG: [&str; 4] = ["XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"];

/// Package-manager settings passed unless they look like credentials. npm
/// reads `npm_config_*` case-insensitively.
const PREFIXES: [&str; 2] = ["npm_config_", "uv_"];

/// A setting whose name (after the prefix, lowercased) contains one of these
/// may hold a credential and is not passed. Deliberately broad: a dropped
/// harmless setting (`UV_KEYRING_PROVIDER`) costs less than a leaked token.
const CREDENTIAL_WORDS: [&str; 11] =
    ["auth", "token", "password", "passwd", "secret", "credential", "username", "email", "otp", "key", "cert"];

/// The variables of toolgate's own environment that a child gets when
/// `inherit_env` is off.
pub(super) fn inherited() -> impl Iterator<Item = (OsString, OsString)> {
    std::env::vars_os().filter(|(key, value)| match (key.to_str(), value.to_str()) {
        (Some(k), Some(v)) => passes(k, v),
        // A non-UTF-8 value cannot be checked for embedded credentials.
        (Some(k), None) => BASIC.contains(&k),
        _ => false,
    })
}

/// Whether variable `key` with `value` is passed to a child.
pub(super) fn passes(key: &str, value: &str) -> bool {
    if BASIC.contains(&key) {
        return true;
    }
    if XDG.contains(&key) {
        return !has_url_credentials(value);
    }
    let lower = key.to_ascii_lowercase();
    let Some(setting) = PREFIXES.iter().find_map(|p| lower.strip_prefix(p)) else {
        return false;
    };
    // Per-registry npm settings (`//registry.example/:_authToken`,
    // `@scope:registry`) are named after a URL: those hold credentials.
    let per_registry = setting.contains(['/', ':']);
    !setting.is_empty()
        && !per_registry
        && !CREDENTIAL_WORDS.iter().any(|w| setting.contains(w))
        && !has_url_credentials(value)
}

/// Whether `value` contains a URL with a user part (`https://user:pw@host/`),
/// e.g. a registry or proxy URL with a password in it.
fn has_url_credentials(value: &str) -> bool {
    value.match_indices("://").any(|(at, sep)| {
        let rest = &value[at + sep.len()..];
        let authority = rest.split(['/', '?', '#', ' ', ',', ';', '\t', '\n']).next().unwrap_or_default();
        authority.contains('@')
    })
}

#[cfg(test)]
mod tests;
