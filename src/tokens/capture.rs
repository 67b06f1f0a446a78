//! Listing an upstream's tools for measurement, and storing them as a catalog
//! file (the corpus under `tests/corpus/`).
//!
//! The connection is a control-style session: toolgate's own `clientInfo`, no
//! capabilities, so the upstream cannot ask anything of a client. Requests it
//! sends anyway are refused, notifications are ignored. The whole tool list is
//! crawled (every page), then the upstream is shut down the polite way.
//!
//! A catalog file records where the catalog came from: the package and version
//! are parsed from the upstream's `command` and `args` (see [`package_ref`]),
//! so a capture configuration pins exact versions in its `args`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::measure::UpstreamInput;
use crate::config::UpstreamConfig;
use crate::jsonrpc::{ErrorObject, Notification, Outcome, Request, codes};
use crate::protocol::method;
use crate::upstream::{self, Cause, ClientHello, ConnectOptions, Peer, PeerEvents, UpstreamError};
use crate::upstream::{crawl, toolgate_info};

#[cfg(test)]
mod tests;

/// A stored tool catalog: one upstream's complete `tools/list`, with where and
/// when it was captured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogFile {
    /// The upstream's configured name.
    pub server: String,
    /// Its package (`@scope/pkg`, `pkg`), when the command names one.
    pub package: Option<String>,
    /// The package version pinned in the command, when it pins one.
    pub version: Option<String>,
    /// The capture date, `YYYY-MM-DD` (UTC).
    pub captured: String,
    /// The registry of the package: `npm` or `pypi`.
    pub source: Option<String>,
    /// The upstream's `serverInfo` from `initialize`.
    #[serde(rename = "serverInfo")]
    pub server_info: Value,
    /// Every tool, verbatim, in listing order.
    pub tools: Vec<Value>,
}

/// A package named by an upstream's command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRef {
    /// `npm` (for `npx`, `npm exec`) or `pypi` (for `uvx`, `uv tool run`,
    /// `pipx run`).
    pub source: &'static str,
    /// The package name, without version or extras.
    pub package: String,
    /// The pinned version (`pkg@1.2.3`, `pkg==1.2.3`), if any.
    pub version: Option<String>,
}

/// Why a catalog file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    /// It could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// It is not a catalog file.
    #[error("{path}: not a catalog file: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: serde_json::Error,
    },
}

/// What an upstream listed.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Its `serverInfo`.
    pub server_info: Value,
    /// Every tool, from every page.
    pub tools: Vec<Value>,
}

/// Connects to `config`'s upstream, crawls its whole tool list and shuts it
/// down.
pub async fn list_tools(config: &UpstreamConfig, http: &reqwest::Client) -> Result<Listed, UpstreamError> {
    let label: Arc<str> = Arc::from(config.name.as_str());
    let target = config.target().map_err(|errors| {
        let reasons: Vec<String> = errors.iter().map(ToString::to_string).collect();
        UpstreamError::Start { upstream: label.clone(), source: Cause::msg(reasons.join("; ")) }
    })?;
    let options = ConnectOptions {
        label,
        hello: ClientHello { capabilities: json!({}), client_info: toolgate_info() },
        events: Arc::new(Quiet),
        attribute_to_latest_call: false,
        timeout: config.timeout,
        cancel_timeout: config.cancel_timeout,
        protocol: config.protocol.into(),
        era: None,
        control: false,
    };
    let peer = upstream::connect(&target, http, options).await?;
    let server_info = peer.hello().map_or(Value::Null, |h| h.server_info.clone());
    let tools = crawl(&peer, config.timeout, method::TOOLS_LIST, "tools").await;
    peer.shutdown().await;
    Ok(Listed { server_info, tools: tools? })
}

/// Events of a measuring session: nothing is routed anywhere.
struct Quiet;

impl PeerEvents for Quiet {
    fn notification(&self, peer: &Arc<Peer>, notification: Notification) {
        tracing::debug!(upstream = %peer.label(), method = %notification.method, "notification ignored");
    }

    fn request(&self, peer: Arc<Peer>, request: Request, _cancel: CancellationToken) {
        let error = ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("{} is not available: toolgate is only listing tools", request.method),
        );
        crate::spawn(async move { peer.respond(request.id, Outcome::error(error)).await });
    }

    fn closed(&self, _peer: &Arc<Peer>, _reason: &str) {}
}

impl CatalogFile {
    /// A catalog file for what `config`'s upstream listed, captured on `date`.
    pub fn new(config: &UpstreamConfig, listed: Listed, date: String) -> CatalogFile {
        let package = package_ref(config);
        CatalogFile {
            server: config.name.clone(),
            package: package.as_ref().map(|p| p.package.clone()),
            version: package.as_ref().and_then(|p| p.version.clone()),
            captured: date,
            source: package.map(|p| p.source.to_owned()),
            server_info: listed.server_info,
            tools: listed.tools,
        }
    }

