//! toolgate's MCP engine, shared by the gateway, the demo upstream and the
//! conformance fixture: both sides of the protocol.
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes as toolgate sees them on every leg,
//!   and the one decoder of message bodies (single messages and batches).
//! - [`protocol`]: MCP revisions, method and header names.
//! - [`server`]: the server engine (the MCP lifecycle, sessions, the batch
//!   policy) and the downstream transports that move its frames
//!   (Streamable HTTP, legacy HTTP+SSE, stdio).
//! - [`client`]: the client of upstream servers (the gateway's upstream
//!   leg): where an upstream lives ([`client::Target`]), opening a session
//!   in either era, the peer that owns a session's ids and routes what comes
//!   back, the transports (stdio children, Streamable HTTP, legacy HTTP+SSE,
//!   an in-process server in tests), and the layers a call goes through.
//! - [`uri_template`]: matching URIs against resource templates (RFC 6570).
//! - [`boxed`]: futures boxed where they are made (a call's futures are large).
//! - [`chunks`]: a body gathered from its chunks (one chunk kept, not copied).

// One audited exception: `client::stdio::orphan` (the parent-death signal
// set between fork and exec).
#![deny(unsafe_code)]

pub mod boxed;
pub mod chunks;
pub mod client;
pub mod jsonrpc;
pub mod protocol;
pub mod server;
pub mod uri_template;

/// Spawns a task that carries the caller's tracing span, so what the task
/// logs can be followed back to the request that started it. Use it instead
/// of `tokio::spawn` (clippy enforces this).
#[allow(clippy::disallowed_methods)]
pub fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    use tracing::Instrument as _;
    tokio::spawn(future.in_current_span())
}
