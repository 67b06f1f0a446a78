//! The listener against raw sockets on loopback: what a client that holds a
//! connection without using it gets.

use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;
use crate::server::http::body;

const BODY_LIMIT: usize = 64;
const BODY_TIMEOUT: Duration = Duration::from_millis(600);

async fn read_body(request: Request) -> Response {
    let (parts, b) = request.into_parts();
    match body::read(b, parts.headers.get(http::header::CONTENT_LENGTH), BODY_LIMIT, BODY_TIMEOUT).await {
        Ok(bytes) => format!("read {}", bytes.len()).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_millis(500)).await;
    "slow done"
}

async fn start(options: ListenOptions) -> (Server, std::net::SocketAddr) {
    let app =
        Router::new().route("/", get(|| async { "ok" })).route("/slow", get(slow)).route("/body", post(read_body));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (Server::start(listener, app, options), addr)
}

fn options() -> ListenOptions {
    ListenOptions {
        max_connections: 8,
        header_read_timeout: Duration::from_millis(300),
        keep_alive_timeout: Duration::from_millis(700),
        ..ListenOptions::default()
    }
}

/// Reads until the server closes the connection (or `within` passes);
/// returns what arrived, and whether it closed.
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
    }
}

#[tokio::test]
async fn half_a_header_is_cut_off_after_the_header_timeout() {
    let (_server, addr) = start(options()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let started = tokio::time::Instant::now();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").await.unwrap();
    let (_, closed) = read_to_close(&mut tcp, Duration::from_secs(3)).await;
    assert!(closed, "still open");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(2), "closed after {took:?}");
    // A connection that never sends anything is closed on the same clock.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(read_to_close(&mut silent, Duration::from_secs(3)).await.1);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_and_a_used_one_is_not() {
    let (_server, addr) = start(options()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    for _ in 0..4 {
        // A request every 200 ms, longer in total than the keep-alive timeout.
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "answered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let idle = tokio::time::Instant::now();
    let (_, closed) = read_to_close(&mut tcp, Duration::from_secs(3)).await;
    assert!(closed);
    let took = idle.elapsed();
    assert!(took >= Duration::from_millis(400), "closed after {took:?}: the keep-alive timeout, not the header one");
}

/// Sends `GET /` on `tcp` and reads its answer.
async fn get_ok(tcp: &mut TcpStream) {
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tcp.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "answered");
}

#[tokio::test]
async fn a_keep_alive_timeout_shorter_than_the_header_timeout_applies_on_time() {
    // The connection's first clock is the header timeout (long here); once
    // a request is answered, the (short) keep-alive clock must take over.
    let options = ListenOptions {
        header_read_timeout: Duration::from_secs(5),
        keep_alive_timeout: Duration::from_millis(400),
        ..options()
    };
    let (_server, addr) = start(options).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    get_ok(&mut tcp).await;
    let idle = tokio::time::Instant::now();
    let (_, closed) = read_to_close(&mut tcp, Duration::from_secs(4)).await;
    let took = idle.elapsed();
    assert!(closed, "still open after {took:?}");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "closed after {took:?}");
}

#[tokio::test]
async fn half_a_header_on_a_kept_alive_connection_is_cut_off_after_the_header_timeout() {
    // A second request head that never ends: the header clock (short) runs
    // from its first byte, not the idle connection's (long).
    let options = ListenOptions {
        header_read_timeout: Duration::from_millis(400),
        keep_alive_timeout: Duration::from_secs(5),
        ..options()
    };
    let (_server, addr) = start(options).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    get_ok(&mut tcp).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").await.unwrap();
    let started = tokio::time::Instant::now();
    let (_, closed) = read_to_close(&mut tcp, Duration::from_secs(4)).await;
    let took = started.elapsed();
    assert!(closed, "still open after {took:?}");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "closed after {took:?}");
}

