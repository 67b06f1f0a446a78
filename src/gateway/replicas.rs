//! Sessions across replicas (`[state] sessions = "shared"`): what the
//! gateway does with the shared store ([`crate::shared`]).
//!
//! - A session `initialize` creates is recorded in Redis before it is
//!   answered ([`Gateway::record_session`]); without Redis it is refused
//!   with HTTP 503, never created half.
//! - A request naming a session this replica does not hold adopts it from
//!   its record ([`Gateway::adopt_session`]): the same client, revision,
//!   capabilities, log level, concerns, subscriptions and grants. Upstream
//!   sessions are opened lazily, as for a new session.
//! - Every use starts the record's time over, at most once a second per
//!   session ([`touched`]); a record found missing is written back whole,
//!   one found ended ends the session here.
//! - `DELETE` ends the session everywhere ([`Gateway::end_shared`]): the
//!   record goes, and every replica hears it on the bus ([`Gateway::heard`]).
//!   Idle expiry needs no message: each replica's copy idles out within a
//!   second of the record (the record's time is started over on use, at
//!   most a second late).
//! - A client's answer to a request another replica sent it, and a
//!   cancellation of a request running elsewhere, travel over pub/sub; so
//!   do a 2026-07-28 client's retry of a call another replica holds
//!   (`gateway/mrtr/remote.rs`) and a session's notifications for a
//!   standalone stream another replica holds ([`Gateway::notify_session`]).
//! - Redis unreachable: sessions held here go on from local state; what
//!   failed to be written is written back whole once Redis answers
//!   ([`write_back`]). Shutting down ends nothing in Redis: the other
//!   replicas adopt the sessions.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::state::{GatewaySession, GwSession};
use super::{Gateway, caller_principal};
use crate::auth::Principal;
use crate::jsonrpc::{ErrorObject, Id, Message, Notification, Response};
use crate::protocol::Version;
use crate::server::{Caller, InitContext, SessionBackend, SessionStore, Stored};
use crate::shared::{BusMessage, Connection, Inbound, Record, Refresh, SessionLink, SharedSessions, bus};

/// How often sessions whose record could not be written are written back.
const WRITE_BACK_EVERY: Duration = Duration::from_secs(1);

impl Gateway {
    /// The state of a session `initialize` creates, tied to its record when
    /// sessions are shared (written once the session exists: see
    /// [`Gateway::record_session`]).
    pub(crate) fn share_new(&self, state: GatewaySession, ctx: &InitContext) -> GatewaySession {
        let Some(shared) = &self.shared else { return state };
        let base = Record {
            caller: ctx.caller.id().to_owned(),
            version: ctx.version.as_str().to_owned(),
            capabilities: ctx.params.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            client_info: ctx.params.get("clientInfo").cloned().unwrap_or(Value::Null),
            ..Record::default()
        };
        let link = Arc::new(SessionLink::new(shared.clone(), ctx.session_id.clone(), base.clone()));
        state.shared_as(link, &base)
    }

