//! What the gateway does when the OAuth client reports: a completed consent
//! is told to the session whose call asked for it
//! (`notifications/elicitation/complete`, through the other replicas when
//! sessions are shared), a catalog waiting for an authorized client is
//! connected again, and every event is counted.

use std::sync::Weak;

use serde_json::json;

use super::Gateway;
use crate::jsonrpc::Notification;
use crate::oauth::Completed;

/// The gateway as the OAuth client's observer.
pub(super) struct Observer(pub(super) Weak<Gateway>);

impl crate::oauth::Observer for Observer {
    fn completed(&self, completed: &Completed) {
        let Some(gateway) = self.0.upgrade() else { return };
        // A catalog that waits for an authorized client may come up now.
        for up in gateway.upstreams().iter().filter(|u| *u.label == *completed.upstream && !u.is_retired()) {
            if !up.is_up() {
                up.reconnect.notify_one();
            }
        }
        let Some(session) = completed.session.as_deref() else { return };
        let notification = Notification {
            method: "notifications/elicitation/complete".into(),
            params: Some(json!({"elicitationId": completed.elicitation_id})),
        };
        // The callback may reach another replica than the session's.
        gateway.notify_session_id(session, notification);
    }

    fn event(&self, upstream: &str, event: &'static str) {
        if let Some(gateway) = self.0.upgrade() {
            gateway.metrics().oauth_event(upstream, event);
        }
    }
}
