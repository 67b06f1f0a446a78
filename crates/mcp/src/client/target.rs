//! Where an upstream lives: the program to run, or the parsed URL and
//! headers to send. The gateway resolves these once from its configuration
//! (`toolgate::config`), so nothing is parsed again when the client connects.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use http::HeaderMap;
use indexmap::IndexMap;

use super::{Cause, UpstreamError};

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
    Memory(super::MemoryTarget),
}

/// A stdio upstream's command.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioTarget {
    /// The program (looked up on `PATH`).
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: IndexMap<String, String>,
    /// Pass the gateway's whole environment, not just the basic variables.
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
    /// Headers worked out anew for each request (a signed identity, an
    /// exchanged token), which replace configured ones of the same name.
    pub credentials: Option<Credentials>,
}

/// What computes the per-request credentials of a connection made for one
/// client (see [`Credentials`]).
pub trait CredentialSource: Send + Sync + 'static {
    /// The headers to send now. An error means nothing may be sent: it
    /// names why, never the secret.
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, Cause>>;
}

/// A connection's per-request credentials. `Debug` shows no secret.
#[derive(Clone)]
pub struct Credentials(Arc<dyn CredentialSource>);

impl Credentials {
    /// Credentials computed by `source`.
    pub fn new(source: Arc<dyn CredentialSource>) -> Self {
        Self(source)
    }

    /// The headers for one request to the upstream `label`.
    pub(crate) async fn headers(&self, label: &Arc<str>) -> Result<HeaderMap, UpstreamError> {
        self.0.headers().await.map_err(|source| UpstreamError::Credentials { upstream: label.clone(), source })
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<per request>)")
    }
}

/// `headers` with `credentials`' headers for this request over them.
pub(crate) async fn with_credentials(
    mut headers: HeaderMap,
    credentials: Option<&Credentials>,
    label: &Arc<str>,
) -> Result<HeaderMap, UpstreamError> {
    if let Some(credentials) = credentials {
        let extra = credentials.headers(label).await?;
        for name in extra.keys() {
            headers.remove(name);
        }
        headers.extend(extra);
    }
    Ok(headers)
}

/// Which MCP era a connection speaks (`[[upstream]] protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EraChoice {
    /// Probe with `server/discover`; a discover answer or a recognized
    /// modern error means 2026-07-28, anything else falls back to `initialize`.
    #[default]
    Auto,
    /// The sessionless 2026-07-28 revision only (no probe fallback).
    Modern,
    /// The handshake era only: `initialize`, as before 2026-07-28.
    Legacy,
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
