//! Unit tests of `plain.rs`.

use super::*;

#[test]
fn only_plain_http_urls_without_credentials() {
    if PROXY_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return; // a proxy is configured: everything goes through reqwest
    }
    let client = |u: &str| PlainClient::for_url(&reqwest::Url::parse(u).unwrap());
    let c = client("http://127.0.0.1:8931/mcp?x=1").expect("plain http");
    assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 8931));
    assert_eq!(c.authority, "127.0.0.1:8931");
    assert_eq!(c.target, "/mcp?x=1");
    let v6 = client("http://[::1]:80/mcp").expect("IPv6");
    assert_eq!((v6.host.as_str(), v6.port), ("::1", 80));
    assert_eq!(v6.authority, "[::1]", "the default port is left out, as in the URL");
    assert!(client("https://example.com/mcp").is_none(), "TLS goes through reqwest");
    assert!(client("http://user:pw@127.0.0.1/mcp").is_none(), "credentials go through reqwest");
}

/// A POST carries exactly one `Content-Length`, the body's, and is not
/// sent chunked (an upstream may refuse a chunked body).
#[tokio::test]
async fn a_post_says_its_body_s_length_once() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    if PROXY_VARS.iter().any(|v| std::env::var_os(v).is_some()) {
        return; // a proxy is configured: everything goes through reqwest
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = reqwest::Url::parse(&format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
    let server = crate::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // The head, then as much of the body as it announces.
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the request was read");
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let lengths: Vec<usize> = text[..end]
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .filter(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                    .map(|(_, v)| v.trim().parse().unwrap())
                    .collect();
                if seen.len() >= end + 4 + lengths.first().copied().unwrap_or(0) {
                    socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}").await.unwrap();
                    return (text[..end].to_owned(), lengths, seen.len() - end - 4);
                }
            }
        }
    });
    let client = PlainClient::for_url(&url).expect("plain http");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
    let (response, _lease) = client.post(HeaderMap::new(), body.clone()).await.expect("posted");
    assert_eq!(response.status(), 200);
    let (head, lengths, read) = server.await.unwrap();
    assert_eq!(lengths, vec![body.len()], "one Content-Length, the body's:\n{head}");
    assert_eq!(read, body.len());
    assert!(!head.to_ascii_lowercase().contains("transfer-encoding"), "{head}");
}