    /// Takes one of the client's `max_sessions` slots for the session
    /// `initialize` creates, counted across replicas when sessions are
    /// shared. Refused: [`codes::LIMIT_EXCEEDED`](crate::jsonrpc::codes),
    /// as on one replica. When Redis does not answer, the replica's own
    /// count (taken already) is all there is, and the fallback is counted.
    pub(crate) async fn take_shared_slot(&self, ctx: &InitContext, principal: &Principal) -> Result<(), ErrorObject> {
        let (Some(shared), Some(max)) = (&self.shared, principal.policy().max_sessions) else { return Ok(()) };
        match shared.take_slot(ctx.caller.id(), &ctx.session_id, max.get()).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::info!(client = %principal.id(), limit = max.get(), "new session refused: the client's max_sessions, across replicas");
                Err(super::clients::too_many_sessions(principal, max.get()))
            }
            Err(e) => {
                tracing::debug!(error = %e, "max_sessions counted on this replica alone: the shared store does not answer");
                self.metrics.limit_fallbacks().inc();
                Ok(())
            }
        }
    }

    /// The state of session `id` of `caller` that another replica created,
    /// from its record ([`Replicas`] loaded it): the same client, revision,
    /// capabilities, log level, concerns, subscriptions, grants and tasks.
    /// `None` when its client no longer may be served.
    pub(crate) fn restore_session(
        self: &Arc<Self>,
        id: &str,
        stored: Stored,
        caller: &Caller,
    ) -> Result<Option<GatewaySession>, ErrorObject> {
        let (Some(shared), Ok(record)) = (&self.shared, stored.record.downcast::<Record>()) else { return Ok(None) };
        let principal = self.clients.current(&caller_principal(caller))?;
        let slot = self.clients.open_session(&principal)?;
        let declared = self.catalogs().concerns();
        let concerns = record.state.concerns.as_ref().filter(|_| !declared.is_empty()).and_then(|values| {
            let sent = Value::from_iter(values.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))));
            // Declarations may have changed since: what no longer fits is dropped.
            declared.configure(&sent).ok().map(Arc::new)
        });
        // Upstreams may still be starting (a replica that just restarted):
        // the session's requests wait for them as a new session's would.
        let deadline = tokio::time::Instant::now() + self.config().server.startup_timeout;
        let link = Arc::new(SessionLink::new(shared.clone(), Arc::from(id), (*record).clone()));
        let state = GatewaySession::for_client(&self.upstreams(), principal, slot)
            .with_startup_deadline(deadline)
            .with_concerns(concerns)
            .shared_as(link, &record);
        self.metrics.session_started();
        self.metrics.session_adopted();
        tracing::info!(session = id, client = state.client_name(), "session adopted from the shared store");
        Ok(Some(state))
    }

    /// Sends `notification` to `session`'s standalone stream (`GET`). With
    /// shared sessions, a replica holding no such stream for the session
    /// also passes it to every replica over the bus, and the one holding the
    /// stream delivers it ([`Gateway::deliver_elsewhere_notification`]): the
    /// client's `GET` and its POSTs may reach different replicas. It is
    /// still kept here too (the standalone backlog, bounded), for a `GET`
    /// that opens here later. `list_changed` notifications never travel:
    /// every replica sees a catalog change and tells its own streams.
    pub(crate) fn notify_session(&self, session: &GwSession, notification: Notification) {
        let elsewhere = self.shared.as_ref().filter(|_| {
            session.state.link().is_some()
                && !notification.method.ends_with("/list_changed")
                && !session.has_standalone()
        });
        let notification = Message::Notification(notification);
        if let Some(shared) = elsewhere {
            let message = BusMessage::Notify {
                session: session.id().to_owned(),
                message: notification.encode(),
                from: shared.replica().to_string(),
            };
            let shared = shared.clone();
            crate::spawn(async move {
                if let Err(e) = shared.broadcast(&message).await {
                    tracing::debug!(error = %e, "a session notification could not be passed to the other replicas");
                }
            });
        }
        session.notify(notification);
    }

    /// Sends `notification` to session `id`: here if it lives here, else
    /// (sessions shared) to the replica that holds its standalone stream.
    pub(crate) fn notify_session_id(&self, id: &str, notification: Notification) {
        if let Some(session) = self.sessions.get(id) {
            return self.notify_session(&session, notification);
        }
        let Some(shared) = self.shared.clone() else { return };
        let message = BusMessage::Notify {
            session: id.to_owned(),
            message: Message::Notification(notification).encode(),
            from: shared.replica().to_string(),
        };
        crate::spawn(async move {
            if let Err(e) = shared.broadcast(&message).await {
                tracing::debug!(error = %e, "a session notification could not be passed to the other replicas");
            }
        });
    }

    /// A notification another replica produced for a session's standalone
    /// stream: delivered if that stream is held here, else ignored (the
    /// replica holding it delivers it; the one that produced it kept it).
    fn deliver_elsewhere_notification(&self, session: &str, message: &str) {
        let Some(session) = self.sessions.get(session).filter(|s| s.has_standalone()) else { return };
        let Ok(Message::Notification(notification)) = Message::decode(message.as_bytes()) else { return };
        tracing::debug!(session = session.id(), method = ?notification.method, "a notification from another replica delivered on the standalone stream held here");
        session.notify(Message::Notification(notification));
    }

    /// What the bus brought.
    fn heard(self: &Arc<Self>, inbound: Inbound) {
        let Some(shared) = &self.shared else { return };
        let message = match inbound {
            Inbound::Message(message) => message,
            // Sessions ended while the subscriber was away: each session
            // held here checks its record at its next use.
            Inbound::Subscribed => {
                for session in self.sessions.sessions() {
                    if let Some(link) = session.state.link() {
                        link.refresh_now();
                    }
                }
                return;
            }
        };
        if message.sender() == Some(shared.replica().as_ref()) {
            return;
        }
        match message {
            BusMessage::Ended { session, .. } => {
                if self.sessions.remove(&session) {
                    tracing::debug!(session, "session ended on another replica");
                }
            }
            BusMessage::Cancel { session, id, .. } => {
                if let (Some(session), Some(id)) = (self.sessions.get(&session), Id::from_value(&id))
                    && session.cancel_request(&id)
                {
                    tracing::debug!(session = session.id(), %id, "client cancelled a request through another replica");
                }
            }
            BusMessage::Answer { session, response } => {
                let Some(session) = self.sessions.get(&session) else { return };
                let Ok(Message::Response(Response { id: Some(id), outcome })) = Message::decode(response.as_bytes())
                else {
                    return;
                };
                if session.resolve(&id, outcome).is_err() {
                    tracing::debug!(session = session.id(), %id, "an answer passed on from another replica found no waiter");
                }
            }
            BusMessage::Call { id, from, call } => self.mrtr.answer_call(&self.views, from, id, call),
            BusMessage::Reply { id, reply, .. } => {
                if !shared.replied(&id, reply) {
                    tracing::debug!("a reply from another replica for an exchange no longer waiting ignored");
                }
            }
            BusMessage::Notify { session, message, .. } => self.deliver_elsewhere_notification(&session, &message),
        }
    }
}

