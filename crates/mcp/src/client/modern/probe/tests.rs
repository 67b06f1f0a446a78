use serde_json::json;

use super::*;
use crate::client::error::{Cause, HttpStatus};
use crate::jsonrpc::ErrorObject;

fn error(code: i64, data: Option<Value>) -> Result<Outcome, UpstreamError> {
    let mut e = ErrorObject::new(code, "no");
    if let Some(d) = data {
        e = e.with_data(d);
    }
    Ok(Outcome::error(e))
}

fn http(status: u16) -> Result<Outcome, UpstreamError> {
    let status = http::StatusCode::from_u16(status).expect("status");
    Err(UpstreamError::Http {
        upstream: "u".into(),
        source: Cause::new(HttpStatus { status, body: String::new(), challenge: None }),
    })
}

#[test]
fn a_discover_result_is_modern_in_either_shape() {
    let new = json!({"resultType": "complete", "supportedVersions": ["2099-01-01", "2026-07-28"],
        "capabilities": {"tools": {"listChanged": true}}, "instructions": "hi", "ttlMs": 0, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "new", "version": "1"}}});
    let Ok(Verdict::Modern(d)) = classify(Ok(Outcome::Result(new))) else { panic!("modern") };
    assert_eq!(d.version, "2026-07-28");
    assert_eq!(d.server_info["name"], "new");
    assert_eq!(d.capabilities["tools"]["listChanged"], true);
    assert_eq!(d.instructions.as_deref(), Some("hi"));
    let old = json!({"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": {"name": "old"}});
    let Ok(Verdict::Modern(d)) = classify(Ok(Outcome::Result(old))) else { panic!("modern") };
    assert_eq!(d.server_info["name"], "old");
    let none = json!({"supportedVersions": ["2099-01-01"], "capabilities": {}});
    assert!(matches!(classify(Ok(Outcome::Result(none))), Ok(Verdict::Legacy(_))));
}

#[test]
fn unsupported_version_names_the_version_to_retry_at_and_never_falls_back_for_it() {
    let listed = |v: Value| error(-32022, Some(json!({"supported": v, "requested": "2030-01-01"})));
    assert_eq!(classify(listed(json!(["2026-07-28"]))).ok(), Some(Verdict::RetryAt("2026-07-28")));
    // The request-metadata mock refuses the first request even at a version
    // it lists: ask again, never fall back to initialize.
    assert_eq!(classify(listed(json!(["2099-01-01", "2026-07-28"]))).ok(), Some(Verdict::RetryAt("2026-07-28")));
    assert!(matches!(classify(listed(json!(["2025-11-25"]))), Ok(Verdict::Legacy(_))));
    assert!(matches!(classify(error(-32022, None)), Ok(Verdict::Legacy(_))));
}

#[test]
fn other_errors_and_legacy_statuses_mean_initialize_while_outages_are_no_verdict() {
    assert!(matches!(classify(error(-32601, None)), Ok(Verdict::Legacy(_))));
    assert!(matches!(classify(error(-32600, None)), Ok(Verdict::Legacy(_))));
    for status in [400, 404, 405] {
        assert!(matches!(classify(http(status)), Ok(Verdict::Legacy(_))), "{status}");
    }
    for status in [401, 403, 500, 503] {
        assert!(classify(http(status)).is_err(), "{status}");
    }
    let down = UpstreamError::Unavailable { upstream: "u".into(), source: Cause::msg("refused") };
    assert!(classify(Err(down)).is_err());
}
