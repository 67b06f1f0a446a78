//! Unit tests of `guard.rs`.

use super::*;
use http::HeaderValue;

fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
    if let Some(o) = origin {
        h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
    }
    h
}

#[test]
fn default_accepts_loopback_only() {
    let g = Guard::new(&[], &[]);
    let uri = Uri::from_static("/mcp");
    for ok in ["localhost:8080", "127.0.0.1", "[::1]:9", "LOCALHOST"] {
        assert!(g.check(&headers(ok, None), &uri).is_ok(), "{ok}");
    }
    assert!(g.check(&headers("localhost:1", Some("http://localhost:3000")), &uri).is_ok());
    assert!(g.check(&headers("evil.example.com", None), &uri).is_err());
    assert!(g.check(&headers("127.0.0.1:80", Some("http://evil.example.com")), &uri).is_err());
    assert!(g.check(&headers("127.0.0.1:80", Some("null")), &uri).is_err());
    assert!(g.check(&headers("localhost.evil.com", None), &uri).is_err());
}

#[test]
fn configured_lists_replace_the_defaults() {
    let g = Guard::new(&["gw.example.com".into(), "10.0.0.5:8080".into()], &["https://app.example.com/".into()]);
    let uri = Uri::from_static("/mcp");
    assert!(g.check(&headers("gw.example.com:443", Some("https://app.example.com")), &uri).is_ok());
    assert!(g.check(&headers("10.0.0.5:8080", None), &uri).is_ok());
    assert!(g.check(&headers("10.0.0.5:9090", None), &uri).is_err());
    assert!(g.check(&headers("localhost", None), &uri).is_err());
    assert!(g.check(&headers("gw.example.com", Some("http://localhost")), &uri).is_err());
    let any = Guard::new(&["*".into()], &["*".into()]);
    assert!(any.check(&headers("anything", Some("https://x.y")), &uri).is_ok());
}

/// The first value of a repeated `Host` or `Origin` decides, as a lookup
/// reads it; without `Host`, the request target's authority (HTTP/2).
#[test]
fn the_first_value_decides_and_the_authority_stands_in_for_host() {
    let g = Guard::new(&[], &[]);
    let uri = Uri::from_static("/mcp");
    let mut h = headers("localhost", Some("http://localhost"));
    h.append(header::ORIGIN, HeaderValue::from_static("http://evil.example.com"));
    h.append(header::HOST, HeaderValue::from_static("evil.example.com"));
    assert!(g.check(&h, &uri).is_ok());
    let mut h = headers("evil.example.com", Some("http://evil.example.com"));
    h.append(header::ORIGIN, HeaderValue::from_static("http://localhost"));
    h.append(header::HOST, HeaderValue::from_static("localhost"));
    assert_eq!(g.check(&h, &uri), Err(Refused::Host("evil.example.com".into())));
    let mut bare = HeaderMap::new();
    bare.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
    assert_eq!(g.check(&bare, &uri), Err(Refused::MissingHost));
    assert!(g.check(&bare, &Uri::from_static("http://127.0.0.1:8080/mcp")).is_ok());
    bare.insert(header::ORIGIN, HeaderValue::from_static("http://evil.example.com"));
    assert_eq!(
        g.check(&bare, &Uri::from_static("http://127.0.0.1:8080/mcp")),
        Err(Refused::Origin("http://evil.example.com".into()))
    );
}
