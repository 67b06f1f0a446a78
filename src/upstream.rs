//! Upstream connections: toolgate as an MCP *client* of the servers it fronts.
//!
//! A [`Peer`] is one initialized MCP session with an upstream, over a
//! transport ([`stdio`] child process, Streamable [`http`], or legacy
//! HTTP+[`sse`]). It allocates
//! its own JSON-RPC ids (clients' ids never travel upstream), rewrites
//! progress tokens so they are unique on the leg, and routes what the
//! upstream sends back: responses to the waiting call, request-related
//! traffic to that call's [`Route`], everything else to the peer's
//! [`PeerEvents`].

mod connect;
mod error;
mod http;
mod peer;
mod sse;
mod stdio;

pub use connect::{ConnectOptions, connect};
pub use error::UpstreamError;
pub use peer::{ClientHello, Peer, PeerEvents, Route, ServerHello};
