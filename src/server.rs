//! The downstream MCP server engine: sessions, the lifecycle messages every
//! MCP server answers the same way (`initialize` bookkeeping, `ping`,
//! cancellation, responses to server-to-client requests), and the transports
//! clients connect over.
//!
//! The engine is generic over a [`Handler`], the application that answers
//! everything else: the gateway in production, fixtures in tests. Transports
//! (Streamable HTTP now; legacy SSE and stdio build on the same [`Engine`])
//! only move frames; they never interpret MCP methods.

mod engine;
mod handler;
pub mod http;
mod replay;
mod session;
mod single;
pub mod stdio;
mod store;

pub use engine::Engine;
pub use handler::{Handler, InitContext, RequestCtx};
pub use session::{ClientRequestError, Downlink, Frame, Session};
pub use store::SessionStore;
