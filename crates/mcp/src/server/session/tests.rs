use super::*;
use tokio::sync::mpsc;

fn session() -> Session<()> {
    Session::new(
        Arc::from("s1"),
        Version::LATEST,
        &json!({"capabilities": {"sampling": {}}}),
        (),
        crate::server::Caller::anonymous(),
    )
}

#[tokio::test]
async fn client_requests_are_matched_by_the_id_toolgate_allocated() {
    let s = Arc::new(session());
    let (downlink, mut rx) = Downlink::channel();
    let cancel = CancellationToken::new();
    let s2 = s.clone();
    let dl = downlink.clone();
    let task = crate::spawn(async move {
        s2.request_client("sampling/createMessage", Some(json!({"maxTokens": 5})), Some(&dl), &CancellationToken::new())
            .await
    });
    let Some(Frame::Message(Message::Request(req))) = rx.recv().await else { panic!("no request on the downlink") };
    assert_eq!(req.method, "sampling/createMessage");
    assert!(s.resolve(&Id::number(999), Outcome::Result(json!({}))).is_err(), "unknown ids are not routed");
    assert!(s.resolve(&req.id, Outcome::Result(json!({"content": "hi"}))).is_ok());
    assert_eq!(task.await.unwrap().unwrap(), Outcome::Result(json!({"content": "hi"})));
    drop(cancel);
}

#[tokio::test]
async fn cancelling_a_client_request_tells_the_client() {
    let s = Arc::new(session());
    let (downlink, mut rx) = Downlink::channel();
    let cancel = CancellationToken::new();
    let (s2, dl, c2) = (s.clone(), downlink.clone(), cancel.clone());
    let task = crate::spawn(async move { s2.request_client("roots/list", None, Some(&dl), &c2).await });
    let Some(Frame::Message(Message::Request(req))) = rx.recv().await else { panic!() };
    cancel.cancel();
    assert!(matches!(task.await.unwrap(), Err(ClientRequestError::Cancelled)));
    let Some(Frame::Message(Message::Notification(n))) = rx.recv().await else { panic!() };
    assert_eq!(n.method, method::CANCELLED);
    assert_eq!(n.params.unwrap()["requestId"], req.id.to_value());
}

#[tokio::test]
async fn dropping_the_wait_withdraws_the_request() {
    let s = session();
    let (downlink, mut rx) = Downlink::channel();
    // The waiting future is dropped (as when the tool call that asked is
    // cancelled): the client is told, and a late answer is not routed.
    let waited = tokio::time::timeout(std::time::Duration::from_millis(20), async {
        s.request_client("roots/list", None, Some(&downlink), &CancellationToken::new()).await
    })
    .await;
    assert!(waited.is_err(), "nobody answered");
    let Some(Frame::Message(Message::Request(req))) = rx.recv().await else { panic!("no request") };
    let Some(Frame::Message(Message::Notification(n))) = rx.recv().await else { panic!("no cancellation") };
    assert_eq!(n.method, method::CANCELLED);
    assert_eq!(n.params.unwrap()["requestId"], req.id.to_value());
    assert!(s.awaiting.lock().is_empty(), "the pending entry is removed");
    assert!(s.resolve(&req.id, Outcome::Result(json!({"roots": []}))).is_err());
    assert!(rx.try_recv().is_err(), "exactly one cancellation");

    // An answered request is not withdrawn when its future ends.
    let s = Arc::new(session());
    let (s2, dl) = (s.clone(), downlink.clone());
    let task =
        crate::spawn(async move { s2.request_client("roots/list", None, Some(&dl), &CancellationToken::new()).await });
    let Some(Frame::Message(Message::Request(req))) = rx.recv().await else { panic!("no request") };
    assert!(s.resolve(&req.id, Outcome::Result(json!({}))).is_ok());
    assert!(task.await.unwrap().is_ok());
    assert!(rx.try_recv().is_err(), "no cancellation after an answer");
}

