//! What the listener serves: an axum [`Router`], and the MCP endpoint beside
//! it. A request for the endpoint's path goes to the endpoint directly: the
//! router would cost every MCP request its URL parameters in the request's
//! extensions, a boxed clone of the route and two more futures (about six
//! allocations and 3,000 instructions a call). Everything else (health,
//! metadata, OAuth pages, metrics, the legacy transport) goes through the
//! router, which also serves the endpoint for whoever holds it alone (tests,
//! the demo kit).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use futures::future::BoxFuture;
use hyper::body::Incoming;
use tower::ServiceExt as _;

use super::reply::{Reply, boxed};

/// The routes a listener serves (see the module doc). A [`Router`] alone is
/// an app without a direct endpoint.
#[derive(Clone)]
pub struct App {
    endpoint: Option<Endpoint>,
    router: Router,
}

#[derive(Clone)]
struct Endpoint {
    path: Arc<str>,
    serve: Arc<dyn Serve>,
}

/// An endpoint that answers requests without the router.
pub(super) trait Serve: Send + Sync + 'static {
    /// The answer to `request` (any method) at the endpoint's path, its
    /// body as hyper read it (not boxed).
    fn serve(self: Arc<Self>, request: http::Request<Incoming>) -> BoxFuture<'static, Reply>;
}

impl App {
    /// `router`, with requests for `path` answered by `endpoint` directly.
    pub(super) fn new(path: &str, endpoint: Arc<dyn Serve>, router: Router) -> Self {
        Self { endpoint: Some(Endpoint { path: Arc::from(path), serve: endpoint }), router }
    }

    /// The app with `other`'s routes added to its router (as
    /// [`Router::merge`]).
    pub fn merge(mut self, other: Router) -> Self {
        self.router = self.router.merge(other);
        self
    }

    /// The answer to `request`: the endpoint's for its path, else the
    /// router's. The endpoint reads hyper's body as it is; the router takes
    /// it boxed (`Body::new`), as axum's handlers do.
    pub(super) fn call(&self, request: http::Request<Incoming>) -> BoxFuture<'static, Reply> {
        match &self.endpoint {
            Some(endpoint) if request.uri().path() == &*endpoint.path => endpoint.serve.clone().serve(request),
            _ => {
                let answer = self.router.clone().oneshot(request.map(Body::new));
                Box::pin(async move {
                    match answer.await {
                        Ok(response) => boxed(response),
                        Err(never) => match never {},
                    }
                })
            }
        }
    }
}

impl From<Router> for App {
    fn from(router: Router) -> Self {
        Self { endpoint: None, router }
    }
}
