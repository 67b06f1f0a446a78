//! Where an upstream lives, resolved once from its configuration: the
//! program to run, or the parsed URL and headers to send. Validation reports
//! the same errors ([`UpstreamConfig::target`] is what it checks), so a
//! loaded configuration always resolves, and nothing is parsed again when
//! toolgate connects.

use std::path::PathBuf;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use indexmap::IndexMap;

use super::{HttpTransport, UpstreamConfig};

/// An upstream's transport and address.
#[derive(Clone)]
pub enum Target {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio(Arc<StdioTarget>),
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp(Arc<HttpTarget>),
    /// Legacy HTTP+SSE (2024-11-05).
    Sse(Arc<HttpTarget>),
    /// An MCP server in this process (tests).
    #[cfg(any(test, feature = "test-util"))]
    Memory(crate::upstream::MemoryTarget),
}

/// A stdio upstream's command.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioTarget {
    /// The program (looked up on `PATH`).
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: IndexMap<String, String>,
    /// Pass toolgate's whole environment, not just the basic variables.
    pub inherit_env: bool,
    /// Working directory (absolute after loading).
    pub cwd: Option<PathBuf>,
    /// Longest stdout line accepted (`max_message_bytes`).
    pub max_message_bytes: usize,
}

/// An HTTP upstream's endpoint.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub url: url::Url,
    /// The configured headers, marked sensitive (they usually carry credentials).
    pub headers: HeaderMap,
    /// Largest response body or SSE event accepted (`max_message_bytes`).
    pub max_message_bytes: usize,
}

/// Why an upstream's configuration does not name a usable target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("needs `command` (a stdio server) or `url` (an HTTP server)")]
    Missing,
    #[error("has both `command` and `url`: use `command` for a stdio server or `url` for an HTTP server, not both")]
    Both,
    #[error("`{url}` is not a valid URL")]
    BadUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("`{0}` must be an http:// or https:// URL")]
    NotHttp(String),
    #[error("invalid HTTP header name")]
    BadHeaderName {
        name: String,
        #[source]
        source: http::header::InvalidHeaderName,
    },
    /// The value is not echoed: headers usually carry credentials.
    #[error("invalid HTTP header value (control characters such as newlines are not allowed)")]
    BadHeaderValue {
        name: String,
        #[source]
        source: http::header::InvalidHeaderValue,
    },
}

impl TargetError {
    /// The key under `[[upstream]]` the error is about, for its TOML path.
    pub fn key(&self) -> Vec<&str> {
        match self {
            TargetError::Missing | TargetError::Both => Vec::new(),
            TargetError::BadUrl { .. } | TargetError::NotHttp(_) => vec!["url"],
            TargetError::BadHeaderName { name, .. } | TargetError::BadHeaderValue { name, .. } => {
                vec!["headers", name]
            }
        }
    }
}

impl UpstreamConfig {
    /// Resolves where this upstream lives. Every problem in `url` and
    /// `headers` is reported, not just the first.
    pub fn target(&self) -> Result<Target, Vec<TargetError>> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(vec![TargetError::Both]),
            (None, None) => Err(vec![TargetError::Missing]),
            (Some(program), None) => Ok(Target::Stdio(Arc::new(StdioTarget {
                program: program.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                inherit_env: self.inherit_env,
                cwd: self.cwd.clone(),
                max_message_bytes: self.max_message_bytes,
            }))),
            (None, Some(url)) => {
                let mut errors = Vec::new();
                let parsed = match url::Url::parse(url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
                    Ok(_) => {
                        errors.push(TargetError::NotHttp(url.clone()));
                        None
                    }
                    Err(source) => {
                        errors.push(TargetError::BadUrl { url: url.clone(), source });
                        None
                    }
                };
                let mut headers = HeaderMap::new();
                for (name, value) in &self.headers {
                    let header = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|source| TargetError::BadHeaderName { name: name.clone(), source });
                    let value = HeaderValue::from_str(value)
                        .map_err(|source| TargetError::BadHeaderValue { name: name.clone(), source });
                    match (header, value) {
                        (Ok(header), Ok(mut value)) => {
                            value.set_sensitive(true);
                            headers.insert(header, value);
                        }
                        (header, value) => errors.extend(header.err().into_iter().chain(value.err())),
                    }
                }
                match parsed {
                    Some(url) if errors.is_empty() => {
                        let target = Arc::new(HttpTarget { url, headers, max_message_bytes: self.max_message_bytes });
                        Ok(match self.transport {
                            HttpTransport::StreamableHttp => Target::StreamableHttp(target),
                            HttpTransport::Sse => Target::Sse(target),
                        })
                    }
                    _ => Err(errors),
                }
            }
        }
    }
}

impl Target {
    /// Whether the upstream can forget a session (HTTP answers 404).
    pub fn sessions_expire(&self) -> bool {
        matches!(self, Target::StreamableHttp(_) | Target::Sse(_))
    }

    /// Whether each call has its own response stream (Streamable HTTP),
    /// which decides what a shared connection may declare.
    pub fn attributes_calls(&self) -> bool {
        matches!(self, Target::StreamableHttp(_))
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdio(t) => f.debug_tuple("Stdio").field(&t.program).finish(),
            Target::StreamableHttp(t) => f.debug_tuple("StreamableHttp").field(&t.url.as_str()).finish(),
            Target::Sse(t) => f.debug_tuple("Sse").field(&t.url.as_str()).finish(),
            #[cfg(any(test, feature = "test-util"))]
            Target::Memory(_) => f.write_str("Memory"),
        }
    }
}
