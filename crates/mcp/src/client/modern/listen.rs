//! The `subscriptions/listen` stream of a modern upstream connection: the
//! only place such an upstream sends list changes. One stream per control
//! connection asks for the `list_changed` kinds the upstream's capabilities
//! offer; what arrives on it reaches the connection's [`PeerEvents`]
//! (`crate::client::PeerEvents`) like any unsolicited notification, so the
//! catalog refresh works as it does for handshake-era upstreams. It also
//! carries the resource URIs toolgate's clients subscribed to (their
//! `notifications/resources/updated` arrive the same way). The stream is
//! reopened with backoff whenever it ends, and at once when the URIs
//! change, until the connection closes.

use std::sync::Arc;

use serde_json::{Map, Value};

use tokio::sync::watch;

use super::super::peer::{Call, Peer};
use super::UpstreamEra;
use crate::jsonrpc::{Outcome, codes};
use crate::protocol::modern::{listen, method};

/// The `notifications` filter for what `capabilities` offer, or `None` when
/// they offer no list changes.
pub(crate) fn filter(capabilities: &Value) -> Option<Value> {
    let mut wanted = Map::new();
    for (capability, key) in [
        ("tools", listen::TOOLS_LIST_CHANGED),
        ("prompts", listen::PROMPTS_LIST_CHANGED),
        ("resources", listen::RESOURCES_LIST_CHANGED),
    ] {
        if capabilities.get(capability).and_then(|c| c.get("listChanged")).and_then(Value::as_bool) == Some(true) {
            wanted.insert(key.into(), Value::Bool(true));
        }
    }
    (!wanted.is_empty()).then_some(Value::Object(wanted))
}

/// Keeps a listen stream open on `peer` while it lives, asking for the
/// list changes in `filter` and for updates of the resources toolgate's
/// clients subscribed to (`era`'s [`ResourceSubscriptions`]): whenever that
/// set changes, the stream is reopened with the new one at once. While
/// there is nothing to ask for, no stream is open.
///
/// [`ResourceSubscriptions`]: super::subscriptions::ResourceSubscriptions
pub(crate) fn keep_open(peer: Arc<Peer>, filter: Option<Value>, era: Option<Arc<UpstreamEra>>) {
    crate::spawn(async move {
        let mut changes = era.as_ref().map(|e| e.resources.watch());
        let mut attempt = 0u32;
        loop {
            if let Some(rx) = changes.as_mut() {
                rx.borrow_and_update();
            }
            let mut wanted = match &filter {
                Some(Value::Object(f)) => f.clone(),
                _ => Map::new(),
            };
            let uris = era.as_ref().map(|e| e.resources.uris()).unwrap_or_default();
            if !uris.is_empty() {
                wanted.insert(listen::RESOURCE_SUBSCRIPTIONS.into(), Value::from(uris));
            }
            if wanted.is_empty() {
                tokio::select! {
                    () = changed(&mut changes) => continue,
                    _ = peer.closed().cancelled() => return,
                }
            }
            let mut params = Map::new();
            params.insert(listen::NOTIFICATIONS.into(), Value::Object(wanted));
            let call = Call::new(method::SUBSCRIPTIONS_LISTEN, Some(Value::Object(params)));
            let ended = tokio::select! {
                ended = peer.call(call) => ended,
                // Dropping the call closes the stream (HTTP) or cancels it (stdio).
                () = changed(&mut changes) => {
                    tracing::debug!(upstream = %peer.label(), "resource subscriptions changed; listening again");
                    continue;
                }
                _ = peer.closed().cancelled() => return,
            };
            match ended {
                Ok(o) if o.error_code() == Some(codes::METHOD_NOT_FOUND) => {
                    tracing::warn!(upstream = %peer.label(), "the upstream offers list changes or subscriptions but no subscriptions/listen; lists refresh only on reconnect");
                    return;
                }
                Ok(Outcome::Error(e)) => tracing::debug!(upstream = %peer.label(), error = %e, "listen refused"),
                // A graceful end (the result) or a broken stream: listen again.
                Ok(_) => attempt = 0,
                Err(e) => tracing::debug!(upstream = %peer.label(), error = %e.report(), "listen stream ended"),
            }
            tokio::select! {
                _ = tokio::time::sleep(super::super::backoff(attempt)) => {}
                _ = peer.closed().cancelled() => return,
            }
            attempt = attempt.saturating_add(1);
        }
    });
}

/// Resolves when the set of subscribed URIs changes (never without a record).
async fn changed(changes: &mut Option<watch::Receiver<u64>>) {
    let Some(rx) = changes else { return std::future::pending().await };
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests;
