//! Interoperability with real MCP SDK peers: the official Python SDK (mcp
//! 2.3.0) as a client and as an upstream, rmcp (the official Rust SDK) as a
//! client and as an upstream, and toolgate in front of toolgate.

mod chained;
mod modern_upstream;
mod python_client;
mod python_upstream;
mod rmcp_client;
mod rmcp_upstream;
