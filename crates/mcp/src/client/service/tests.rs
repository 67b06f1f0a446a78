//! The call layers against a scripted transport: retry, deadline, progress
//! and what the upstream is told when a call is given up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::client::peer::PeerEvents;
use crate::client::peer::TICK;
use crate::client::transport::{Inbox, Transport};
use crate::jsonrpc::{Message, Notification, Request, Response};

/// How the scripted upstream answers a request.
#[derive(Clone, Copy)]
enum Script {
    /// At once, echoing the method.
    Answer,
    /// Never (it reports progress when asked to, through `Fake::progress`).
    Silent,
    /// With HTTP 404: the session is gone.
    Expired,
    /// Never, in an exchange that never ends (an HTTP upstream that sends
    /// its headers and then nothing).
    Hung,
}

/// A transport whose upstream follows a script; it records what was sent.
struct Fake {
    script: Script,
    sent: Arc<Mutex<Vec<Message>>>,
    inbox: Weak<dyn Inbox>,
}

impl Transport for Fake {
    fn request<'a>(
        &'a self,
        call: u64,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        if let Script::Hung = self.script {
            self.sent.lock().push(message.clone());
            return Box::pin(std::future::pending());
        }
        Box::pin(std::future::ready(self.answer(call, message.clone())))
    }

    fn request_modern<'a>(
        &'a self,
        call: u64,
        _message: &'a Message,
        text: Vec<u8>,
        _headers: http::HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        let message = Message::decode(&text).expect("the peer encodes JSON-RPC");
        Box::pin(std::future::ready(self.answer(call, message)))
    }

    fn send_text<'a>(&'a self, message: &'a Message, _text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>> {
        self.sent.lock().push(message.clone());
        Box::pin(async { Ok(()) })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

impl Fake {
    /// Records `message` and answers it as the script says.
    fn answer(&self, call: u64, message: Message) -> Result<Option<Response>, UpstreamError> {
        let method = message.method().unwrap_or_default().to_owned();
        self.sent.lock().push(message);
        match self.script {
            Script::Answer => Ok(Some(Response::result(crate::jsonrpc::Id::number(call), json!({"method": method})))),
            Script::Silent | Script::Hung => Ok(None),
            Script::Expired => {
                if let Some(inbox) = self.inbox.upgrade() {
                    inbox.close("the upstream ended the session (HTTP 404)");
                }
                Err(UpstreamError::SessionExpired { upstream: "fake".into() })
            }
        }
    }
}

struct Quiet;

impl PeerEvents for Quiet {
    fn notification(&self, _: &Arc<Peer>, _: Notification) {}
    fn request(&self, _: Arc<Peer>, _: Request, _: CancellationToken) {}
    fn closed(&self, _: &Arc<Peer>, _: &str) {}
}

fn peer(script: Script, sent: &Arc<Mutex<Vec<Message>>>) -> Arc<Peer> {
    let sent = sent.clone();
    Peer::new("fake".into(), move |inbox| Box::new(Fake { script, sent, inbox }), Arc::new(Quiet), false)
}

/// Hands out peers following `scripts` in turn, counting the connections asked for.
struct Scripted {
    scripts: Mutex<Vec<Script>>,
    peers: Mutex<Vec<Arc<Peer>>>,
    sent: Arc<Mutex<Vec<Message>>>,
    asked: AtomicUsize,
    expire: bool,
}

impl Scripted {
    fn new(scripts: &[Script], expire: bool) -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(scripts.to_vec()),
            peers: Mutex::default(),
            sent: Arc::default(),
            asked: AtomicUsize::new(0),
            expire,
        })
    }

    fn cancellations(&self) -> Vec<Value> {
        let sent = self.sent.lock();
        sent.iter()
            .filter_map(|m| match m {
                Message::Notification(n) if n.method == "notifications/cancelled" => n.params.clone(),
                _ => None,
            })
            .collect()
    }
}