#[tokio::test]
async fn a_trickled_body_gets_408_and_the_connection_closes() {
    let (_server, addr) = start(options()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n").await.unwrap();
    let started = tokio::time::Instant::now();
    let trickle = async {
        for _ in 0..50 {
            if tcp.write_all(b"x").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(900), trickle).await;
    let (answer, closed) = read_to_close(&mut tcp, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    assert!(closed, "the connection is let go");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn bodies_over_the_limit_get_413_declared_or_chunked() {
    let (_server, addr) = start(options()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n").await.unwrap();
    let (answer, _) = read_to_close(&mut tcp, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let chunk = "x".repeat(40);
    let request = format!(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n{chunk}\r\n28\r\n{chunk}\r\n0\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let (answer, _) = read_to_close(&mut tcp, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /body HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n{chunk}\r\n0\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tcp.read(&mut buf).await.unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("read 40"), "{answer}");
}

#[tokio::test]
async fn connections_past_the_cap_of_busy_ones_are_closed_at_once() {
    let (server, addr) = start(ListenOptions { max_connections: 2, ..options() }).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
        held.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.connections(), 2);
    let mut third = TcpStream::connect(addr).await.unwrap();
    let (answer, closed) = read_to_close(&mut third, Duration::from_millis(400)).await;
    assert!(closed && answer.is_empty(), "the third connection is closed without an answer");
    for mut tcp in held {
        let mut buf = [0u8; 1024];
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).ends_with("slow done"));
    }
}

#[tokio::test]
async fn shutdown_lets_requests_in_progress_finish_and_refuses_new_connections() {
    let (server, addr) = start(options()).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    // Another one, answered and kept alive (its keep-alive is 700 ms).
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut buf = [0u8; 1024];
    let n = kept.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).ends_with("ok"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.shutdown();
    let (rest, closed) = read_to_close(&mut kept, Duration::from_millis(250)).await;
    assert!(closed && rest.is_empty(), "an idle connection closes at once: {rest:?}");
    let (answer, closed) = read_to_close(&mut tcp, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("slow done"), "{answer}");
    assert!(closed, "closed after its answer");
    assert!(server.wait(Duration::from_secs(1)).await, "every connection is done");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed");
}

/// A listener whose `/refuse` answers 401, as a client with a bad key gets.
async fn start_refusing(options: ListenOptions) -> (Server, std::net::SocketAddr) {
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/refuse", get(|| async { (http::StatusCode::UNAUTHORIZED, "no").into_response() }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (Server::start(listener, app, options), addr)
}

#[tokio::test]
async fn a_peer_refused_again_and_again_is_told_to_go() {
    let (_server, addr) = start_refusing(options()).await;
    let mut answers = Vec::new();
    for _ in 0..REFUSALS_BEFORE_CLOSE + 2 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"GET /refuse HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
        let (answer, closed) = read_to_close(&mut tcp, Duration::from_millis(250)).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        answers.push((answer.to_ascii_lowercase().contains("connection: close"), closed));
    }
    let allowed = usize::try_from(REFUSALS_BEFORE_CLOSE).unwrap();
    assert!(answers[..allowed].iter().all(|&(told, closed)| !told && !closed), "{answers:?}");
    assert!(answers[allowed..].iter().all(|&(told, closed)| told && closed), "{answers:?}");
}

#[tokio::test]
async fn at_the_cap_an_idle_connection_gives_way_but_a_busy_one_does_not() {
    let (server, addr) = start(ListenOptions { max_connections: 2, ..options() }).await;
    let mut busy = TcpStream::connect(addr).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n").await.unwrap();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    get_ok(&mut idle).await;
    let mut new = TcpStream::connect(addr).await.unwrap();
    get_ok(&mut new).await;
    let (_, closed) = read_to_close(&mut idle, Duration::from_millis(200)).await;
    assert!(closed, "the idle connection gave its place");
    let mut buf = [0u8; 1024];
    let n = busy.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).ends_with("slow done"), "the busy one was served in full");
    assert!(server.connections() <= 2);
}

/// The race behind a rare failure of `fairness::a_peer_or_a_proxied_client_is_held_to_its_own_connections`:
/// an evicted connection's task has ended (its socket is closed) but its
/// place is not freed yet. It must not be a victim again, or a new
/// connection of its peer is let in over the cap.
#[test]
fn a_connection_leaving_its_place_is_no_victim_until_the_place_is_freed() {
    let peer = std::net::IpAddr::from([127, 0, 0, 1]);
    let places = Places::new(100, 2);
    let busy = || {
        let a = Arc::new(Activity::new());
        a.in_flight.fetch_add(1, Ordering::AcqRel);
        a
    };
    let idle = Arc::new(Activity::new());
    places.admit(peer, true, &idle).unwrap();
    places.admit(peer, true, &busy()).unwrap();
    places.admit(peer, true, &busy()).unwrap();
    // The idle one's task is woken and leaves; its place is still held.
    assert_eq!(idle.asked(), Wanted::Leave);
    assert!(!idle.evictable());
    assert_eq!(places.admit(peer, true, &busy()), Err(places::Full::Peer), "a fourth over the cap of 2");
}

#[test]
fn a_connection_asked_to_leave_after_a_request_began_stays_and_can_be_asked_again() {
    let activity = Activity::new();
    activity.evict();
    activity.in_flight.fetch_add(1, Ordering::AcqRel);
    assert_eq!(activity.asked(), Wanted::Nothing);
    assert!(!activity.evictable(), "busy");
    activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    assert!(activity.evictable(), "idle again and not asked");
    activity.close();
    assert_eq!(activity.asked(), Wanted::Finish);
    assert!(!activity.evictable(), "closing: no victim");
}
