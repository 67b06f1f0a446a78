use http::{HeaderMap, HeaderValue, header};

use super::{accepts, accepts_all, media_type};

fn accept(values: &[&str]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for v in values {
        headers.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
    }
    headers
}

#[test]
fn accept_lists_are_matched_by_media_type_case_insensitively() {
    let both = accept(&["Application/JSON; q=0.9 , text/event-stream"]);
    assert!(accepts(&both, "application/json"));
    assert!(accepts(&both, "text/event-stream"));
    assert!(!accepts(&accept(&["application/json"]), "text/event-stream"));
    assert!(accepts(&accept(&["text/html", "TEXT/*"]), "text/event-stream"), "wildcards, in any header line");
    assert!(accepts(&accept(&["*/*"]), "application/json"));
    assert!(!accepts(&accept(&["application/jsonl"]), "application/json"));
    assert!(!accepts(&HeaderMap::new(), "application/json"));
}

#[test]
fn a_post_needs_both_types_in_one_or_several_accept_lines() {
    let both = ["application/json", "text/event-stream"];
    assert!(accepts_all(&accept(&["application/json, text/event-stream"]), &both));
    assert!(accepts_all(&accept(&["text/event-stream", "APPLICATION/json;q=1"]), &both), "over two lines");
    assert!(accepts_all(&accept(&["*/*"]), &both));
    assert!(accepts_all(&accept(&["application/*, text/*"]), &both));
    assert!(!accepts_all(&accept(&["application/json"]), &both));
    assert!(!accepts_all(&accept(&["text/event-stream, application/*json"]), &both));
    assert!(!accepts_all(&HeaderMap::new(), &both));
    assert!(accepts_all(&HeaderMap::new(), &[]), "nothing wanted");
    let many = ["text/event-stream"; 40];
    assert!(accepts_all(&accept(&["text/event-stream"]), &many), "more types than bits");
}

#[test]
fn a_content_type_is_read_up_to_its_parameters() {
    assert_eq!(media_type(b"application/json"), b"application/json");
    assert_eq!(media_type(b" Application/JSON ; charset=utf-8"), b"Application/JSON");
    assert_eq!(media_type(b"application/json;"), b"application/json");
    assert_eq!(media_type(b";x"), b"");
}
