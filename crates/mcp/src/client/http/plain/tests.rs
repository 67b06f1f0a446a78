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
