//! Validation: every problem in a parsed [`Config`], each with its TOML path.
//!
//! Checks are independent so that one run reports everything a user has to
//! fix, instead of one mistake per restart.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use super::path::TomlPath;
use super::target::TargetError;
use super::{Config, DisclosureConfig, HttpTransport, ServerConfig, UpstreamConfig, UpstreamProtocol};

/// One problem in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// TOML path, e.g. `upstream[1].name`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Smallest accepted `server.max_body_bytes`: anything lower cannot hold an
/// `initialize` request.
pub(super) const MIN_BODY_BYTES: usize = 1024;
/// Most runtime threads `[server] worker_threads` may ask for (a typo guard:
/// each thread reserves a stack).
pub(super) const MAX_WORKER_THREADS: usize = 1024;
/// Smallest accepted `disclosure.max_answer_bytes`: room for a few large
/// tool definitions.
pub(super) const MIN_ANSWER_BYTES: usize = 64 * 1024;
/// Smallest accepted `upstream[].max_message_bytes`.
pub(super) const MIN_MESSAGE_BYTES: usize = 1024;
/// Smallest accepted `disclosure.description_max_chars`.
pub(super) const MIN_DESCRIPTION_CHARS: usize = 20;

/// Keys that only make sense for stdio (`command`) upstreams.
const STDIO_KEYS: [&str; 4] = ["args", "env", "cwd", "inherit_env"];
/// Keys that only make sense for HTTP (`url`) upstreams.
const HTTP_KEYS: [&str; 2] = ["headers", "transport"];

impl Config {
    /// Every problem in this configuration, in file order; empty when valid.
    ///
    /// Relative `cwd` and `descriptions_dir` are checked as they are, i.e.
    /// against the current directory; [`load`](super::load()) resolves them
    /// against the config file's directory first.
    pub fn validate(&self) -> Vec<Problem> {
        check(self, &|_, _| false)
    }
}

/// Validates `config`. `written(i, key)` says whether upstream `i` has `key`
/// in the source; it lets a key whose value equals its default (e.g.
/// `transport = "streamable_http"` on a `command` upstream) still be reported
/// as misplaced.
pub(crate) fn check(config: &Config, written: &dyn Fn(usize, &str) -> bool) -> Vec<Problem> {
    let mut out = Problems(Vec::new());
    check_server(&config.server, &mut out);
    check_disclosure(&config.disclosure, &mut out);
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, upstream) in config.upstreams.iter().enumerate() {
        let path = TomlPath::root().key("upstream").index(i);
        if let Some(first) = names.get(upstream.name.as_str()) {
            out.push(
                path.key("name"),
                format!("upstream name `{}` is already used by upstream[{first}]", upstream.name),
            );
        } else {
            names.insert(&upstream.name, i);
        }
        check_upstream(upstream, &path, &|key| written(i, key), &mut out);
    }
    out.0.extend(super::auth::check(&config.auth, &config.upstreams, config.server.listen));
    out.0.extend(super::observability::check(&config.metrics, &config.tracing, config.server.listen));
    out.0.extend(super::state::check(&config.state));
    out.0.extend(super::mrtr::check(&config.mrtr));
    out.0.extend(super::concerns::check(&config.concerns, &config.upstreams, &config.auth.clients));
    out.0.extend(super::limits::check(&config.limits, &TomlPath::root().key("limits"), true));
    out.0.extend(super::audit::check(&config.audit));
    out.0.extend(super::identity::check(config));
    out.0.extend(super::oauth::check(config));
    for (i, client) in config.auth.clients.iter().enumerate() {
        let root = TomlPath::root().key("auth").key("clients").index(i).key("limits");
        out.0.extend(super::limits::check(&client.limits, &root, false));
    }
    out.0
}

struct Problems(Vec<Problem>);

impl Problems {
    fn push(&mut self, path: TomlPath, message: impl Into<String>) {
        self.0.push(Problem { path: path.to_string(), message: message.into() });
    }

