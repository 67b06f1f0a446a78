//! Unit tests of `replay.rs`.

use super::*;

fn data(s: &str) -> Arc<str> {
    Arc::from(s)
}

fn drain(rx: &mut mpsc::Receiver<Event>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(format!("{}={}", e.id, e.data));
    }
    out
}

#[test]
fn a_dropped_request_stream_resumes_where_it_left_off() {
    let mut r = Replay::default();
    let s = r.open();
    assert_eq!(r.push_own(s, data("a")).as_deref(), Some("1-1"), "the response body delivers it");
    r.detach(s); // the connection drops
    r.push(s, data("b"));
    r.push(s, data("c"));
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert_eq!(r.resume("1-1", tx), Ok(true), "still live");
    assert_eq!(drain(&mut rx), ["1-2=b", "1-3=c"]);
    r.push(s, data("d"));
    r.finish(s);
    assert_eq!(drain(&mut rx), ["1-4=d"]);
    assert!(rx.try_recv().is_err());
    assert_eq!(r.stream_count(), 0, "a fully delivered stream is forgotten");
}

#[test]
fn a_finished_stream_can_still_be_resumed_once() {
    let mut r = Replay::default();
    let s = r.open();
    r.detach(s);
    r.push(s, data("x"));
    r.finish(s);
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert_eq!(r.resume("1-0", tx), Ok(false), "finished: replay, then end");
    assert_eq!(drain(&mut rx), ["1-1=x"]);
    let (tx, _rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert!(matches!(r.resume("1-0", tx), Err(ResumeError::Unknown(_))));
}

#[test]
fn a_stream_delivered_by_its_own_response_is_forgotten_only_if_the_connection_held() {
    let mut r = Replay::default();
    let kept = r.open();
    r.push_own(kept, data("x"));
    r.detach(kept);
    r.finish(kept);
    let gone = r.open();
    r.push_own(gone, data("y"));
    r.finish(gone);
    assert_eq!(r.stream_count(), 1, "only the detached stream is kept");
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert_eq!(r.resume("1-0", tx), Ok(false));
    assert_eq!(drain(&mut rx), ["1-1=x"], "the client may not have received it");
}

#[test]
fn a_resumption_takes_over_from_the_response_body() {
    let mut r = Replay::default();
    let s = r.open();
    assert!(r.push_own(s, data("a")).is_some());
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert_eq!(r.resume("1-0", tx), Ok(true));
    assert_eq!(drain(&mut rx), ["1-1=a"]);
    assert_eq!(r.push_own(s, data("b")), None, "the body must hand over");
    r.push(s, data("c"));
    r.finish(s);
    assert_eq!(drain(&mut rx), ["1-2=b", "1-3=c"]);
    assert_eq!(r.stream_count(), 0);
}

#[test]
fn events_never_cross_streams_and_bad_ids_are_refused() {
    let mut r = Replay::default();
    let a = r.open();
    let b = r.open();
    r.push(a, data("for a"));
    r.push(b, data("for b"));
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    r.resume(&event_id(b, 0), tx).unwrap();
    assert_eq!(drain(&mut rx), ["2-1=for b"]);
    for bad in ["", "x", "1", "9-0", "-1-2"] {
        let (tx, _rx) = mpsc::channel(STREAM_BUFFER * 2);
        assert!(r.resume(bad, tx).is_err(), "{bad:?}");
    }
}

#[test]
fn the_standalone_stream_keeps_a_bounded_backlog() {
    let mut r = Replay::default();
    for i in 0..(STREAM_BUFFER + 5) {
        r.push(STANDALONE, data(&i.to_string()));
    }
    let (tx, mut rx) = mpsc::channel(STREAM_BUFFER * 2);
    assert!(r.attach_standalone(tx));
    let got = drain(&mut rx);
    assert_eq!(got.len(), STREAM_BUFFER);
    assert_eq!(got[0], "0-6=5", "the oldest were dropped");
    let (tx2, _rx2) = mpsc::channel(STREAM_BUFFER * 2);
    assert!(r.has_standalone());
    assert!(!r.attach_standalone(tx2), "one live standalone stream at a time");
    drop(rx);
    r.push(STANDALONE, data("later"));
    let (tx3, mut rx3) = mpsc::channel(STREAM_BUFFER * 2);
    assert!(r.attach_standalone(tx3), "a dead one is replaced");
    assert_eq!(drain(&mut rx3), [format!("0-{}=later", STREAM_BUFFER + 6)]);
    let (tx4, _rx4) = mpsc::channel(STREAM_BUFFER * 2);
    assert!(matches!(r.resume("0-1", tx4), Err(ResumeError::TooOld(_))));
}

#[test]
fn a_subscriber_that_falls_behind_is_let_go_and_resumes_from_the_buffer() {
    let mut r = Replay::default();
    let (tx, mut rx) = mpsc::channel(2);
    assert!(r.attach_standalone(tx));
    for i in 0..5 {
        r.push(STANDALONE, data(&i.to_string()));
    }
    // Two fit; the third found the channel full: the subscriber is gone
    // (its response ends) and nothing grows past the buffer.
    assert_eq!(drain(&mut rx), ["0-1=0", "0-2=1"]);
    assert!(rx.try_recv().is_err());
    let (tx, mut rx) = mpsc::channel(8);
    assert_eq!(r.resume("0-2", tx), Ok(true), "resumed where the client left off");
    assert_eq!(drain(&mut rx), ["0-3=2", "0-4=3", "0-5=4"]);
}