#[tokio::test]
async fn unrelated_messages_go_to_the_standalone_stream() {
    let s = session();
    s.notify(Message::Notification(Notification::new("early", None)));
    let (tx, mut rx) = mpsc::channel(16);
    assert!(s.replay().attach_standalone(tx));
    s.notify(Message::Notification(Notification::new("live", None)));
    let early = rx.recv().await.unwrap();
    assert_eq!(early.id, "0-1");
    assert!(early.data.contains("\"early\""), "kept until a stream opened: {early:?}");
    assert!(rx.recv().await.unwrap().data.contains("\"live\""));
    // A request routed to a closed downlink falls back to the standalone stream.
    let (downlink, closed_rx) = Downlink::channel();
    drop(closed_rx);
    s.send_related(Message::Notification(Notification::new("orphan", None)), Some(&downlink));
    assert!(rx.recv().await.unwrap().data.contains("orphan"));
}

#[tokio::test]
async fn closing_wakes_waiters_and_cancels_in_flight_work() {
    let s = Arc::new(session());
    let token = s.begin_request(&Id::number(1)).expect("room for a request");
    let s2 = s.clone();
    let waiter =
        crate::spawn(async move { s2.request_client("roots/list", None, None, &CancellationToken::new()).await });
    tokio::task::yield_now().await;
    s.close();
    assert!(token.is_cancelled());
    assert!(matches!(waiter.await.unwrap(), Err(ClientRequestError::SessionClosed)));
    assert!(s.client_supports("sampling/createMessage"));
    assert!(!s.client_supports("elicitation/create"));
    // A request that begins once the session is closed starts cancelled.
    let late = s.begin_request(&Id::number(2)).expect("room for a request");
    assert!(late.is_cancelled());
}

#[tokio::test]
async fn a_full_downlink_drops_notifications_but_never_a_response_or_a_request() {
    let (downlink, mut frames) = Downlink::with_capacity(3);
    for i in 0..10 {
        assert!(downlink.send(Notification::new("notifications/progress", Some(json!({"progress": i})))));
    }
    assert_eq!(downlink.dropped(), 7);
    let request = Request { id: Id::number(1), method: "roots/list".into(), params: None };
    assert!(downlink.send(Message::Request(request)), "requests are not dropped");
    assert!(downlink.finish(Response { id: Some(Id::number(9)), outcome: Outcome::Result(json!({})) }));
    let mut got = Vec::new();
    while let Ok(frame) = frames.try_recv() {
        got.push(match frame {
            Frame::Message(Message::Notification(n)) => format!("note {}", n.params.unwrap()["progress"]),
            Frame::Message(Message::Request(r)) => format!("request {}", r.method),
            Frame::Final(r) => format!("final {}", r.id.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(got, ["note 0", "note 1", "note 2", "request roots/list", "final 9"]);
    // Received notifications make room again.
    assert!(downlink.send(Notification::new("notifications/progress", Some(json!({"progress": 10})))));
    assert!(matches!(frames.try_recv(), Ok(Frame::Message(_))));
    assert_eq!(downlink.dropped(), 7);
    drop(frames);
    assert!(!downlink.send(Notification::new("late", None)), "a closed stream says so");
}

#[test]
fn requests_in_flight_are_capped_per_session() {
    let s = session().with_max_in_flight(2);
    let a = s.begin_request(&Id::number(1)).expect("first");
    assert!(s.begin_request(&Id::number(2)).is_some());
    assert!(s.begin_request(&Id::number(3)).is_none(), "the third is over the cap");
    s.end_request(&Id::number(2));
    assert!(s.begin_request(&Id::number(3)).is_some(), "an ended request frees its place");
    assert!(s.cancel_request(&Id::number(1)));
    assert!(a.is_cancelled());
    assert_eq!(s.requests_in_flight(), 1);
}