/// The shared store as the engine's [`SessionBackend`]: where the sessions
/// of this replica live besides it.
pub(super) struct Replicas {
    shared: Arc<SharedSessions>,
    /// How long a session may idle: past it the store has forgotten it by
    /// itself, and an end it missed need not be retried.
    idle: Duration,
}

impl Replicas {
    pub(super) fn new(shared: Arc<SharedSessions>, idle: Duration) -> Self {
        Self { shared, idle }
    }

    /// Records a session `initialize` just created; an error refuses it.
    async fn record_session(&self, session: &GwSession) -> Result<(), ErrorObject> {
        let Some(record) = session.state.record() else { return Ok(()) };
        match self.shared.put(session.id(), &record).await {
            Ok(Refresh::Kept | Refresh::Missing) => Ok(()),
            // A tombstone under a fresh random id: not this session's.
            Ok(Refresh::Ended) => Err(ErrorObject::new(
                crate::jsonrpc::codes::STATE_STORE_UNAVAILABLE,
                "the session could not be recorded; retry",
            )),
            Err(e) => {
                tracing::warn!(error = %e, "a new session could not be recorded in the shared store");
                Err(e.to_error())
            }
        }
    }

    /// The record of session `id` of `caller`, if it is there and belongs
    /// to `caller` (another client's session is unknown, exactly like a
    /// made-up one).
    async fn load_session(&self, id: &str, caller: &Caller) -> Result<Option<Stored>, ErrorObject> {
        let record = match self.shared.load(id).await {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(error = %e, "a session could not be looked up in the shared store");
                return Err(e.to_error());
            }
        };
        let Some(version) = Version::parse(&record.version).filter(|_| record.caller == caller.id()) else {
            return Ok(None);
        };
        let params = json!({"capabilities": record.capabilities, "clientInfo": record.client_info});
        Ok(Some(Stored { version, params, record: Box::new(record) }))
    }

    /// Ends a shared session everywhere (its client's `DELETE`). When Redis
    /// does not answer in time, the `DELETE` may still have reached it, or
    /// may not: either way the session ends here, and toolgate keeps ending
    /// it in the store until Redis answers (or the record has expired by
    /// itself), so the client's answer (the session is ended) comes true.
    async fn end_session(&self, session: &GwSession) -> Result<(), ErrorObject> {
        let caller: Arc<str> = match session.state.link() {
            Some(link) => Arc::from(link.base().caller.as_str()),
            None => Arc::from(""),
        };
        let Err(e) = self.shared.end(session.id(), &caller).await else { return Ok(()) };
        tracing::warn!(error = %e, "a session could not be ended in the shared store yet; retrying until Redis answers");
        let (shared, id, give_up) = (self.shared.clone(), session.id_arc(), self.idle);
        let started = tokio::time::Instant::now();
        crate::spawn(async move {
            while started.elapsed() < give_up {
                tokio::time::sleep(WRITE_BACK_EVERY).await;
                if shared.end(&id, &caller).await.is_ok() {
                    tracing::info!("a session whose end the shared store missed is ended there");
                    return;
                }
            }
        });
        Ok(())
    }

    /// A cancellation of a request that does not run here: every replica
    /// holding the session hears it, and the one running it stops it.
    async fn cancel_elsewhere(&self, session: &GwSession, id: &Id) {
        let message = BusMessage::Cancel {
            session: session.id().to_owned(),
            id: id.to_value(),
            from: self.shared.replica().to_string(),
        };
        if let Err(e) = self.shared.broadcast(&message).await {
            tracing::debug!(error = %e, "a cancellation could not be passed to the other replicas");
        }
    }

    /// A client's answer to a request no waiter here knows: if another
    /// replica sent it (its id carries that replica's tag), it goes there.
    async fn route_answer(&self, session: &GwSession, response: Response) {
        let Some(tag) = response.id.as_ref().and_then(replica_of) else {
            tracing::debug!(session = session.id(), "an answer to no request of toolgate's ignored");
            return;
        };
        if tag == self.shared.replica().as_ref() {
            tracing::debug!(session = session.id(), "a late answer to a request no longer waiting ignored");
            return;
        }
        let message =
            BusMessage::Answer { session: session.id().to_owned(), response: Message::Response(response).encode() };
        match self.shared.send_to(&tag, &message).await {
            Ok(true) => {
                tracing::debug!(session = session.id(), replica = %tag, "an answer passed to the replica that asked")
            }
            Ok(false) => tracing::info!(
                session = session.id(),
                replica = %tag,
                "an answer for a replica that is gone dropped (its call ended with it)"
            ),
            Err(e) => tracing::warn!(error = %e, "an answer could not be passed to the replica that asked"),
        }
    }
}

