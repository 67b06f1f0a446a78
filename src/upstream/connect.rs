//! Opening an upstream session: start the transport, then the MCP handshake.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::{Cause, UpstreamError};
use super::http::HttpTransport;
use super::peer::{Call, ClientHello, Peer, PeerEvents, ServerHello};
use super::{sse, stdio};
use crate::config::Target;
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
    /// How long the handshake may take (the upstream's `timeout`).
    pub timeout: Duration,
}

/// Starts the transport for `target` and performs the MCP handshake.
pub async fn connect(
    target: &Target,
    http: &reqwest::Client,
    options: ConnectOptions,
) -> Result<Arc<Peer>, UpstreamError> {
    let ConnectOptions { label, hello, events, attribute_to_latest_call, timeout } = options;
    let peer = match target {
        Target::Stdio(command) => {
            let spawned = stdio::spawn(command, &label)?;
            Peer::new(label.clone(), |inbox| Box::new(spawned.start(inbox)), events, attribute_to_latest_call)
        }
        Target::StreamableHttp(endpoint) => Peer::new(
            label.clone(),
            |inbox| Box::new(HttpTransport::new(endpoint, &label, http.clone(), inbox)),
            events,
            attribute_to_latest_call,
        ),
        Target::Sse(endpoint) => {
            let opened = sse::open(endpoint, &label, http.clone(), timeout).await?;
            Peer::new(label.clone(), |inbox| Box::new(opened.start(inbox)), events, attribute_to_latest_call)
        }
        #[cfg(any(test, feature = "test-util"))]
        Target::Memory(server) => Peer::new(
            label.clone(),
            |inbox| Box::new(super::memory::open(server, &label, inbox)),
            events,
            attribute_to_latest_call,
        ),
    };
    match handshake(&peer, &hello, timeout).await {
        Ok(()) => Ok(peer),
        Err(e) => {
            peer.shutdown().await;
            Err(e)
        }
    }
}

async fn handshake(peer: &Arc<Peer>, hello: &ClientHello, timeout: Duration) -> Result<(), UpstreamError> {
    let label = peer.label().clone();
    let start_error = |source: Cause| UpstreamError::Start { upstream: label.clone(), source };
    let params = json!({
        "protocolVersion": Version::LATEST.as_str(),
        "capabilities": hello.capabilities,
        "clientInfo": hello.client_info,
    });
    let answer = super::service::call_on(peer.clone(), timeout, Call::new(method::INITIALIZE, Some(params))).await;
    let outcome = answer.map_err(|e| match e {
        UpstreamError::Closed { source, .. } => start_error(source),
        other => other,
    })?;
    let result = match outcome {
        Outcome::Error(e) => return Err(start_error(Cause::msg(format!("initialize failed: {e}")))),
        other => other.result_value().unwrap_or(Value::Null),
    };
    let offered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let Some(version) = Version::parse(offered) else {
        return Err(start_error(Cause::msg(format!(
            "the upstream speaks protocol version {offered:?}, which toolgate does not"
        ))));
    };
    peer.set_hello(ServerHello {
        version,
        capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
    });
    peer.notify(method::INITIALIZED, None).await;
    peer.transport().established(version).await;
    tracing::info!(upstream = %label, %version, server = %peer.hello().map(|h| h.server_info.to_string()).unwrap_or_default(), "upstream session ready");
    Ok(())
}
