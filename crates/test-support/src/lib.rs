//! What toolgate's tests share, used as a dev-dependency by the gateway's
//! integration tests and by the workspace's crates.
//!
//! - [`client`]: a raw Streamable HTTP client that shows exactly what went
//!   over the wire ([`Client`], [`Reply`], [`MessageStream`], [`EventStream`]).
//! - [`process`]: child processes with their stderr collected ([`Proc`]),
//!   and starting a server that prints `LISTENING <url>`.
//! - [`bins`]: the workspace's built binaries (the conformance fixture), for
//!   tests of another package than the one that builds them.
//! - [`jwt`]: signing keys, their JWKs and JWTs signed with them
//!   ([`TestKey`](jwt::TestKey)), and a JWKS endpoint
//!   ([`JwksServer`](jwt::JwksServer)), for the gateway's client
//!   authentication tests.
//! - [`haproxy`]: a real HAProxy balancing round-robin, without
//!   stickiness, over servers on loopback ports ([`Balancer`]).
//! - [`ports`]: free loopback ports for servers a test must name before
//!   they start ([`free_port`]).
//! - [`redis`]: a real `redis-server` on a free loopback port, stopped,
//!   frozen and restarted at will ([`RedisServer`]), optionally with TLS
//!   signed by a CA made for the test ([`TestCa`]) and an ACL user.
//! - [`modern`]: raw 2026-07-28 (sessionless) requests: the `_meta`
//!   envelope every request carries, and a POST with the revision's routing
//!   headers.
//! - [`pipe`]: an in-process client that drives an [`Engine`] through its
//!   real stdio transport over an in-memory pipe, for handler tests.
//!
//! [`Engine`]: toolgate_mcp::server::Engine

pub mod bins;
pub mod client;
pub mod haproxy;
pub mod jwt;
pub mod modern;
pub mod pipe;
pub mod ports;
pub mod process;
pub mod redis;

pub use bins::{fixture_exe, workspace_exe};
pub use client::{Client, EventStream, MessageStream, RawEvent, Reply, VERSION, json_of, text_of};
pub use haproxy::Balancer;
pub use modern::{MODERN, modern_body, modern_post};
pub use pipe::{PipeClient, first_text};
pub use ports::free_port;
pub use process::{Proc, START_TIMEOUT, StdoutLines, collect_stderr, start_http_server, start_reporting};
pub use redis::{RedisServer, TestCa};
