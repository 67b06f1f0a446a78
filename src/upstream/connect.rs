//! Opening an upstream session: start the transport, then the MCP handshake.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::UpstreamError;
use super::http::HttpLink;
use super::peer::{ClientHello, Link, Peer, PeerEvents, ServerHello};
use super::{sse, stdio};
use crate::config::{TransportKind, UpstreamConfig};
use crate::jsonrpc::Outcome;
use crate::protocol::{Version, method};

/// How to open one upstream session.
pub struct ConnectOptions {
    /// Name used in logs and errors.
    pub label: Arc<str>,
    /// What toolgate declares in `initialize`.
    pub hello: ClientHello,
    /// Receives what belongs to no call.
    pub events: Arc<dyn PeerEvents>,
    /// Attribute unsolicited traffic to the newest call (one client over stdio
    /// or legacy SSE, where nothing else says which call it belongs to).
    pub attribute_to_latest_call: bool,
}

/// Starts the transport for `config` and performs the MCP handshake.
pub async fn connect(
    config: &UpstreamConfig,
    http: &reqwest::Client,
    options: ConnectOptions,
) -> Result<Arc<Peer>, UpstreamError> {
    let ConnectOptions { label, hello, events, attribute_to_latest_call } = options;
    let peer = match config.transport_kind() {
        TransportKind::Stdio => {
            let spawned = stdio::spawn(config, &label)?;
            Peer::new(
                label.clone(),
                |weak| Link::Stdio(spawned.start(weak)),
                events,
                attribute_to_latest_call,
                config.timeout,
            )
        }
        TransportKind::StreamableHttp => {
            let link = HttpLink::new(config, &label, http.clone())?;
            Peer::new(label.clone(), |_| Link::Http(link), events, attribute_to_latest_call, config.timeout)
        }
        TransportKind::Sse => {
            let opened = sse::open(config, &label, http.clone()).await?;
            Peer::new(
                label.clone(),
                |weak| Link::Sse(opened.start(weak)),
                events,
                attribute_to_latest_call,
                config.timeout,
            )
        }
    };
    match handshake(&peer, &hello).await {
        Ok(()) => Ok(peer),
        Err(e) => {
            peer.shutdown().await;
            Err(e)
        }
    }
}

async fn handshake(peer: &Arc<Peer>, hello: &ClientHello) -> Result<(), UpstreamError> {
    let label = peer.label().clone();
    let start_error = |reason: String| UpstreamError::Start { upstream: label.clone(), reason };
    let params = json!({
        "protocolVersion": Version::LATEST.as_str(),
        "capabilities": hello.capabilities,
        "clientInfo": hello.client_info,
    });
    let outcome =
        peer.call(method::INITIALIZE, Some(params), None, &CancellationToken::new()).await.map_err(|e| match e {
            UpstreamError::Closed { reason, .. } => start_error(reason),
            other => other,
        })?;
    let result = match outcome {
        Outcome::Error(e) => return Err(start_error(format!("initialize failed: {e}"))),
        other => other.result_value().unwrap_or(Value::Null),
    };
    let offered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let Some(version) = Version::parse(offered) else {
        return Err(start_error(format!("the upstream speaks protocol version {offered:?}, which toolgate does not")));
    };
    peer.set_hello(ServerHello {
        version,
        capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
    });
    if let Link::Http(link) = peer.link() {
        link.set_version(version);
    }
    peer.notify(method::INITIALIZED, None).await;
    if let Link::Http(link) = peer.link() {
        link.open_standalone(peer).await;
    }
    tracing::info!(upstream = %label, %version, server = %peer.hello().map(|h| h.server_info.to_string()).unwrap_or_default(), "upstream session ready");
    Ok(())
}