    fn at_least(&mut self, path: TomlPath, value: usize, min: usize) {
        if value < min {
            self.push(path, format!("must be at least {min} (found {value})"));
        }
    }

    fn at_most(&mut self, path: TomlPath, value: usize, max: usize) {
        if value > max {
            self.push(path, format!("must be at most {max} (found {value})"));
        }
    }

    fn positive(&mut self, path: TomlPath, value: Duration) {
        if value.is_zero() {
            self.push(path, "must be greater than zero");
        }
    }
}

fn check_server(server: &ServerConfig, out: &mut Problems) {
    let path = TomlPath::root().key("server");
    if !server.path.starts_with('/') {
        out.push(path.key("path"), format!("`{}` must start with `/`, e.g. `/mcp`", server.path));
    } else if server.path.contains(['?', '#']) || server.path.contains(char::is_whitespace) {
        out.push(
            path.key("path"),
            format!("`{}` must be a plain path, without query, fragment or spaces", server.path),
        );
    }
    out.positive(path.key("session_idle_timeout"), server.session_idle_timeout);
    out.positive(path.key("startup_timeout"), server.startup_timeout);
    out.positive(path.key("sse_keep_alive"), server.sse_keep_alive);
    out.at_least(path.key("max_body_bytes"), server.max_body_bytes, MIN_BODY_BYTES);
    out.positive(path.key("header_read_timeout"), server.header_read_timeout);
    out.positive(path.key("body_read_timeout"), server.body_read_timeout);
    out.positive(path.key("keep_alive_timeout"), server.keep_alive_timeout);
    out.at_least(path.key("max_connections"), server.max_connections, 1);
    out.at_least(path.key("max_sessions"), server.max_sessions, 1);
    out.at_least(path.key("max_requests_per_session"), server.max_requests_per_session, 1);
    out.at_least(path.key("max_subscriptions_per_session"), server.max_subscriptions_per_session, 1);
    out.at_least(path.key("stream_buffer"), server.stream_buffer, 1);
    out.at_most(path.key("worker_threads"), server.worker_threads, MAX_WORKER_THREADS);
    for (key, values) in [("allowed_hosts", &server.allowed_hosts), ("allowed_origins", &server.allowed_origins)] {
        for (i, value) in values.iter().enumerate() {
            if value.trim().is_empty() {
                out.push(path.key(key).index(i), "must not be empty");
            }
        }
    }
    for (i, entry) in server.trusted_proxies.iter().enumerate() {
        if let Err(e) = toolgate_mcp::server::http::parse_network(entry) {
            out.push(path.key("trusted_proxies").index(i), e.to_string());
        }
    }
}

fn check_disclosure(disclosure: &DisclosureConfig, out: &mut Problems) {
    let path = TomlPath::root().key("disclosure");
    out.at_least(path.key("description_max_chars"), disclosure.description_max_chars, MIN_DESCRIPTION_CHARS);
    out.at_least(path.key("max_tools_per_fetch"), disclosure.max_tools_per_fetch, 1);
    out.at_least(path.key("max_answer_bytes"), disclosure.max_answer_bytes, MIN_ANSWER_BYTES);
    out.positive(path.key("grant_ttl"), disclosure.grant_ttl);
    let names = [
        ("describe_tool_name", &disclosure.describe_tool_name),
        ("search_tool_name", &disclosure.search_tool_name),
        ("call_tool_name", &disclosure.call_tool_name),
    ];
    for (i, (key, name)) in names.iter().enumerate() {
        if name.is_empty() || name.len() > 64 || !name.bytes().all(is_tool_name_byte) {
            out.push(
                path.key(key),
                format!("`{name}` is not a valid tool name: use 1 to 64 letters, digits, `_` or `-`"),
            );
        }
        if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
            out.push(path.key(key), format!("must differ from {other}"));
        }
    }
    out.at_least(path.key("search_above"), disclosure.search_above, 1);
    for (i, pattern) in disclosure.pinned.iter().enumerate() {
        if let Err(e) = super::compile_glob(pattern) {
            out.push(path.key("pinned").index(i), e);
        }
    }
}

