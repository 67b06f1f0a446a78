//! Unit tests of `post.rs`.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use proptest::prelude::*;

use super::PostHeaders;
use crate::protocol;
use crate::server::http::accepts_all;

/// The headers a POST reads, and some it does not.
fn names() -> [HeaderName; 10] {
    [
        header::ACCEPT,
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        protocol::header::PROTOCOL_VERSION,
        protocol::header::SESSION_ID,
        protocol::header::TRACEPARENT,
        protocol::header::TRACESTATE,
        header::HOST,
        HeaderName::from_static("mcp-method"),
        HeaderName::from_static("x-other"),
    ]
}

const VALUES: [&str; 7] = [
    "application/json, text/event-stream",
    "application/json",
    "text/event-stream",
    "*/*",
    "text/html",
    "2025-11-25",
    "abc",
];

proptest! {
    /// Whatever the headers, in whatever order and however repeated, the
    /// one walk reads what a lookup of each would.
    #[test]
    fn one_walk_reads_what_each_lookup_would(
        sent in proptest::collection::vec((0..10usize, 0..VALUES.len()), 0..12)
    ) {
        let mut headers = HeaderMap::new();
        for (name, value) in sent {
            headers.append(names()[name].clone(), HeaderValue::from_static(VALUES[value]));
        }
        let seen = PostHeaders::read(&headers);
        prop_assert_eq!(seen.content_type, headers.get(header::CONTENT_TYPE));
        prop_assert_eq!(seen.content_length, headers.get(header::CONTENT_LENGTH));
        prop_assert_eq!(seen.version, headers.get(protocol::header::PROTOCOL_VERSION));
        prop_assert_eq!(seen.session_id, headers.get(protocol::header::SESSION_ID));
        let trace = crate::server::handler::TraceHeaders::from_headers(&headers);
        let walked = seen.trace();
        prop_assert_eq!(walked.as_ref().map(|t| &t.traceparent), trace.as_ref().map(|t| &t.traceparent));
        prop_assert_eq!(walked.and_then(|t| t.tracestate), trace.and_then(|t| t.tracestate));
        for wanted in [&["application/json", "text/event-stream"][..], &["text/event-stream"], &["application/json"]] {
            prop_assert_eq!(seen.accepts_all(wanted), accepts_all(&headers, wanted), "{:?}", wanted);
        }
    }
}

#[test]
fn accept_over_two_lines_is_read_from_both() {
    let mut headers = HeaderMap::new();
    headers.append(header::ACCEPT, HeaderValue::from_static("application/json"));
    headers.append(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.append(header::ACCEPT, HeaderValue::from_static("text/event-stream"));
    let seen = PostHeaders::read(&headers);
    assert!(seen.more_accept);
    assert!(seen.accepts_all(&["application/json", "text/event-stream"]));
    headers.remove(header::ACCEPT);
    headers.append(header::ACCEPT, HeaderValue::from_static("application/json"));
    assert!(!PostHeaders::read(&headers).accepts_all(&["application/json", "text/event-stream"]));
}
