//! Connection fairness through the real binary, on raw sockets: no client
//! and no anonymous peer can take every connection from the others.
//! - A client over its session cap (40 legacy streams, then 40 refused
//!   requests) and 200 idle unauthenticated connections, each against
//!   `max_connections = 30`, leave room for another client's `initialize`
//!   within a second: idle connections give way.
//! - A peer refused again and again is told to go (`Connection: close`).
//! - `max_connections_per_peer` holds a peer, or a trusted proxy's client
//!   named in `X-Forwarded-For`, to its own connections.

use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::common::*;

/// How long a connection toolgate closes may take to be seen closed, on a
/// machine loaded with the rest of the suite.
const CLOSE_WITHIN: Duration = Duration::from_secs(10);

const MAL: &str = "mal-key-0123456789abcdef012";
const BOB: &str = "bob-key-0123456789abcdef01";

/// toolgate with mal (two sessions at most) and bob, and `server` keys.
async fn start(server: &str) -> Result<Toolgate> {
    let upstream = fixture_upstream("fx", &[], "");
    let clients = format!("{}{}", client_entry("mal", MAL, "max_sessions = 2"), client_entry("bob", BOB, ""));
    Toolgate::start_with(&upstream, &format!("[server]\nlisten = \"127.0.0.1:0\"\n{server}\n{clients}")).await
}

/// A response head read off a raw connection.
struct Head {
    status: u16,
    text: String,
}

impl Head {
    fn closes(&self) -> bool {
        self.text.to_ascii_lowercase().contains("\r\nconnection: close")
    }
}

/// Sends `request` on a new connection and reads its response head (the
/// body, a stream or not, is left unread); the connection stays open.
async fn send(port: u16, request: &str) -> Result<(TcpStream, Head)> {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.write_all(request.as_bytes()).await?;
    let head = read_head(&mut tcp).await?;
    Ok((tcp, head))
}

async fn read_head(tcp: &mut TcpStream) -> Result<Head> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&got[..end + 4]).into_owned();
            let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).context("a status line")?;
            return Ok(Head { status, text });
        }
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0)) => bail!("closed before a response head: {:?}", String::from_utf8_lossy(&got)),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => bail!("read failed: {e}"),
            Err(_) => bail!("no response head within 10 s: {:?}", String::from_utf8_lossy(&got)),
        }
    }
}

/// Whether the server closes `tcp` within `within` (whatever it sends first).
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

fn legacy_get(port: u16, key: &str) -> String {
    format!(
        "GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {key}\r\n\r\n"
    )
}

fn post_initialize(port: u16, key: &str, extra_headers: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nAuthorization: Bearer {key}\r\n{extra_headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Bob's `initialize`, which must be answered within a second.
async fn bob_gets_in(gw: &Toolgate) -> Result<()> {
    let started = Instant::now();
    let mut bob = Client::with_bearer(&gw.url, BOB)?;
    let answer = tokio::time::timeout(Duration::from_secs(1), bob.initialize(json!({})))
        .await
        .context("bob's initialize took over 1 s")??;
    ensure!(answer["protocolVersion"].is_string(), "bob's initialize: {answer}");
    eprintln!("bob's initialize answered in {:?}", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn a_client_over_its_session_cap_cannot_lock_another_out() -> Result<()> {
    let gw = start("max_connections = 30").await?;
    let port = gw.port();
    let mut held = Vec::new();
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let (tcp, head) = send(port, &legacy_get(port, MAL)).await?;
        statuses.push(head.status);
        held.push((tcp, head));
    }
    ensure!(statuses.iter().filter(|s| **s == 200).count() == 2, "two streams, the rest refused: {statuses:?}");
    ensure!(statuses.iter().filter(|s| **s == 429).count() == 38, "{statuses:?}");
    for _ in 0..40 {
        let (tcp, head) = send(port, &post_initialize(port, MAL, "")).await?;
        ensure!(head.status == 429, "mal's third session: {}", head.text);
        held.push((tcp, head));
    }
    // A refused request does not hold its place: past the first few
    // refusals, each is told the connection closes, and it does.
    let told = held.iter().filter(|(_, h)| h.status == 429 && h.closes()).count();
    ensure!(told >= 70, "{told} of 78 refusals carried Connection: close");
    let (mut last, _) = held.pop().context("held")?;
    ensure!(closed_within(&mut last, CLOSE_WITHIN).await, "a refused connection stayed open");
    bob_gets_in(&gw).await?;
    // Mal's two streams were never closed for it.
    let mut streams = held.into_iter().filter(|(_, h)| h.status == 200).map(|(tcp, _)| tcp).collect::<Vec<_>>();
    for tcp in &mut streams {
        ensure!(!closed_within(tcp, Duration::from_millis(200)).await, "a live stream was closed");
    }
    Ok(())
}

#[tokio::test]
async fn idle_and_half_sent_connections_give_way_to_a_client() -> Result<()> {
    let gw = start("max_connections = 30").await?;
    let port = gw.port();
    // 200 connections that never send a byte...
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(TcpStream::connect(("127.0.0.1", port)).await?);
    }
    bob_gets_in(&gw).await?;
    // ...and 40 that send half a request head, with no credential.
    let mut half = Vec::new();
    for _ in 0..40 {
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await?;
        tcp.write_all(format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes()).await?;
        half.push(tcp);
    }
    bob_gets_in(&gw).await?;
    // The ones that gave way were closed by toolgate, the oldest first.
    let mut first = idle.swap_remove(0);
    ensure!(closed_within(&mut first, CLOSE_WITHIN).await, "the oldest idle connection is still open");
    Ok(())
}

#[tokio::test]
async fn when_every_connection_is_busy_a_new_one_is_refused_until_one_frees() -> Result<()> {
    // Keep-alive events tell toolgate soon when a stream's client has gone.
    let gw = start("max_connections = 2\nsse_keep_alive = \"1s\"").await?;
    let port = gw.port();
    let (first, head) = send(port, &legacy_get(port, BOB)).await?;
    ensure!(head.status == 200, "{}", head.text);
    let (mut second, head) = send(port, &legacy_get(port, BOB)).await?;
    ensure!(head.status == 200, "{}", head.text);
    // Both carry a stream: the third is closed unanswered.
    let mut third = TcpStream::connect(("127.0.0.1", port)).await?;
    let _ = third.write_all(post_initialize(port, BOB, "").as_bytes()).await;
    let mut answer = Vec::new();
    let got = tokio::time::timeout(Duration::from_secs(5), third.read_to_end(&mut answer)).await;
    ensure!(matches!(got, Ok(Ok(0)) | Ok(Err(_))), "the third connection was served: {answer:?}");
    ensure!(!closed_within(&mut second, Duration::from_millis(300)).await, "a stream was closed for it");
    // A stream ends: its place is free again.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match send(port, &post_initialize(port, BOB, "")).await {
            Ok((_, head)) if head.status == 200 => break,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            other => bail!("no connection served after a stream ended: {:?}", other.map(|(_, h)| h.text)),
        }
    }
    gw.wait_log("too many open, each busy", Duration::from_secs(5)).await?;
    Ok(())
}

