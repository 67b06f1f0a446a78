//! The listener's own limits through the real binary, on raw sockets: an
//! idle HTTP/1 keep-alive connection is closed after `keep_alive_timeout`
//! (and serves requests until then), and a connection over
//! `max_connections` takes the place of the longest-idle one (when every
//! one is busy, see `fairness.rs`).

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::common::*;

async fn start(server: &str) -> Result<Toolgate> {
    let upstream = fixture_upstream("fx", &[], "mode = \"passthrough\"");
    Toolgate::start_with(&upstream, &format!("[server]\nlisten = \"127.0.0.1:0\"\n{server}\n")).await
}

/// Sends `GET /healthz` on a keep-alive connection and reads its whole
/// response (head and `Content-Length` body); returns the status line.
async fn healthz(tcp: &mut TcpStream, port: u16) -> Result<String> {
    tcp.write_all(format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes()).await?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
                .and_then(|v| v.parse::<usize>().ok())
                .context("no Content-Length")?;
            if body.len() >= length {
                return Ok(head.lines().next().unwrap_or("").to_owned());
            }
        }
        match tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf)).await {
            Ok(Ok(0)) => bail!("closed after {text:?}"),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => bail!("read failed after {text:?}: {e}"),
            Err(_) => bail!("no complete answer within 10 s: {text:?}"),
        }
    }
}

/// Waits until the server closes the connection (or `within` passes);
/// returns whether it did, and anything it sent first.
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> (bool, Vec<u8>) {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return (true, got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => return (false, got),
        }
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_keep_alive_timeout() -> Result<()> {
    let gw = start("keep_alive_timeout = \"2s\"").await?;
    let port = gw.port();
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    assert_eq!(healthz(&mut tcp, port).await?, "HTTP/1.1 200 OK");
    // Kept alive: a second request on the same connection is served.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(healthz(&mut tcp, port).await?, "HTTP/1.1 200 OK");
    let idle_from = Instant::now();
    // Not closed at once...
    let (closed, _) = closed_within(&mut tcp, Duration::from_millis(1000)).await;
    assert!(!closed, "closed after {:?} idle, before keep_alive_timeout", idle_from.elapsed());
    // ...but soon after the timeout, without a word.
    let (closed, sent) = closed_within(&mut tcp, Duration::from_secs(8)).await;
    assert!(closed, "still open after {:?} idle", idle_from.elapsed());
    assert!(sent.is_empty(), "{}", String::from_utf8_lossy(&sent));
    assert!(idle_from.elapsed() >= Duration::from_millis(1900), "closed after {:?}", idle_from.elapsed());
    // The default keeps the same connection far longer (30 s).
    let gw = start("").await?;
    let port = gw.port();
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    assert_eq!(healthz(&mut tcp, port).await?, "HTTP/1.1 200 OK");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(healthz(&mut tcp, port).await?, "HTTP/1.1 200 OK");
    Ok(())
}

#[tokio::test]
async fn a_connection_over_max_connections_takes_the_place_of_the_longest_idle_one() -> Result<()> {
    let gw = start("max_connections = 2").await?;
    let port = gw.port();
    let mut first = TcpStream::connect(("127.0.0.1", port)).await?;
    assert_eq!(healthz(&mut first, port).await?, "HTTP/1.1 200 OK");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut second = TcpStream::connect(("127.0.0.1", port)).await?;
    assert_eq!(healthz(&mut second, port).await?, "HTTP/1.1 200 OK");
    // Both idle between requests: the third is served, in the place of the
    // first (idle longest), which toolgate closes without a word.
    let mut third = TcpStream::connect(("127.0.0.1", port)).await?;
    assert_eq!(healthz(&mut third, port).await?, "HTTP/1.1 200 OK");
    let (closed, sent) = closed_within(&mut first, Duration::from_secs(5)).await;
    assert!(closed, "the longest-idle connection is still open");
    assert!(sent.is_empty(), "{}", String::from_utf8_lossy(&sent));
    for tcp in [&mut second, &mut third] {
        assert_eq!(healthz(tcp, port).await?, "HTTP/1.1 200 OK");
    }
    Ok(())
}