impl SessionBackend<GatewaySession> for Replicas {
    /// A shared session is recorded before its `initialize` is answered.
    fn record<'a>(&'a self, session: &'a Arc<GwSession>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        Box::pin(self.record_session(session))
    }

    fn load<'a>(&'a self, id: &'a str, caller: &'a Caller) -> BoxFuture<'a, Result<Option<Stored>, ErrorObject>> {
        Box::pin(self.load_session(id, caller))
    }

    fn end<'a>(&'a self, session: &'a Arc<GwSession>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        Box::pin(self.end_session(session))
    }

    fn forward_cancel<'a>(&'a self, session: &'a Arc<GwSession>, id: &'a Id) -> BoxFuture<'a, ()> {
        Box::pin(self.cancel_elsewhere(session, id))
    }

    fn forward_answer<'a>(&'a self, session: &'a Arc<GwSession>, response: Response) -> BoxFuture<'a, ()> {
        Box::pin(self.route_answer(session, response))
    }

    /// Requests to clients name this replica, so that an answer reaching
    /// another replica finds its way back.
    fn tag(&self) -> Option<Arc<str>> {
        Some(self.shared.replica().clone())
    }
}

/// The replica tag of a request id toolgate sent a client (`"<tag>-<n>"`).
fn replica_of(id: &Id) -> Option<String> {
    let Value::String(text) = id.to_value() else { return None };
    let (tag, n) = text.rsplit_once('-')?;
    (!tag.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| tag.to_owned())
}

