//! `subscriptions/listen` towards 2026-07-28 clients: toolgate serves it
//! itself, from the same events that reach handshake-era sessions'
//! standalone streams (catalog rebuilds, upstream list changes, resource
//! updates, reloads).
//!
//! A listen stream runs on the transient session the engine built for its
//! request. That session is made the stream's listener
//! ([`Session::deliver_to`](crate::server::Session::deliver_to)) and kept
//! in [`Listeners`] while the stream is open, so every place that tells
//! sessions about a change tells it too ([`Gateway::audience`]), under the
//! same per-client policy: a client hears about the lists it may see, and
//! a reload that changes its policy or removes its client applies to it
//! as to a session (a removed client's stream ends).
//!
//! `resourceSubscriptions` are subscriptions like a session's
//! `resources/subscribe`: each URI is routed to the upstream that serves it
//! and held there, counted, on the upstream's control connection
//! ([`hold`], [`let_go`]; a 2026-07-28 upstream's listen stream carries
//! them). A URI no upstream with subscriptions serves is not honoured (left
//! out of the acknowledgement).
//!
//! Limits: an open stream takes one of its client's `max_sessions` slots
//! (`[[auth.clients]]`), and at most `[server] max_sessions` streams are
//! open at once; past either, the listen is refused with `-32000`
//! (`LIMIT_EXCEEDED`) before it is acknowledged.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::forward::{hold, let_go};
use super::state::GwSession;
use super::{Gateway, startup};
use crate::jsonrpc::{ErrorObject, codes};
use crate::server::{Listen, Subscriptions};

/// One open stream: its listening session, and what ends it early.
type Open = (Arc<GwSession>, CancellationToken);

/// The open listen streams, by their transient session's id.
#[derive(Default)]
pub struct Listeners {
    open: Mutex<HashMap<Arc<str>, Open>>,
}

impl Listeners {
    /// The listening sessions.
    pub fn sessions(&self) -> Vec<Arc<GwSession>> {
        self.open.lock().values().map(|(s, _)| s.clone()).collect()
    }

    /// How many streams are open.
    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    /// Whether no stream is open.
    pub fn is_empty(&self) -> bool {
        self.open.lock().is_empty()
    }

    /// Adds an open stream, acknowledging it under the lock that everyone
    /// who tells listeners about a change takes: a change made once the
    /// client has seen the acknowledgement reaches the stream, and nothing
    /// reaches it before the acknowledgement (its first message).
    fn register(&self, id: Arc<str>, open: Open, acknowledge: impl FnOnce() -> bool) {
        let mut streams = self.open.lock();
        acknowledge();
        streams.insert(id, open);
    }

    /// Ends the stream of the listening session `id` (its client was
    /// removed from `[auth]`); `false` if it is not one.
    pub fn end(&self, id: &str) -> bool {
        match self.open.lock().get(id) {
            Some((_, end)) => {
                end.cancel();
                true
            }
            None => false,
        }
    }
}

/// Removes a stream from [`Listeners`] however its task ends.
struct Registered<'a> {
    listeners: &'a Listeners,
    id: Arc<str>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.listeners.open.lock().remove(&self.id);
    }
}

impl Gateway {
    /// Everyone who hears about list changes and resource updates:
    /// handshake-era sessions and the listening sessions of open listen
    /// streams.
    pub(crate) fn audience(&self) -> Vec<Arc<GwSession>> {
        let mut all = self.sessions().sessions();
        all.extend(self.listeners.sessions());
        all
    }

    /// The open listen streams.
    pub fn listeners(&self) -> &Listeners {
        &self.listeners
    }

    /// Holds one listen stream (see the module doc).
    pub(super) async fn serve_listen(
        self: &Arc<Self>,
        session: &Arc<GwSession>,
        listen: Listen,
    ) -> Result<(), ErrorObject> {
        let principal = session.state.principal();
        let max = self.config().server.max_sessions;
        if self.listeners.len() >= max {
            tracing::info!(client = %principal.id(), max, "listen refused: too many listen streams open");
            return Err(ErrorObject::new(
                codes::LIMIT_EXCEEDED,
                format!("Too many listen streams: this server holds at most {max} at once; try again later"),
            ));
        }
        // Each URI may cost a call upstream: bounded as a session's
        // subscriptions are, and counted in the client's calls_per_minute.
        let asked = listen.requested();
        let uris = &asked.resource_subscriptions;
        session
            .state
            .admit_subscriptions(uris.iter().map(String::as_str), self.config().server.max_subscriptions_per_session)?;
        if !uris.is_empty() {
            self.clients.take_calls(&principal, uris.len()).await?;
        }
        // Held while the stream is open.
        let _slot = self.clients.open_session(&principal)?;
        startup::wait(&self.upstreams(), session.state.startup_deadline(), &self.config().server).await;

        let upstreams = self.upstreams();
        let used = |cap: &str| upstreams.iter().any(|u| !u.is_retired() && session.state.uses(u.index) && u.has(cap));
        let mut honoured = Subscriptions {
            tools_list_changed: asked.tools_list_changed,
            prompts_list_changed: asked.prompts_list_changed && used("prompts"),
            resources_list_changed: asked.resources_list_changed && used("resources"),
            resource_subscriptions: Vec::new(),
        };
        // Where each honoured URI's subscription is held.
        let mut held: Vec<(usize, String)> = Vec::new();
        for uri in &asked.resource_subscriptions {
            let candidates = self.forwarder.resource_candidates(session, uri);
            let Some(&index) = candidates.first() else { continue };
            if !upstreams[index].hello().is_some_and(|h| h.flag("resources", "subscribe")) {
                continue;
            }
            honoured.resource_subscriptions.push(uri.clone());
            session.state.subscribe(uri);
            held.push((index, uri.clone()));
        }
        // Subscribed upstream before the acknowledgement promises the URIs
        // (a handshake-era upstream has answered `resources/subscribe`).
        for (index, uri) in &held {
            hold(&self.forwarder, *index, uri).await;
        }
        session.deliver_to(listen.sink(), honoured.clone());
        let end = CancellationToken::new();
        let id = session.id_arc();
        self.listeners.register(id.clone(), (session.clone(), end.clone()), || listen.acknowledge(&honoured));
        let _registered = Registered { listeners: &self.listeners, id };
        tracing::debug!(client = %principal.id(), notifications = %honoured.to_value(), "listen stream open");
        let shutdown = self.shutdown_token();
        tokio::select! {
            () = listen.ended() => {}
            _ = end.cancelled() => {}
            _ = shutdown.cancelled() => {}
        }
        for (index, uri) in &held {
            session.state.unsubscribe(uri);
            let_go(&self.forwarder, *index, uri).await;
        }
        tracing::debug!(client = %principal.id(), "listen stream closed");
        Ok(())
    }
}

#[cfg(test)]
mod tests;