#[tokio::test]
async fn a_peer_or_a_proxied_client_is_held_to_its_own_connections() -> Result<()> {
    // Directly: at its cap of 2, a peer's own idle connection gives way, and
    // with both busy a third is refused.
    let gw = start("max_connections_per_peer = 2").await?;
    let port = gw.port();
    let (mut idle, head) = send(port, &post_initialize(port, BOB, "")).await?;
    ensure!(head.status == 200, "{}", head.text);
    let (_stream, head) = send(port, &legacy_get(port, BOB)).await?;
    ensure!(head.status == 200);
    // The idle first connection gives way to this one, which opens a stream.
    let (_stream2, head) = send(port, &legacy_get(port, BOB)).await?;
    ensure!(head.status == 200);
    ensure!(closed_within(&mut idle, CLOSE_WITHIN).await, "the idle connection did not give way");
    let mut third = TcpStream::connect(("127.0.0.1", port)).await?;
    ensure!(closed_within(&mut third, CLOSE_WITHIN).await, "a third busy connection of the peer");

    // Behind a trusted proxy (the test itself, on 127.0.0.1): the cap is per
    // forwarded client, and the proxy is not held to it.
    let gw = start("max_connections_per_peer = 1\ntrusted_proxies = [\"127.0.0.1\"]").await?;
    let port = gw.port();
    let from = |client: &str| format!("X-Forwarded-For: 6.6.6.6, {client}\r\n");
    let stream = |client: &str| {
        format!(
            "GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\
             Authorization: Bearer {BOB}\r\n{}\r\n",
            from(client)
        )
    };
    let (_a, head) = send(port, &stream("203.0.113.1")).await?;
    ensure!(head.status == 200, "{}", head.text);
    let (_b, head) = send(port, &stream("203.0.113.2")).await?;
    ensure!(head.status == 200, "another client through the same proxy: {}", head.text);
    let (mut again, head) = send(port, &post_initialize(port, BOB, &from("203.0.113.1"))).await?;
    ensure!(head.status == 429 && head.closes(), "the first client's second connection: {}", head.text);
    ensure!(head.text.to_ascii_lowercase().contains("retry-after: 1"), "{}", head.text);
    ensure!(closed_within(&mut again, CLOSE_WITHIN).await);
    // Only the right-most untrusted entry names the client: a lie further
    // left is no way around the cap.
    let lie = "X-Forwarded-For: 198.51.100.9, 203.0.113.1\r\n";
    let (_, head) = send(port, &post_initialize(port, BOB, lie)).await?;
    ensure!(head.status == 429, "{}", head.text);
    // With nothing forwarded, the connection is the proxy's own, uncapped.
    for _ in 0..3 {
        let (_, head) = send(port, &post_initialize(port, BOB, "")).await?;
        ensure!(head.status == 200, "{}", head.text);
    }
    Ok(())
}
