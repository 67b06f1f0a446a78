//! An rmcp (official Rust SDK) Streamable HTTP server, run in-process, as an
//! upstream of toolgate: its tools are listed minimally, described in full,
//! callable once described, and what it sends during a call (progress, log
//! messages) reaches the client.

#![allow(deprecated)] // logging notifications are deprecated in 2026-07-28, still carried for older peers

use std::sync::Arc;

use anyhow::Result;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Implementation, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TicksArgs {
    /// How many ticks to report (1 to 10).
    n: u32,
}

/// A tiny rmcp server.
#[derive(Clone)]
struct Workshop {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Workshop {
    #[tool(description = "Add two integers and return their sum as text. \
        Both numbers are 64-bit signed integers; the sum must fit in one as well, otherwise the call fails. \
        Use it for exact integer arithmetic, not for floating point.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Result<String, ErrorData> {
        a.checked_add(b).map(|s| s.to_string()).ok_or_else(|| ErrorData::invalid_params("overflow", None))
    }

    #[tool(description = "Report n ticks: a progress notification per tick when the caller asked for progress, \
        and an info log message per tick, then return how many ticks were reported.")]
    async fn ticks(
        &self,
        Parameters(TicksArgs { n }): Parameters<TicksArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let n = n.clamp(1, 10);
        let token = ctx.meta.get_progress_token();
        let failed = |e: rmcp::service::ServiceError| ErrorData::internal_error(e.to_string(), None);
        for i in 1..=n {
            if let Some(token) = &token {
                let p = ProgressNotificationParam::new(token.clone(), f64::from(i))
                    .with_total(f64::from(n))
                    .with_message(format!("tick {i}"));
                ctx.peer.notify_progress(p).await.map_err(failed)?;
            }
            let log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(format!("tick {i}")))
                .with_logger("ticks");
            ctx.peer.notify_logging_message(log).await.map_err(failed)?;
        }
        Ok(format!("{n} ticks"))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Workshop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_logging().build())
            .with_server_info(Implementation::new("rmcp-workshop", "1.0.0"))
    }
}

/// Serves the workshop on a free loopback port; returns its URL. Stops
/// when `stop` is cancelled.
async fn start_workshop(stop: &CancellationToken) -> Result<String> {
    let service = StreamableHttpService::new(
        || Ok(Workshop { tool_router: Workshop::tool_router() }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let stop = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).with_graceful_shutdown(stop.cancelled_owned()).await;
    });
    Ok(url)
}

#[tokio::test]
async fn rmcp_server_as_an_upstream() -> Result<()> {
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    let url = start_workshop(&stop).await?;
    let gw = Toolgate::start(&http_upstream("rs", &url, "")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;

    let tools = c.result("tools/list", json!({})).await?["tools"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "describe_tools", "ticks"], "{tools:?}");
    for t in tools.iter().filter(|t| t["name"] != "describe_tools") {
        assert_eq!(t["inputSchema"], json!({"type": "object"}), "minimal: {t}");
        let d = t["description"].as_str().unwrap_or("");
        assert!(!d.is_empty() && d.chars().count() <= 160, "{d:?}");
    }

    assert_eq!(
        json_of(&c.call_tool("add", json!({"a": 2, "b": 3})).await?)["error"]["code"],
        "TOOL_DESCRIPTION_REQUIRED"
    );
    let body = c.read_descriptions("add,ticks").await?;
    let add = &body["add"];
    assert!(add["description"].as_str().unwrap_or("").contains("not for floating point"), "the full text: {add}");
    assert_eq!(add["inputSchema"]["properties"]["a"]["description"], "The first addend.", "{add}");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(body["ticks"]["inputSchema"]["properties"]["n"]["description"], "How many ticks to report (1 to 10).");

    let sum = c.call_tool("add", json!({"a": 2, "b": 3})).await?;
    assert_eq!(sum["content"], json!([{"type": "text", "text": "5"}]), "{sum}");
    let overflow = c.request("tools/call", json!({"name": "add", "arguments": {"a": i64::MAX, "b": 1}})).await?;
    assert!(
        overflow["error"]["message"] == "overflow" || overflow["result"]["isError"] == true,
        "the upstream's own error comes through: {overflow}"
    );

    // Progress (with the client's token) on the request's stream. rmcp sends
    // log messages on its standalone stream, not the request's, so toolgate
    // delivers them on the client's standalone stream; accept either.
    let mut standalone = c.listen().await?;
    let (response, related) = c
        .exchange("tools/call", json!({"name": "ticks", "arguments": {"n": 3}, "_meta": {"progressToken": "rs-7"}}))
        .await?;
    assert_eq!(response["result"]["content"][0]["text"], "3 ticks", "{response}");
    let progress: Vec<&Value> = related.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{related:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], "rs-7");
        assert_eq!(p["params"]["progress"].as_f64(), Some(i as f64 + 1.0));
        assert_eq!(p["params"]["message"], format!("tick {}", i + 1));
    }
    let mut logs: Vec<Value> =
        related.iter().filter(|m| m["method"] == "notifications/message").map(|m| m["params"].clone()).collect();
    while logs.len() < 3 {
        match standalone.next_within(std::time::Duration::from_secs(2)).await {
            Some(m) if m["method"] == "notifications/message" => logs.push(m["params"].clone()),
            Some(_) => {}
            None => break,
        }
    }
    assert_eq!(
        logs,
        ["tick 1", "tick 2", "tick 3"].map(|t| json!({"level": "info", "logger": "ticks", "data": t})),
        "{related:?}"
    );
    Ok(())
}
