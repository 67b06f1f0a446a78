//! The kit's `subscriptions/listen` streams (2026-07-28 clients): every
//! open stream of a registry, so that what a modern request announces
//! "unrelated" to itself (a list change, a resource update) reaches them,
//! as a handshake-era session's standalone stream gets it. Each stream
//! honours what it asked for of the list changes the registry declares,
//! and every URI in `resourceSubscriptions`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use toolgate_mcp::jsonrpc::{Message, Notification};
use toolgate_mcp::server::{Listen, Session, Subscriptions};

use super::handler::SessionState;

/// The open listen streams of one registry, by their transient session.
#[derive(Default)]
pub(super) struct Listening {
    open: Mutex<HashMap<Arc<str>, Arc<Session<SessionState>>>>,
}

impl Listening {
    /// Sends `notification` to every stream that asked for its type.
    pub(super) fn broadcast(&self, notification: &Notification) {
        let open: Vec<_> = self.open.lock().values().cloned().collect();
        for session in open {
            session.notify(Message::Notification(notification.clone()));
        }
    }

    /// Whether some open stream listens for updates of `uri`.
    pub(super) fn listens_to(&self, uri: &str) -> bool {
        self.open
            .lock()
            .values()
            .any(|s| s.listening().is_some_and(|w| w.resource_subscriptions.iter().any(|u| u == uri)))
    }

    /// Holds one stream until it ends.
    pub(super) async fn hold(&self, session: &Arc<Session<SessionState>>, listen: Listen, caps: &serde_json::Value) {
        let asked = listen.requested();
        let declared =
            |kind: &str| caps.get(kind).and_then(|c| c.get("listChanged")).and_then(|v| v.as_bool()) == Some(true);
        let subscribes = caps.get("resources").and_then(|c| c.get("subscribe")).and_then(|v| v.as_bool()) == Some(true);
        let honoured = Subscriptions {
            tools_list_changed: asked.tools_list_changed && declared("tools"),
            prompts_list_changed: asked.prompts_list_changed && declared("prompts"),
            resources_list_changed: asked.resources_list_changed && declared("resources"),
            resource_subscriptions: if subscribes { asked.resource_subscriptions.clone() } else { Vec::new() },
        };
        session.deliver_to(listen.sink(), honoured.clone());
        let id = session.id_arc();
        self.register(id.clone(), session.clone(), || listen.acknowledge(&honoured));
        listen.ended().await;
        self.open.lock().remove(&id);
    }

    /// Adds an open stream, acknowledging it under the lock `broadcast`
    /// takes: what the client triggers once it has seen the acknowledgement
    /// reaches the stream.
    fn register(&self, id: Arc<str>, session: Arc<Session<SessionState>>, acknowledge: impl FnOnce() -> bool) {
        let mut open = self.open.lock();
        acknowledge();
        open.insert(id, session);
    }
}

#[cfg(test)]
mod tests;
