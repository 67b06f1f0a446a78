//! The MCP client: toolgate's upstream leg, the servers it fronts.
//!
//! The client owns everything on that leg below the gateway's policy: where
//! an upstream lives ([`Target`], which the gateway resolves from its
//! configuration), opening a session in either era ([`connect`]: the
//! `server/discover` probe, or the `initialize` handshake), the peers and
//! transports, the 2026-07-28 handling in [`modern`], and the call stack in
//! [`service`]. It depends on the rest of this crate only (envelopes,
//! revisions, and the server engine for the in-memory target), never on the
//! gateway.
//!
//! A [`Peer`] is one initialized MCP session with an upstream, over a
//! [`Transport`](transport::Transport): a [`stdio`] child process, Streamable
//! [`http`], legacy HTTP+[`sse`], or (in tests) an in-process server. It
//! allocates its own JSON-RPC ids (clients' ids never travel upstream),
//! rewrites progress tokens so they are unique on the leg, and routes what
//! the upstream sends back: responses to the waiting call, request-related
//! traffic to that call's [`Route`], everything else to the peer's
//! [`PeerEvents`]. A call goes through the layers in [`service`]: retry of
//! a forgotten session, the choice of connection, the deadline.

mod backoff;
mod capped;
mod connect;
mod crawl;
mod error;
mod http;
#[cfg(any(test, feature = "test-util"))]
mod memory;
pub mod modern;
mod peer;
pub mod service;
mod sse;
mod stdio;
mod target;
mod transport;

pub use backoff::{MAX_BACKOFF, MIN_BACKOFF, backoff};
pub use capped::same_origin_redirects;
pub use connect::{ConnectOptions, connect};
pub use crawl::crawl;
pub use error::{Cause, Report, Retry, UpstreamError, report};
pub use http::trace_headers;
#[cfg(any(test, feature = "test-util"))]
pub use memory::MemoryTarget;
/// toolgate's own `clientInfo` (and `serverInfo`) identity.
pub use modern::envelope::client_info as toolgate_info;
pub use peer::{Call, ClientHello, GiveUp, Peer, PeerEvents, Route, ServerHello};
pub use service::Connections;
pub use target::{CredentialSource, Credentials, EraChoice, HttpTarget, StdioTarget, Target};
pub use transport::{Inbox, Transport};