impl Connections for Arc<Scripted> {
    async fn connection(&self, _fresh: bool) -> Result<Arc<Peer>, UpstreamError> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let script = self.scripts.lock().remove(0);
        let peer = peer(script, &self.sent);
        self.peers.lock().push(peer.clone());
        Ok(peer)
    }

    fn sessions_expire(&self) -> bool {
        self.expire
    }
}

#[tokio::test]
async fn a_forgotten_session_is_retried_once_on_a_new_connection() {
    let up = Scripted::new(&[Script::Expired, Script::Answer], true);
    let outcome = call(up.clone(), Duration::from_secs(5), Call::new("tools/call", Some(json!({"name": "x"})))).await;
    assert_eq!(outcome.unwrap().result_value().unwrap()["method"], "tools/call");
    assert_eq!(up.asked.load(Ordering::Relaxed), 2);
    assert_eq!(up.sent.lock().len(), 2, "the same request, sent twice");

    // Twice forgotten: the second failure is the answer.
    let up = Scripted::new(&[Script::Expired, Script::Expired], true);
    let e = call(up.clone(), Duration::from_secs(5), Call::new("tools/list", None)).await.unwrap_err();
    assert!(matches!(e, UpstreamError::SessionExpired { .. }), "{e:?}");
    assert_eq!(up.asked.load(Ordering::Relaxed), 2, "one retry, not more");

    // Where sessions cannot expire nothing is kept for a retry.
    let up = Scripted::new(&[Script::Expired, Script::Answer], false);
    assert!(call(up.clone(), Duration::from_secs(5), Call::new("tools/list", None)).await.is_err());
    assert_eq!(up.asked.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_restarts_on_progress_and_the_upstream_hears_why_a_call_was_given_up() {
    let up = Scripted::new(&[Script::Silent], true);
    let started = tokio::time::Instant::now();
    let task = {
        let up = up.clone();
        let params = json!({"_meta": {"progressToken": "t"}});
        crate::spawn(async move { call(up, Duration::from_secs(10), Call::new("tools/call", Some(params))).await })
    };
    // Progress at 6 s and 12 s keeps the call alive past its 10 s timeout.
    let peer_token = loop {
        tokio::task::yield_now().await;
        if let Some(Message::Request(r)) = up.sent.lock().first() {
            break r.params.as_ref().unwrap()["_meta"]["progressToken"].clone();
        }
    };
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_secs(6)).await;
        let note =
            Notification::new("notifications/progress", Some(json!({"progressToken": peer_token, "progress": 1})));
        let peer = up.peers.lock().last().cloned().expect("a connection");
        Inbox::deliver(&*peer, Message::Notification(note), None);
    }
    let e = task.await.unwrap().unwrap_err();
    assert!(matches!(e, UpstreamError::Timeout { .. }), "{e:?}");
    let elapsed = started.elapsed();
    let due = Duration::from_secs(22);
    assert!(elapsed >= due && elapsed <= due + TICK, "10 s after the last progress, within a tick: {elapsed:?}");
    tokio::task::yield_now().await;
    assert_eq!(up.cancellations()[0]["reason"], "timed out");

    let up = Scripted::new(&[Script::Silent], true);
    let cancel = CancellationToken::new();
    let task = {
        let (up, cancel) = (up.clone(), cancel.clone());
        crate::spawn(async move {
            call(up, Duration::from_secs(10), Call::new("tools/call", None).cancelled_by(cancel)).await
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    cancel.cancel();
    let cancelled_at = tokio::time::Instant::now();
    assert!(matches!(task.await.unwrap(), Err(UpstreamError::Cancelled)));
    assert!(cancelled_at.elapsed() <= TICK, "given up within a tick: {:?}", cancelled_at.elapsed());
    tokio::task::yield_now().await;
    let cancelled = up.cancellations();
    assert_eq!(cancelled[0]["reason"], "cancelled by the client");
    assert_eq!(cancelled[0]["requestId"], 1, "under the upstream leg's own id");
}

#[tokio::test]
async fn a_retried_request_is_the_clients_own_with_its_progress_token_rewritten_again() {
    let up = Scripted::new(&[Script::Expired, Script::Answer], true);
    let params = json!({"name": "x", "arguments": {"a": 1}, "_meta": {"progressToken": "client-token"}});
    let outcome = call(up.clone(), Duration::from_secs(5), Call::new("tools/call", Some(params))).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let sent = up.sent.lock();
    let requests: Vec<&Request> = sent
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 2, "sent twice");
    for r in &requests {
        let p = r.params.as_ref().expect("params");
        assert_eq!(r.method, "tools/call");
        assert_eq!(p["arguments"], json!({"a": 1}), "the arguments go again");
        // Each leg numbers its own requests: the token is the request's id
        // on that leg, never the client's token or the first attempt's id.
        assert_eq!(p["_meta"]["progressToken"], json!(r.id.as_u64().expect("numeric id")));
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_exchange_never_ends_is_still_given_up_at_its_deadline() {
    let up = Scripted::new(&[Script::Hung], false);
    let started = tokio::time::Instant::now();
    let given_up = tokio::time::timeout(
        Duration::from_secs(60),
        call(up.clone(), Duration::from_secs(3), Call::new("tools/call", None)),
    );
    let e = given_up.await.expect("given up while the exchange still hangs").unwrap_err();
    assert!(matches!(e, UpstreamError::Timeout { .. }), "{e:?}");
    assert!(started.elapsed() >= Duration::from_secs(3) && started.elapsed() <= Duration::from_secs(3) + TICK);
    tokio::task::yield_now().await;
    assert_eq!(up.cancellations()[0]["reason"], "timed out");
}

#[tokio::test(start_paused = true)]
async fn the_watch_ticks_only_while_a_call_with_a_timeout_is_in_flight() {
    let sent = Arc::default();
    let peer = peer(Script::Silent, &sent);
    // Two calls in flight: one ticker watches both, and goes on while
    // either is left.
    let first = in_flight(&peer, &sent).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = in_flight(&peer, &sent).await;
    assert!(peer.is_watching());
    assert!(matches!(first.await.unwrap(), Err(UpstreamError::Timeout { .. })));
    assert!(peer.is_watching(), "the second call is still watched");
    assert!(matches!(second.await.unwrap(), Err(UpstreamError::Timeout { .. })));
    tokio::time::sleep(TICK * 2).await;
    assert!(!peer.is_watching(), "no call left: the ticker ended");

    // A call without a timeout (a listen stream) is not watched: an idle
    // connection does not tick. Dropping it still tells the upstream.
    let open = {
        let peer = peer.clone();
        crate::spawn(async move { peer.call(Call::new("subscriptions/listen", None)).await })
    };
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!peer.is_watching());
    open.abort();
    let _ = open.await;
    tokio::task::yield_now().await;
    let reasons: Vec<Value> = sent
        .lock()
        .iter()
        .filter_map(|m| match m {
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                n.params.as_ref()?.get("reason").cloned()
            }
            _ => None,
        })
        .collect();
    assert_eq!(reasons, [json!("timed out"), json!("timed out"), json!("abandoned by toolgate")]);

    // A new call starts a ticker again.
    let third = in_flight(&peer, &sent).await;
    assert!(peer.is_watching());
    assert!(matches!(third.await.unwrap(), Err(UpstreamError::Timeout { .. })));
}

/// Starts a call with a 5 s timeout on `peer` and returns once it is sent.
async fn in_flight(
    peer: &Arc<Peer>,
    sent: &Arc<Mutex<Vec<Message>>>,
) -> tokio::task::JoinHandle<Result<Outcome, UpstreamError>> {
    let before = sent.lock().len();
    let peer = peer.clone();
    let task = crate::spawn(async move { call_on(peer, Duration::from_secs(5), Call::new("tools/call", None)).await });
    while sent.lock().len() == before {
        tokio::task::yield_now().await;
    }
    task
}
