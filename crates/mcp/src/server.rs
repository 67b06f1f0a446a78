//! The downstream MCP server engine: sessions, the MCP lifecycle every
//! server answers the same way (`initialize`, version negotiation, `ping`,
//! the batch policy of each revision, cancellation, responses to
//! server-to-client requests), and the transports clients connect over.
//!
//! The engine is generic over a [`Handler`], the application that answers
//! everything else: the gateway, the demo upstream, the conformance
//! fixture. Transports (Streamable HTTP and legacy HTTP+SSE in [`http`],
//! [`stdio`]) only move frames; they never interpret MCP methods.

mod backend;
mod caller;
mod engine;
mod handler;
pub mod http;
mod limits;
mod replay;
mod session;
pub mod single;
pub mod stdio;
mod store;

pub use backend::{Local, SessionBackend, Stored};
pub use caller::Caller;
pub use engine::{
    Accepted, Engine, Hold, Listen, ListenSink, ModernAccepted, Refusal, RoutingHeaders, SessionRef, Subscriptions,
};
pub use handler::{
    CacheHints, CacheScope, Discovery, Handler, Held, InitContext, ModernContext, RequestCtx, ServerOffer, TraceHeaders,
};
pub use limits::{Limits, shutting_down, too_many_requests, too_many_sessions};
pub use session::{ClientRequestError, Downlink, Frame, Frames, Session};
pub use store::{Reservation, SessionStore};
