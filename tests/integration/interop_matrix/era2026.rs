//! The 2026-07-28 rows of the matrix: the Python SDK 2.x in its explicit
//! `2026-07-28` mode and the TypeScript SDK v2 pinned to 2026-07-28, over
//! Streamable HTTP and over stdio (the client launches `toolgate stdio`), in
//! front of a 2026-only upstream (tests/node/server_v2.mjs on the published
//! TypeScript SDK v2, `legacy: 'reject'`) and a 2025-only upstream
//! (server-everything, on the TypeScript SDK v1). Every cell pairs one
//! upstream of each era, one `progressive` and one `passthrough` (the cell's
//! name says which era the progressive one is), so toolgate's upstream leg
//! speaks both eras in every test; neither server can be reached in the other
//! era, so their real results prove which one was used. The workflow runs
//! sessionless: the gate keeps the client's grants by its client scope
//! (anonymous here), so each test has a toolgate of its own.
//!
//! mcp-server-time is not used here: it runs on the Python SDK 2.x, which
//! always serves both eras, so toolgate (`protocol = "auto"`) reaches it in
//! the 2026 era.

use anyhow::Result;

use super::clients::{Stack, Transport};
use super::peers::Upstream;
use super::run;
use super::workflow::Scenario;

/// The scenario for a 2026 client of `stack`: with the TypeScript SDK's
/// `server/discover` probe, the explicit Python mode without.
fn scenario(stack: Stack, progressive: Upstream, passthrough: Upstream) -> Scenario {
    Scenario::modern(progressive, passthrough, stack == Stack::TypeScript2026)
}

async fn cell(stack: Stack, transport: Transport, progressive: Upstream, passthrough: Upstream) -> Result<()> {
    run(stack, transport, scenario(stack, progressive, passthrough)).await
}

// The Python SDK (mcp 2.3.0), mode="2026-07-28".

#[tokio::test]
async fn python_2026_over_streamable_http_to_2026_upstream() -> Result<()> {
    cell(Stack::Python2026, Transport::Http, Upstream::ModernHttp, Upstream::EverythingStdio).await
}

#[tokio::test]
async fn python_2026_over_streamable_http_to_2025_upstream() -> Result<()> {
    cell(Stack::Python2026, Transport::Http, Upstream::EverythingHttp, Upstream::ModernStdio).await
}

#[tokio::test]
async fn python_2026_over_stdio_to_2026_upstream() -> Result<()> {
    cell(Stack::Python2026, Transport::Stdio, Upstream::ModernStdio, Upstream::EverythingHttp).await
}

#[tokio::test]
async fn python_2026_over_stdio_to_2025_upstream() -> Result<()> {
    cell(Stack::Python2026, Transport::Stdio, Upstream::EverythingStdio, Upstream::ModernHttp).await
}

// The TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0), pinned to 2026-07-28.

#[tokio::test]
async fn typescript_v2_2026_over_streamable_http_to_2026_upstream() -> Result<()> {
    cell(Stack::TypeScript2026, Transport::Http, Upstream::ModernStdio, Upstream::EverythingHttp).await
}

#[tokio::test]
async fn typescript_v2_2026_over_streamable_http_to_2025_upstream() -> Result<()> {
    cell(Stack::TypeScript2026, Transport::Http, Upstream::EverythingStdio, Upstream::ModernHttp).await
}

#[tokio::test]
async fn typescript_v2_2026_over_stdio_to_2026_upstream() -> Result<()> {
    cell(Stack::TypeScript2026, Transport::Stdio, Upstream::ModernHttp, Upstream::EverythingStdio).await
}

#[tokio::test]
async fn typescript_v2_2026_over_stdio_to_2025_upstream() -> Result<()> {
    cell(Stack::TypeScript2026, Transport::Stdio, Upstream::EverythingHttp, Upstream::ModernStdio).await
}
