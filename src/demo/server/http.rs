//! Serving a registry over Streamable HTTP, through toolgate's own server
//! engine (`crate::server`): each HTTP session gets one framework
//! [`Session`], and what that session sends is routed by the client request
//! it belongs to: onto that request's stream, or the standalone stream.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::registry::Registry;
use super::session::{Outgoing, Session};
use crate::jsonrpc::{ErrorObject, Id, Message, Notification, Outcome, Request, Response, codes};
use crate::protocol::method;
use crate::server::http::{Guard, HttpOptions};
use crate::server::{self, Downlink, Engine, Handler, InitContext, RequestCtx, ServerOffer, SessionStore};

/// How long handlers of an ended HTTP session may finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The engine's view of a registry.
pub struct RegistryHandler {
    registry: Arc<Registry>,
}

/// Per HTTP session: the framework session and the requests waiting on it.
pub struct Bridge {
    session: Session,
    waiting: Arc<Mutex<HashMap<Id, Waiting>>>,
    /// The engine session, once known (the first call after `initialize`).
    engine_session: Arc<OnceLock<Weak<server::Session<Bridge>>>>,
}

struct Waiting {
    downlink: Downlink,
    done: oneshot::Sender<Outcome>,
}

impl Bridge {
    fn bind(&self, session: &Arc<server::Session<Bridge>>) {
        let _ = self.engine_session.set(Arc::downgrade(session));
    }
}

impl Handler for RegistryHandler {
    type State = Bridge;

    async fn initialize(self: &Arc<Self>, ctx: &InitContext) -> Result<(ServerOffer, Bridge), ErrorObject> {
        let (session, rx) = Session::new(self.registry.clone());
        let waiting: Arc<Mutex<HashMap<Id, Waiting>>> = Arc::default();
        let engine_session: Arc<OnceLock<Weak<server::Session<Bridge>>>> = Arc::default();
        let init_id = Id::string("toolgate-http-initialize");
        let (done, answer) = oneshot::channel();
        let (downlink, _) = Downlink::channel();
        waiting.lock().insert(init_id.clone(), Waiting { downlink, done });
        tokio::spawn(route(rx, waiting.clone(), engine_session.clone()));
        let mut params = ctx.params.clone();
        params["protocolVersion"] = json!(ctx.version.as_str());
        session.handle(Message::Request(Request {
            id: init_id,
            method: method::INITIALIZE.into(),
            params: Some(params),
        }));
        match answer.await {
            Ok(Outcome::Error(e)) => Err(serde_json::from_value(e)
                .unwrap_or_else(|_| ErrorObject::new(codes::INTERNAL_ERROR, "initialize failed"))),
            Ok(ok) => {
                let result = ok.result_value().unwrap_or(Value::Null);
                let offer = ServerOffer {
                    capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
                    server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
                    instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
                };
                Ok((offer, Bridge { session, waiting, engine_session }))
            }
            Err(_) => Err(ErrorObject::new(codes::INTERNAL_ERROR, "the session ended during initialize")),
        }
    }

    async fn request(
        self: &Arc<Self>,
        session: &Arc<server::Session<Bridge>>,
        request: Request,
        ctx: RequestCtx,
    ) -> Outcome {
        let bridge = &session.state;
        bridge.bind(session);
        // Tool calls answer as a (resumable) stream, as toolgate's do.
        if request.method == method::TOOLS_CALL {
            ctx.downlink.prefer_stream();
        }
        let (done, answer) = oneshot::channel();
        let id = request.id.clone();
        bridge.waiting.lock().insert(id.clone(), Waiting { downlink: ctx.downlink.clone(), done });
        bridge.session.handle(Message::Request(request));
        tokio::select! {
            outcome = answer => outcome.unwrap_or_else(|_| {
                Outcome::error(ErrorObject::new(codes::INTERNAL_ERROR, "the session ended"))
            }),
            _ = ctx.cancel.cancelled() => {
                bridge.waiting.lock().remove(&id);
                let params = json!({"requestId": id.to_value(), "reason": "cancelled by the client"});
                bridge.session.handle(Message::Notification(Notification::new(method::CANCELLED, Some(params))));
                Outcome::error(ErrorObject::new(codes::SERVER_ERROR, "cancelled"))
            }
        }
    }

    async fn notification(self: &Arc<Self>, session: &Arc<server::Session<Bridge>>, notification: Notification) {
        session.state.bind(session);
        session.state.session.handle(Message::Notification(notification));
    }

    async fn response(self: &Arc<Self>, session: &Arc<server::Session<Bridge>>, response: Response) {
        session.state.bind(session);
        session.state.session.handle(Message::Response(response));
    }

    async fn closed(self: &Arc<Self>, session: Arc<server::Session<Bridge>>) {
        session.state.session.shutdown(SHUTDOWN_GRACE).await;
    }
}

/// Delivers what the framework session sends: responses to their waiting
/// request, related messages onto that request's stream, the rest onto the
/// standalone stream.
async fn route(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    waiting: Arc<Mutex<HashMap<Id, Waiting>>>,
    engine_session: Arc<OnceLock<Weak<server::Session<Bridge>>>>,
) {
    while let Some(Outgoing { message, related }) = rx.recv().await {
        if let Message::Response(Response { id: Some(id), outcome }) = &message
            && let Some(w) = waiting.lock().remove(id)
        {
            let _ = w.done.send(outcome.clone());
            continue;
        }
        let downlink = related.as_ref().and_then(|id| waiting.lock().get(id).map(|w| w.downlink.clone()));
        match downlink {
            Some(d) if d.send(message.clone()) => {}
            _ => {
                if let Some(s) = engine_session.get().and_then(Weak::upgrade) {
                    s.notify(message);
                }
            }
        }
    }
}

/// Serves `registry` over Streamable HTTP at `http://<listen>/mcp` until the
/// process ends. `on_listening` gets the bound address.
pub async fn serve_http(
    registry: Arc<Registry>,
    listen: SocketAddr,
    on_listening: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let (store, ended) = SessionStore::new(Duration::from_secs(3600));
    let engine = Engine::start(Arc::new(RegistryHandler { registry }), Arc::new(store), ended);
    let options = HttpOptions {
        path: "/mcp".into(),
        guard: Guard::new(&[], &[]),
        max_body_bytes: 4 * 1024 * 1024,
        keep_alive: Duration::from_secs(15),
        legacy_sse: true,
    };
    let app = crate::server::http::router(engine, options);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    on_listening(listener.local_addr()?);
    axum::serve(crate::server::http::no_delay(listener), app).await
}