/// Starts what the shared store needs: its watch; with shared sessions, the
/// subscriber, what handles its messages, and the refresh on use.
pub(super) fn start(gateway: &Arc<Gateway>, connection: Option<Arc<Connection>>) {
    if let Some(connection) = connection {
        crate::spawn(watch(Arc::downgrade(gateway), connection));
    }
    let Some(shared) = gateway.shared.clone() else { return };
    gateway.sessions.share_with(Arc::new(Replicas::new(shared.clone(), gateway.sessions.idle_timeout())));
    let (to, mut heard) = mpsc::unbounded_channel();
    let channels = vec![shared.bus_channel(), shared.replica_channel(shared.replica())];
    crate::spawn(bus::listen(shared.connection().clone(), channels, to, gateway.shutdown_token()));
    let weak = Arc::downgrade(gateway);
    crate::spawn(async move {
        while let Some(inbound) = heard.recv().await {
            let Some(gateway) = weak.upgrade() else { return };
            gateway.heard(inbound);
        }
    });
    let store = Arc::downgrade(&gateway.sessions);
    gateway.sessions.on_touch(move |session| touched(&store, session));
}

/// A session was used: its record's time starts over, at most once a second.
fn touched(store: &Weak<SessionStore<GatewaySession>>, session: &Arc<GwSession>) {
    let Some(link) = session.state.link() else { return };
    if !link.refresh_due() {
        return;
    }
    let (store, session) = (store.clone(), session.clone());
    crate::spawn(async move {
        let Some(link) = session.state.link() else { return };
        match link.sessions.refresh(&link.id, &link.base().caller).await {
            Ok(Refresh::Kept) => {}
            // Lost with Redis's data, or expired a moment before this use.
            Ok(Refresh::Missing) => link.mark_stale(),
            Ok(Refresh::Ended) => {
                if let Some(store) = store.upgrade() {
                    store.remove(session.id());
                }
            }
            Err(_) => link.mark_stale(),
        }
    });
}

/// Asks Redis every second whether it answers (what `/readyz` reports),
/// and writes back the records of sessions held here whose own write
/// failed or found them missing; once Redis answers again after it stopped
/// answering, every session's (it may have lost them meanwhile). A failed
/// command alone marks nothing but its own session: no client can make
/// every session be rewritten.
async fn watch(gateway: Weak<Gateway>, connection: Arc<Connection>) {
    let mut was_failing = false;
    loop {
        tokio::time::sleep(WRITE_BACK_EVERY).await;
        let Some(gateway) = gateway.upgrade() else { return };
        if gateway.is_shutting_down() {
            return;
        }
        let answers = connection.ping().await.is_ok();
        let recovered = answers && was_failing;
        if answers == was_failing {
            if answers {
                tracing::info!("the shared state store (Redis) answers again");
            } else {
                tracing::warn!(
                    "the shared state store (Redis) does not answer; sessions held here go on from local state"
                );
            }
            was_failing = !answers;
        }
        let Some(shared) = gateway.shared.clone() else { continue };
        if !answers {
            continue;
        }
        let sessions = gateway.sessions.sessions();
        if recovered {
            tracing::info!(sessions = sessions.len(), "writing back the shared sessions held here");
            sessions.iter().filter_map(|s| s.state.link()).for_each(|link| link.mark_stale());
        }
        for session in sessions {
            let (Some(link), Some(record)) = (session.state.link(), session.state.record()) else { continue };
            if !link.take_stale() {
                continue;
            }
            match shared.put(session.id(), &record).await {
                Ok(Refresh::Kept | Refresh::Missing) => {}
                Ok(Refresh::Ended) => drop(gateway.sessions.remove(session.id())),
                Err(_) => {
                    link.mark_stale();
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
