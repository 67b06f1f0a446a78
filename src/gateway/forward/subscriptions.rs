//! Resource subscriptions held at upstreams on behalf of sessions and listen
//! streams: one hold per subscriber, the first subscribing at the upstream
//! and the last letting go; and a handshake-era session's subscription to a
//! 2026-07-28 upstream's resource, held like a listen stream's.

use serde_json::json;

use super::{Forwarder, Forwarding};
use crate::jsonrpc::{ErrorObject, Outcome, codes};
use crate::protocol::method;
use crate::upstream::{self, Call};

/// Takes one more hold on `uri` at upstream `index`: the first one
/// subscribes it there (a handshake-era upstream on its control
/// connection; a 2026-07-28 upstream's listen stream picks it up itself).
pub(crate) async fn hold(forwarder: &Forwarder, index: usize, uri: &str) {
    let Some(up) = forwarder.upstreams().get(index).cloned() else { return };
    if !up.era.resources.acquire(uri) || up.is_modern() {
        return;
    }
    if let Some(peer) = up.control() {
        let call = Call::new(method::RESOURCES_SUBSCRIBE, Some(json!({"uri": uri})));
        match upstream::service::call_on(peer, up.config.timeout, call).await {
            Ok(o) if o.error_code().is_none() => {}
            Ok(o) => {
                tracing::warn!(upstream = %up.label, uri, error = ?o.error_code(), "the upstream refused a resource subscription")
            }
            Err(e) => tracing::warn!(upstream = %up.label, uri, error = %e.report(), "cannot subscribe to a resource"),
        }
    }
}

/// Lets go of one hold on `uri` at upstream `index`: the last one
/// unsubscribes it there, unless a session's own subscription shares the
/// connection (a `shared` handshake-era upstream).
pub(crate) async fn let_go(forwarder: &Forwarder, index: usize, uri: &str) {
    let Some(up) = forwarder.upstreams().get(index).cloned() else { return };
    if !up.era.resources.release(uri) || up.is_modern() {
        return;
    }
    if up.is_shared() && forwarder.audience().iter().any(|s| s.state.is_subscribed(uri)) {
        return;
    }
    if let Some(peer) = up.control() {
        let call = Call::new(method::RESOURCES_UNSUBSCRIBE, Some(json!({"uri": uri})));
        let _ = upstream::service::call_on(peer, up.config.timeout, call).await;
    }
}

/// `resources/subscribe` or `resources/unsubscribe` of a handshake-era
/// session for a URI a 2026-07-28 upstream serves (which has neither
/// method): the session's subscription is held at that upstream like a
/// listen stream's, and its updates reach the session's standalone stream.
/// An upstream that declares no resource subscriptions refuses it (`-32601`).
pub(crate) async fn modern_subscription(cx: Forwarding<'_>, index: usize, uri: &str, subscribe: bool) -> Outcome {
    let up = &cx.forwarder.upstreams()[index];
    if subscribe && !up.hello().is_some_and(|h| h.flag("resources", "subscribe")) {
        return Outcome::error(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("upstream `{}` does not support resource subscriptions", up.label),
        ));
    }
    if subscribe {
        if cx.session.state.subscribe(uri) {
            hold(cx.forwarder, index, uri).await;
        }
    } else if cx.session.state.unsubscribe(uri) {
        let_go(cx.forwarder, index, uri).await;
    }
    Outcome::Result(json!({}))
}
