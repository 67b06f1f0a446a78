//! A call to an upstream as a stack of tower services:
//!
//! ```text
//! Retry → Connect → Deadline → OnPeer
//! ```
//!
//! - [`Retry`] sends a call again, once, on a fresh connection, when the
//!   upstream never saw it (it forgot the session: HTTP 404);
//! - [`Connect`] picks the connection (a session's own, or the shared one)
//!   from a [`Connections`];
//! - [`Deadline`] gives the call up when the upstream's `timeout` passes
//!   without an answer (each progress notification restarts the clock) or
//!   when the client cancels it;
//! - [`OnPeer`] is the call itself ([`Peer::call`]).
//!
//! [`stack`] builds the whole thing for one call.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Notify;
use tower::{Layer, Service, ServiceBuilder, ServiceExt as _};

use super::error::UpstreamError;
use super::peer::{Call, Peer};
use crate::jsonrpc::{self, Outcome};

/// Where a call's connection comes from: a downstream session's own upstream
/// session (opened on first use), or the upstream's shared connection.
pub trait Connections: Send + Sync {
    /// A live connection, opened or reopened as needed. `fresh`: the last
    /// one failed under the call (its session expired), so wait for its
    /// replacement rather than fail fast.
    fn connection(&self, fresh: bool) -> BoxFuture<'_, Result<Arc<Peer>, UpstreamError>>;

    /// Whether the upstream can forget a session (HTTP), which makes a call
    /// worth keeping a copy of for a retry.
    fn sessions_expire(&self) -> bool;
}

/// Calls upstream over `connections`, with the upstream's `timeout`, the
/// client's cancellation and the retry of a forgotten session.
pub async fn call(connections: Arc<dyn Connections>, timeout: Duration, call: Call) -> Result<Outcome, UpstreamError> {
    stack(connections, timeout).oneshot(call).await
}

/// Calls on a given connection, with the deadline but no retry and no choice
/// of connection: toolgate's own calls (the handshake, list crawls,
/// `logging/setLevel`).
pub async fn call_on(peer: Arc<Peer>, timeout: Duration, call: Call) -> Result<Outcome, UpstreamError> {
    DeadlineLayer { after: timeout }.layer(OnPeer).oneshot((peer, call)).await
}

/// The service stack for calls over `connections`.
pub fn stack(
    connections: Arc<dyn Connections>,
    timeout: Duration,
) -> impl Service<Call, Response = Outcome, Error = UpstreamError, Future = BoxFuture<'static, Result<Outcome, UpstreamError>>>
{
    ServiceBuilder::new()
        .layer(RetryLayer { enabled: connections.sessions_expire() })
        .layer(ConnectLayer { connections })
        .layer(DeadlineLayer { after: timeout })
        .service(OnPeer)
}

type CallFuture = BoxFuture<'static, Result<Outcome, UpstreamError>>;

// === Retry ===

/// Sends a call again, once, when the upstream forgot the session before
/// processing it (safe for any method: it never ran). Only where sessions
/// can expire, since a retry needs a copy of the call.
#[derive(Clone)]
pub struct RetryLayer {
    enabled: bool,
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Retry<S> {
        Retry { inner, enabled: self.enabled }
    }
}

/// See [`RetryLayer`].
#[derive(Clone)]
pub struct Retry<S> {
    inner: S,
    enabled: bool,
}

impl<S> Service<Call> for Retry<S>
where
    S: Service<Call, Response = Outcome, Error = UpstreamError, Future = CallFuture> + Clone + Send + 'static,
{
    type Response = Outcome;
    type Error = UpstreamError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), UpstreamError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let again = self.enabled.then(|| call.retry());
        let first = self.inner.call(call);
        let mut inner = self.inner.clone();
        Box::pin(async move {
            match (first.await, again) {
                (Err(e), Some(again)) if matches!(e, UpstreamError::SessionExpired { .. }) => {
                    debug_assert_eq!(e.retry(), super::error::Retry::NotSent);
                    tracing::info!(upstream = %e.upstream().map(|u| &**u).unwrap_or(""), "upstream session expired; retrying on a new one");
                    inner.ready().await?.call(again).await
                }
                (result, _) => result,
            }
        })
    }
}