fn is_tool_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn check_upstream(u: &UpstreamConfig, path: &TomlPath, written: &dyn Fn(&str) -> bool, out: &mut Problems) {
    if u.name.is_empty() {
        out.push(path.key("name"), "must not be empty");
    } else if !u.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-') {
        out.push(
            path.key("name"),
            format!("`{}` is not a valid upstream name: use lowercase letters, digits, `_` and `-`", u.name),
        );
    }

    if let Err(errors) = u.target() {
        for e in errors {
            let mut at = path.clone();
            for key in e.key() {
                at = at.key(key);
            }
            let message = match &e {
                // The parser's reason helps; a header's would only echo it.
                TargetError::BadUrl { source, .. } => format!("{e}: {source}"),
                _ => e.to_string(),
            };
            out.push(at, message);
        }
    }
    match (&u.command, &u.url) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                out.push(path.key("command"), "must not be empty");
            }
            for key in HTTP_KEYS {
                let set = match key {
                    "headers" => !u.headers.is_empty(),
                    _ => u.transport != HttpTransport::default(),
                };
                if set || written(key) {
                    out.push(
                        path.key(key),
                        format!("`{key}` only applies to HTTP upstreams (`url`); this upstream runs a `command`"),
                    );
                }
            }
        }
        (None, Some(_)) => {
            for key in STDIO_KEYS {
                let set = match key {
                    "args" => !u.args.is_empty(),
                    "env" => !u.env.is_empty(),
                    "cwd" => u.cwd.is_some(),
                    _ => u.inherit_env,
                };
                if set || written(key) {
                    out.push(
                        path.key(key),
                        format!("`{key}` only applies to stdio upstreams (`command`); this upstream uses a `url`"),
                    );
                }
            }
        }
        _ => {}
    }

    if u.protocol == UpstreamProtocol::Modern && u.url.is_some() && u.transport == HttpTransport::Sse {
        out.push(
            path.key("protocol"),
            "`2026-07-28` needs Streamable HTTP or stdio; the legacy HTTP+SSE transport speaks only 2024-11-05",
        );
    }

    for (key, value) in &u.env {
        if key.is_empty() || key.contains(['=', '\0']) {
            out.push(path.key("env").key(key), "invalid environment variable name (empty, or contains `=` or NUL)");
        }
        if value.contains('\0') {
            out.push(path.key("env").key(key), "the value contains a NUL character");
        }
    }
    if let Some(cwd) = &u.cwd {
        check_dir(cwd, &path.key("cwd"), out);
    }

    if let Some(prefix) = &u.prefix
        && !prefix.bytes().all(is_tool_name_byte)
    {
        out.push(path.key("prefix"), format!("`{prefix}` is not a valid prefix: use letters, digits, `_` and `-`"));
    }
    out.positive(path.key("timeout"), u.timeout);
    out.positive(path.key("cancel_timeout"), u.cancel_timeout);
    out.at_least(path.key("max_message_bytes"), u.max_message_bytes, MIN_MESSAGE_BYTES);
    out.at_least(path.key("max_instances"), u.max_instances, 1);
    out.positive(path.key("instance_idle_timeout"), u.instance_idle_timeout);

    for (tool, over) in &u.tools {
        let tool_path = path.key("tools").key(tool);
        if tool.is_empty() {
            out.push(tool_path.clone(), "the tool name must not be empty");
        }
        if over.description.as_deref().is_some_and(|d| d.trim().is_empty()) {
            out.push(
                tool_path.key("description"),
                "must not be empty (remove it to keep the upstream's own description)",
            );
        }
    }
    if let Some(dir) = &u.descriptions_dir {
        check_dir(dir, &path.key("descriptions_dir"), out);
    }
}

fn check_dir(dir: &Path, path: &TomlPath, out: &mut Problems) {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => out.push(path.clone(), format!("`{}` is not a directory", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out.push(path.clone(), format!("directory `{}` does not exist", dir.display()))
        }
        Err(e) => out.push(path.clone(), format!("directory `{}` cannot be used: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests;
