//! A call to an upstream as a stack of layers:
//!
//! ```text
//! Retry → Connect → Deadline → OnPeer
//! ```
//!
//! - [`Retry`] sends a call again, once, on a fresh connection, when the
//!   upstream never saw it (it forgot the session: HTTP 404);
//! - [`Connect`] picks the connection (a session's own, or the shared one)
//!   from a [`Connections`];
//! - [`Deadline`] gives the call the upstream's `timeout`: the peer gives it
//!   up when that passes without an answer (each progress notification
//!   restarts the clock) or when the client cancels it;
//! - [`OnPeer`] is the call itself ([`Peer::call`]).
//!
//! Each layer is a [`Step`] wrapping the next, composed by [`stack`]. They
//! are static types: a call's future holds every layer's state inline, with
//! no allocation per layer (this is the hot path of every forwarded call).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::error::UpstreamError;
use super::peer::{Attempt, Call, Peer};
use crate::jsonrpc::Outcome;

/// Where a call's connection comes from: a downstream session's own upstream
/// session (opened on first use), or the upstream's shared connection.
pub trait Connections: Send + Sync {
    /// A live connection, opened or reopened as needed. `fresh`: the last
    /// one failed under the call (its session expired), so wait for its
    /// replacement rather than fail fast.
    fn connection(&self, fresh: bool) -> impl Future<Output = Result<Arc<Peer>, UpstreamError>> + Send;

    /// Whether the upstream can forget a session (HTTP), which makes a call
    /// worth keeping a copy of for a retry.
    fn sessions_expire(&self) -> bool;

    /// Whether the upstream speaks the sessionless 2026-07-28 revision (its
    /// results then need translating for clients of older revisions).
    fn modern(&self) -> bool {
        false
    }
}

/// One layer of a call (or the call itself). What it comes to carries the
/// request back where the peer hands it back (see [`Attempt`]).
pub trait Step<Req>: Send + Sync {
    fn call(&self, request: Req) -> impl Future<Output = Attempt> + Send;
}

/// The stack for calls over `connections` (`modern`: whether their
/// upstream speaks the sessionless revision), with the upstream's `timeout`.
pub fn stack<C: Connections>(connections: C, modern: bool, timeout: Duration) -> Retry<Connect<C, Deadline<OnPeer>>> {
    // A modern upstream mints no sessions, so none expires: its calls need
    // nothing kept for another attempt (the peer hands no request back on
    // a modern leg).
    let enabled = connections.sessions_expire() && !modern;
    Retry { enabled, inner: Connect { connections, inner: Deadline { after: timeout, inner: OnPeer } } }
}

/// Calls upstream over `connections`, with the upstream's `timeout`, the
/// client's cancellation and the retry of a forgotten session.
/// A modern upstream's result for a client of an older revision is
/// translated (see [`rounds`](super::modern::rounds)).
pub async fn call<C: Connections>(connections: C, timeout: Duration, call: Call) -> Result<Outcome, UpstreamError> {
    let modern = connections.modern();
    let translate = !call.downstream_modern && modern;
    let stack = stack(connections, modern, timeout);
    if translate {
        super::modern::rounds::drive(&stack, call).await
    } else {
        stack.call(call).await.map(|a| a.outcome).map_err(|f| f.error)
    }
}

/// Calls on a given connection, with the deadline but no retry and no choice
/// of connection: toolgate's own calls (the handshake, list crawls,
/// `logging/setLevel`).
pub async fn call_on(peer: Arc<Peer>, timeout: Duration, call: Call) -> Result<Outcome, UpstreamError> {
    let attempt = Deadline { after: timeout, inner: OnPeer }.call((peer, call)).await;
    attempt.map(|a| a.outcome).map_err(|f| f.error)
}

// === Retry ===

/// Sends a call again, once, when the upstream forgot the session before
/// processing it (safe for any method: it never ran). Only where sessions
/// can expire. The peer hands such a request back inside the error (see
/// [`Failed`](super::peer::Failed)), so no call's params are copied in
/// case it needs a retry.
pub struct Retry<S> {
    enabled: bool,
    inner: S,
}

impl<S: Step<Call>> Step<Call> for Retry<S> {
    async fn call(&self, call: Call) -> Attempt {
        if !self.enabled {
            return self.inner.call(call).await;
        }
        let resend = call.resend();
        match self.inner.call(call).await {
            Err(failed) if matches!(failed.error, UpstreamError::SessionExpired { .. }) => {
                let e = &failed.error;
                debug_assert_eq!(e.retry(), super::error::Retry::NotSent);
                let Some(unsent) = failed.unsent else { return Err(failed.error.into()) };
                tracing::info!(upstream = %e.upstream().map(|u| &**u).unwrap_or(""), "upstream session expired; retrying on a new one");
                self.inner.call(resend.with(unsent)).await
            }
            attempt => attempt,
        }
    }
}

// === Connect ===

/// Picks the call's connection.
pub struct Connect<C, S> {
    connections: C,
    inner: S,
}

impl<C: Connections, S: Step<(Arc<Peer>, Call)>> Step<Call> for Connect<C, S> {
    async fn call(&self, call: Call) -> Attempt {
        let cancelled = async {
            match &call.cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let peer = tokio::select! {
            // A live connection is there at once; cancellation only matters
            // while one is being opened.
            biased;
            peer = self.connections.connection(call.attempt > 0) => peer?,
            () = cancelled => return Err(UpstreamError::Cancelled.into()),
        };
        self.inner.call((peer, call)).await
    }
}

// === Deadline ===

/// Gives a call up after the upstream's timeout (restarted by progress) or
/// when the client cancels it. The peer watches both, with the call's
/// pending entry (see `peer/watch.rs`): one ticker per connection rather
/// than a timer and a cancellation waiter per call.
pub struct Deadline<S> {
    after: Duration,
    inner: S,
}

impl<S: Step<(Arc<Peer>, Call)>> Step<(Arc<Peer>, Call)> for Deadline<S> {
    fn call(&self, (peer, mut call): (Arc<Peer>, Call)) -> impl Future<Output = Attempt> + Send {
        call.timeout = Some(self.after);
        self.inner.call((peer, call))
    }
}

// === OnPeer ===

/// The call itself, on the connection [`Connect`] picked.
pub struct OnPeer;

impl Step<(Arc<Peer>, Call)> for OnPeer {
    async fn call(&self, (peer, call): (Arc<Peer>, Call)) -> Attempt {
        peer.attempt(call).await
    }
}

#[cfg(test)]
mod tests;
