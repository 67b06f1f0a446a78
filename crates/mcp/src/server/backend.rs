//! [`SessionBackend`]: where sessions live besides this process, a store
//! that other processes serving the same clients (replicas behind one load
//! balancer) share. The session store owns it ([`SessionStore::backend`]);
//! the engine asks it to record a session `initialize` created, to find a
//! session this process does not hold (adoption: the application rebuilds
//! its state from what was stored, [`Handler::restore`]), to end one
//! everywhere (`DELETE`), and to pass a cancellation or a client's answer
//! to the process that can act on it. [`Local`], the default, shares
//! nothing. Kept apart from request handling, as tower-sessions keeps its
//! `SessionStore`.
//!
//! [`SessionStore::backend`]: super::SessionStore::backend
//! [`Handler::restore`]: super::Handler::restore

use std::any::Any;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::caller::Caller;
use super::session::Session;
use crate::jsonrpc::{ErrorObject, Id, Response};
use crate::protocol::Version;

/// A session as a backend stored it: what the engine needs to serve it
/// again, and the application's own part, for [`Handler::restore`](super::Handler::restore).
pub struct Stored {
    /// The revision negotiated at its `initialize`.
    pub version: Version,
    /// The `params` of its `initialize` as far as the engine keeps them:
    /// `capabilities` and `clientInfo`.
    pub params: Value,
    /// What the application stored of it, type-erased (the engine never
    /// looks inside; the application's `restore` takes it back).
    pub record: Box<dyn Any + Send>,
}

/// Where sessions live besides this process. Every method has the
/// behaviour of a process that shares nothing as its default.
pub trait SessionBackend<S>: Send + Sync + 'static {
    /// A session `initialize` created, about to be answered: record it
    /// where other processes find it. `Err` ends the session again and
    /// answers `initialize` with the error (HTTP 503 for
    /// [`codes::STATE_STORE_UNAVAILABLE`](crate::jsonrpc::codes)).
    fn record<'a>(&'a self, session: &'a Arc<Session<S>>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        let _ = session;
        Box::pin(async { Ok(()) })
    }

    /// The stored session `id` of `caller`, if there is one. `Ok(None)`:
    /// unknown (the client gets 404), also when it belongs to another
    /// caller. `Err`: the store could not be asked (HTTP 503 for
    /// [`codes::STATE_STORE_UNAVAILABLE`](crate::jsonrpc::codes); the client
    /// may retry).
    fn load<'a>(&'a self, id: &'a str, caller: &'a Caller) -> BoxFuture<'a, Result<Option<Stored>, ErrorObject>> {
        let _ = (id, caller);
        Box::pin(async { Ok(None) })
    }

    /// The client ended the session (`DELETE`): end it wherever else it
    /// lives, before it is released here. `Err` keeps it (the client gets
    /// the error, HTTP 503 for
    /// [`codes::STATE_STORE_UNAVAILABLE`](crate::jsonrpc::codes), and may
    /// retry).
    fn end<'a>(&'a self, session: &'a Arc<Session<S>>) -> BoxFuture<'a, Result<(), ErrorObject>> {
        let _ = session;
        Box::pin(async { Ok(()) })
    }

    /// The client cancelled request `id`, which does not run here: tell
    /// the process that runs it. Ignored by default, as the spec allows.
    fn forward_cancel<'a>(&'a self, session: &'a Arc<Session<S>>, id: &'a Id) -> BoxFuture<'a, ()> {
        let _ = (session, id);
        Box::pin(async {})
    }

    /// A client's answer to a request no waiter here knows: pass it to the
    /// process that asked (its id carries that process's [`tag`](Self::tag)).
    /// Logged and dropped by default.
    fn forward_answer<'a>(&'a self, session: &'a Arc<Session<S>>, response: Response) -> BoxFuture<'a, ()> {
        tracing::debug!(session = session.id(), id = ?response.id, "a client's answer to no pending request dropped");
        Box::pin(async {})
    }

    /// A tag for the ids of the requests this process sends clients
    /// (sampling, elicitation, roots): with one, they are strings
    /// `"<tag>-<n>"` rather than numbers, so that a client's answer reaching
    /// another process says where it belongs. `None` by default.
    fn tag(&self) -> Option<Arc<str>> {
        None
    }
}

/// The backend of a process that shares its sessions with no other.
pub struct Local;

impl<S: 'static> SessionBackend<S> for Local {}