    /// Reads a catalog file.
    pub fn read(path: &Path) -> Result<CatalogFile, CatalogFileError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| CatalogFileError::Read { path: path.to_owned(), source })?;
        serde_json::from_str(&text).map_err(|source| CatalogFileError::Parse { path: path.to_owned(), source })
    }

    /// The file's text: pretty JSON with a final newline, so captures diff
    /// well in review.
    pub fn to_pretty(&self) -> String {
        // A struct of strings and `Value`s always serializes.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The catalog as the only upstream of a default configuration: a
    /// progressive upstream named after the server, so names are not prefixed.
    pub fn to_input(&self) -> UpstreamInput {
        UpstreamInput {
            config: stored_config(&self.server),
            tools: Ok(self.tools.clone()),
            server_info: Some(self.server_info.clone()),
            package: self.package.clone(),
            version: self.version.clone(),
            extras: Default::default(),
        }
    }
}

/// A progressive upstream config that only carries a name (the command is
/// never run). The name is reduced to `[a-z0-9_-]`, as config names are.
fn stored_config(server: &str) -> UpstreamConfig {
    let name: String = server
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let name = if name.is_empty() { "stored".to_owned() } else { name };
    // Every other key takes its default (so new keys need no change here).
    serde_json::from_value(serde_json::json!({"name": name, "command": "stored-catalog"}))
        .expect("a name and a command make a valid upstream")
}

/// The package an upstream's command runs, parsed from its command line:
///
/// - `npx [-y] @scope/pkg@1.2.3 …`, `npm exec [--] pkg@1.2.3 …`, or
///   `npx -p pkg@1.2.3 bin …`: npm;
/// - `uvx pkg==1.2.3 …` (or `pkg@1.2.3`), `uvx --from pkg==1.2.3 bin …`,
///   `uv tool run …` and `pipx run [--spec pkg==1.2.3] …`: PyPI (extras such
///   as `pkg[cli]` are dropped from the name).
///
/// `None` for any other command (an HTTP upstream, a binary on `PATH`).
pub fn package_ref(config: &UpstreamConfig) -> Option<PackageRef> {
    let command = config.command.as_deref()?;
    let program = Path::new(command).file_name()?.to_str()?;
    let program = program.strip_suffix(".cmd").unwrap_or(program);
    let args: Vec<&str> = config.args.iter().map(String::as_str).collect();
    match (program, args.as_slice()) {
        ("npx", rest) | ("npm", ["exec" | "x", rest @ ..]) => {
            let spec = spec_arg(rest, &["-p", "--package"], &["--call", "-c", "--registry", "--cache"])?;
            let (package, version) = split_npm(spec);
            Some(PackageRef { source: "npm", package, version })
        }
        ("uvx", rest) | ("uv", ["tool", "run", rest @ ..]) | ("pipx", ["run", rest @ ..]) => {
            let with_value =
                ["--with", "-w", "--python", "-p", "--index-url", "--index", "--pip-args", "--with-requirements"];
            let spec = spec_arg(rest, &["--from", "--spec"], &with_value)?;
            let (package, version) = split_pypi(spec);
            Some(PackageRef { source: "pypi", package, version })
        }
        _ => None,
    }
}

/// The package spec in `args`: the value of the first `pick` option
/// (`--from x` or `--from=x`), else the first argument that is not an
/// option (skipping the values of `skip` options).
fn spec_arg<'a>(args: &[&'a str], pick: &[&str], skip: &[&str]) -> Option<&'a str> {
    let mut first_plain = None;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v)),
            _ => (arg, None),
        };
        if pick.contains(&flag) {
            return inline.or_else(|| args.get(i + 1).copied());
        }
        if skip.contains(&flag) && inline.is_none() {
            i += 2;
            continue;
        }
        if arg == "--" {
            return first_plain.or_else(|| args.get(i + 1).copied());
        }
        if !arg.starts_with('-') && first_plain.is_none() {
            first_plain = Some(arg);
        }
        i += 1;
    }
    first_plain
}

/// `@scope/pkg@1.2.3` → (`@scope/pkg`, `1.2.3`); `pkg` → (`pkg`, none).
fn split_npm(spec: &str) -> (String, Option<String>) {
    let search_from = usize::from(spec.starts_with('@'));
    match spec[search_from..].find('@') {
        Some(at) => {
            let at = at + search_from;
            let version = &spec[at + 1..];
            (spec[..at].to_owned(), (!version.is_empty()).then(|| version.to_owned()))
        }
        None => (spec.to_owned(), None),
    }
}

/// `pkg[cli]==1.2.3` → (`pkg`, `1.2.3`); `pkg@1.2.3` the same; other
/// constraints (`>=`) give no version.
fn split_pypi(spec: &str) -> (String, Option<String>) {
    let (name, version) = if let Some((n, v)) = spec.split_once("==") {
        (n, Some(v))
    } else if let Some((n, v)) = spec.split_once('@') {
        (n, Some(v))
    } else {
        let end = spec.find(['<', '>', '=', '!', '~', ';']).unwrap_or(spec.len());
        (&spec[..end], None)
    };
    let name = name.split('[').next().unwrap_or(name).trim();
    let version = version.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    (name.to_owned(), version)
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn today() -> String {
    let rfc3339 = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    rfc3339.chars().take(10).collect()
}
