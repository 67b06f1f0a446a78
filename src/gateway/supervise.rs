//! The supervisor of each upstream's control connection: connect, crawl the
//! tools into the catalog, refresh them on `list_changed`, and restart with
//! backoff when the connection dies.

use std::sync::{Arc, Weak};

use tracing::Instrument as _;

use super::Gateway;
use super::events::ControlEvents;
use super::upstreams::UpstreamHandle;
use crate::protocol::method;
use crate::upstream::{self, Cause, ConnectOptions, Peer, backoff, crawl};

/// Starts the supervisor of every upstream.
pub(super) fn supervise_all(gateway: &Arc<Gateway>) {
    for up in gateway.upstreams().iter() {
        supervise_one(gateway, up.clone());
    }
}

/// Starts the supervisor of one upstream (at start, or added by a reload).
pub(super) fn supervise_one(gateway: &Arc<Gateway>, up: Arc<UpstreamHandle>) {
    let span = tracing::info_span!("upstream", upstream = %up.label);
    #[allow(clippy::disallowed_methods)] // a span of its own, not the caller's
    tokio::spawn(supervise(Arc::downgrade(gateway), up).instrument(span));
}

/// Keeps one upstream's control connection up: connect, crawl its tools,
/// refresh on `list_changed`, and restart with backoff when it dies.
async fn supervise(gateway: Weak<Gateway>, up: Arc<UpstreamHandle>) {
    let mut attempt = 0u32;
    let mut first = true;
    loop {
        let Some(gw) = gateway.upgrade() else { return };
        if gw.is_shutting_down() || up.is_retired() {
            return;
        }
        if !std::mem::take(&mut first) {
            gw.metrics().upstream_restarted(up.index);
        }
        let options = ConnectOptions {
            label: up.label.clone(),
            hello: up.control_hello(),
            events: Arc::new(ControlEvents::new(gateway.clone(), up.index)),
            attribute_to_latest_call: false,
            timeout: up.config.timeout,
            cancel_timeout: up.config.cancel_timeout,
            protocol: up.config.protocol.into(),
            era: Some(up.era.clone()),
            control: true,
        };
        let connected = upstream::connect(&up.target, gw.http(), options).await;
        let shutdown = gw.shutdown_token();
        let retired = up.retired.clone();
        drop(gw);
        if retired.is_cancelled() {
            // Removed while it connected: the new connection is not wanted.
            if let Ok(peer) = connected {
                peer.shutdown().await;
            }
            return;
        }
        match connected {
            Ok(peer) => {
                attempt = 0;
                up.set_up(peer.clone());
                refresh_tools(&gateway, &up, &peer).await;
                up.mark_ready();
                loop {
                    tokio::select! {
                        _ = peer.closed().cancelled() => break,
                        _ = shutdown.cancelled() => return,
                        _ = retired.cancelled() => return,
                        _ = up.refresh.notified() => refresh_tools(&gateway, &up, &peer).await,
                    }
                }
                let reason = peer.close_reason().unwrap_or_else(|| "connection closed".into());
                tracing::warn!(%reason, "upstream connection lost; restarting");
                up.set_down(Cause::msg(reason));
            }
            Err(e) => {
                tracing::error!(error = %e.report(), retry_in = ?backoff(attempt), "upstream unavailable");
                up.set_down(Cause::new(e));
                up.mark_ready();
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff(attempt)) => {}
            // A caller needs a new connection now (the old one's session expired).
            _ = up.reconnect.notified() => {}
            _ = shutdown.cancelled() => return,
            _ = retired.cancelled() => return,
        }
        attempt = attempt.saturating_add(1);
    }
}

/// Crawls an upstream's tools and rebuilds the catalog.
async fn refresh_tools(gateway: &Weak<Gateway>, up: &Arc<UpstreamHandle>, peer: &Arc<Peer>) {
    if !peer.hello().is_some_and(|h| h.has("tools")) {
        up.set_tools(Vec::new());
    } else {
        match crawl(peer, up.config.timeout, method::TOOLS_LIST, "tools").await {
            Ok(tools) => {
                tracing::info!(tools = tools.len(), "tool list loaded");
                up.era.tools.update(&tools, peer.sends_routing_headers());
                up.set_tools(tools);
            }
            Err(e) => {
                tracing::warn!(error = %e.report(), "could not list tools; keeping the previous list");
                return;
            }
        }
    }
    if let Some(gw) = gateway.upgrade()
        && !up.is_retired()
    {
        gw.rebuild_catalog();
    }
}