// === Connect ===

/// Picks the call's connection.
#[derive(Clone)]
pub struct ConnectLayer {
    connections: Arc<dyn Connections>,
}

impl<S> Layer<S> for ConnectLayer {
    type Service = Connect<S>;

    fn layer(&self, inner: S) -> Connect<S> {
        Connect { inner, connections: self.connections.clone() }
    }
}

/// See [`ConnectLayer`].
#[derive(Clone)]
pub struct Connect<S> {
    inner: S,
    connections: Arc<dyn Connections>,
}

impl<S> Service<Call> for Connect<S>
where
    S: Service<(Arc<Peer>, Call), Response = Outcome, Error = UpstreamError, Future = CallFuture>
        + Clone
        + Send
        + 'static,
{
    type Response = Outcome;
    type Error = UpstreamError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), UpstreamError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, call: Call) -> CallFuture {
        let connections = self.connections.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let peer = tokio::select! {
                peer = connections.connection(call.attempt > 0) => peer?,
                _ = call.cancel.cancelled() => return Err(UpstreamError::Cancelled),
            };
            inner.call((peer, call)).await
        })
    }
}

// === Deadline ===

/// Gives a call up after the upstream's timeout (restarted by progress) or
/// when the client cancels it.
#[derive(Clone)]
pub struct DeadlineLayer {
    after: Duration,
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline { inner, after: self.after }
    }
}

/// See [`DeadlineLayer`].
#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
    after: Duration,
}

impl<S> Service<(Arc<Peer>, Call)> for Deadline<S>
where
    S: Service<(Arc<Peer>, Call), Response = Outcome, Error = UpstreamError, Future = CallFuture>,
{
    type Response = Outcome;
    type Error = UpstreamError;
    type Future = CallFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), UpstreamError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, (peer, mut call): (Arc<Peer>, Call)) -> CallFuture {
        let after = self.after;
        // Only a call that asked for progress can be told about it.
        let progress = jsonrpc::progress_token(call.params.as_ref()).map(|_| Arc::new(Notify::new()));
        call.progress = progress.clone();
        let (cancel, abandoned, upstream) = (call.cancel.clone(), call.abandoned.clone(), peer.label().clone());
        let answer = self.inner.call((peer, call));
        Box::pin(async move {
            let mut answer = std::pin::pin!(answer);
            let mut deadline = std::pin::pin!(tokio::time::sleep(after));
            loop {
                tokio::select! {
                    outcome = &mut answer => return outcome,
                    _ = &mut deadline => {
                        let _ = abandoned.set("timed out");
                        return Err(UpstreamError::Timeout { upstream, after });
                    }
                    _ = cancel.cancelled() => {
                        let _ = abandoned.set("cancelled by the client");
                        return Err(UpstreamError::Cancelled);
                    }
                    _ = progressed(&progress) => deadline.as_mut().reset(tokio::time::Instant::now() + after),
                }
            }
        })
    }
}

/// Resolves on the next progress of a call that asked for progress; never
/// for one that did not.
async fn progressed(progress: &Option<Arc<Notify>>) {
    match progress {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}

// === OnPeer ===

/// The call itself, on the connection [`Connect`] picked.
#[derive(Clone)]
pub struct OnPeer;

impl Service<(Arc<Peer>, Call)> for OnPeer {
    type Response = Outcome;
    type Error = UpstreamError;
    type Future = CallFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), UpstreamError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (peer, call): (Arc<Peer>, Call)) -> CallFuture {
        Box::pin(async move { peer.call(call).await })
    }
}

#[cfg(test)]
mod tests;
