use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::event::{Call, Event, Kind, Who};
use super::writer::{Settings, line};
use super::*;
use crate::catalog::ToolEntry;

fn settings(arguments: AuditArguments, max_bytes: usize) -> Settings {
    let redact = AuditConfig::default().redact;
    Settings { arguments, redact, max_bytes }
}

fn entry(schema: Value) -> Arc<ToolEntry> {
    let definition = json!({"name": "login", "inputSchema": schema});
    crate::catalog::test_entries(json!({"name": "fx"}), vec![definition]).remove(0)
}

fn who() -> Who {
    Who { principal: Arc::from("alice"), client: Arc::from("alice"), session: Some(Arc::from("s1")) }
}

fn call(arguments: Value, schema: Value) -> Event {
    Event {
        time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        kind: Kind::Call(Box::new(Call {
            who: who(),
            entry: entry(schema),
            upstream: Arc::from("fx"),
            granted: Some(true),
            routed: false,
            arguments: Some(arguments),
            outcome: "ok",
            result_bytes: Some(42),
            latency: Duration::from_millis(3),
        })),
    }
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_call_event_names_its_definition_and_redacts_secrets_by_schema_and_name() {
    let schema = json!({"type": "object", "properties": {
        "user": {"type": "string"},
        "pin": {"type": "string", "writeOnly": true},
        "pass": {"type": "string", "format": "password"},
        "nested": {"type": "object", "properties": {"hidden": {"type": "string", "writeOnly": true}}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"code": {"writeOnly": true}}}},
    }});
    let arguments = json!({"user": "ada", "pin": "1234", "pass": "hunter2", "api_token": "t0k",
        "nested": {"hidden": "x", "shown": "y"}, "items": [{"code": 7, "n": 1}]});
    let event = parsed(&line(&call(arguments.clone(), schema.clone()), &settings(AuditArguments::Redacted, 16_384)));
    assert_eq!((event["schema"].as_u64(), event["type"].as_str()), (Some(1), Some("call")));
    assert_eq!(event["time"], "2027-01-15T08:00:00.000Z");
    let digest = entry(schema.clone()).digest.clone();
    assert!(digest.starts_with("sha256:"), "{digest}");
    assert_eq!((event["digest"].as_str(), event["granted"].as_bool()), (Some(&*digest), Some(true)));
    assert_eq!(
        (event["principal"].as_str(), event["tool"].as_str(), event["upstream"].as_str()),
        (Some("alice"), Some("login"), Some("fx"))
    );
    let args = &event["arguments"];
    assert_eq!(args["user"], "ada");
    assert_eq!(args["nested"]["shown"], "y");
    assert_eq!(args["items"][0]["n"], 1);
    for secret in
        [&args["pin"], &args["pass"], &args["api_token"], &args["nested"]["hidden"], &args["items"][0]["code"]]
    {
        let text = secret.as_str().unwrap_or_default();
        assert!(text.starts_with("redacted:") && text.len() == 9 + 12, "{secret}");
    }
    let sent = serde_json::to_vec(&arguments).unwrap();
    let digest = format!("sha256:{}", hex::encode(crate::config::sha256(&sent)));
    assert_eq!(event["arguments_digest"].as_str(), Some(digest.as_str()), "of the arguments as sent, secrets included");
    // none: the digest only; full: as sent.
    let none = parsed(&line(&call(arguments.clone(), schema.clone()), &settings(AuditArguments::None, 16_384)));
    assert!(none.get("arguments").is_none() && none["arguments_digest"].is_string());
    let full = parsed(&line(&call(arguments.clone(), schema), &settings(AuditArguments::Full, 16_384)));
    assert_eq!(full["arguments"], arguments);
}

#[test]
fn an_event_over_max_bytes_leaves_its_arguments_out() {
    let big = json!({"text": "x".repeat(5000)});
    let event = parsed(&line(&call(big, json!({})), &settings(AuditArguments::Full, 1024)));
    assert_eq!(event["truncated"], true);
    assert!(event.get("arguments").is_none() && event["digest"] == *entry(json!({})).digest);
}

#[tokio::test]
async fn a_full_queue_drops_and_counts_and_never_waits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let config = AuditConfig { enabled: true, path: path.display().to_string(), queue: 1, ..AuditConfig::default() };
    let dropped = Counter::default();
    let audit = Audit::start(&config, dropped.clone()).unwrap().unwrap();
    let started = std::time::Instant::now();
    for _ in 0..10_000 {
        audit.emit(call(json!({"text": "hi"}), json!({})));
    }
    let took = started.elapsed();
    assert!(dropped.get() > 0, "nothing dropped");
    eprintln!("10,000 events emitted in {took:?}, {} dropped", dropped.get());
    drop(audit);
    // What was not dropped was written, one JSON object per line.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines = text.lines().count() as u64;
        if lines + dropped.get() == 10_000 {
            assert!(text.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{lines} lines and {} dropped", dropped.get());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `redacted:` and the first 12 hex digits of the SHA-256 of `text`.
fn redacted(text: &str) -> String {
    format!("redacted:{}", &hex::encode(crate::config::sha256(text.as_bytes()))[..12])
}

#[test]
fn a_line_is_written_field_by_field_in_a_fixed_order_into_buffers_kept_between_events() {
    let schema = json!({"type": "object", "properties": {"pin": {"type": "string", "writeOnly": true}}});
    let arguments = json!({"user": "ada", "pin": "1234", "n": [1, {"api_key": 2}]});
    let digest = entry(schema.clone()).digest.clone();
    let sent = format!("sha256:{}", hex::encode(crate::config::sha256(arguments.to_string().as_bytes())));
    let (pin, key) = (redacted("1234"), redacted("2"));
    let settings = settings(AuditArguments::Redacted, 16_384);
    let mut lines = writer::Lines::default();
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).unwrap();
    assert_eq!(
        text(lines.render(&call(arguments, schema.clone()), &settings)),
        format!(
            r#"{{"schema":1,"time":"2027-01-15T08:00:00.000Z","type":"call","principal":"alice","client":"alice","session":"s1","tool":"login","upstream_tool":"login","upstream":"fx","digest":"{digest}","granted":true,"routed":false,"outcome":"ok","result_bytes":42,"latency_ms":3.0,"arguments_digest":"{sent}","arguments":{{"user":"ada","pin":"{pin}","n":[1,{{"api_key":"{key}"}}]}}}}"#
        )
    );
    // A refusal, sessionless, with no grant to check and no arguments kept.
    let mut refusal = call(json!({"x": 1}), schema);
    if let Kind::Call(c) = refusal.kind {
        refusal.kind = Kind::Refusal(Box::new(Call {
            who: Who { session: None, ..c.who.clone() },
            granted: None,
            outcome: "gate",
            ..*c
        }));
    }
    let sent = format!("sha256:{}", hex::encode(crate::config::sha256(br#"{"x":1}"#)));
    assert_eq!(
        text(lines.render(&refusal, &super::writer::Settings { arguments: AuditArguments::None, ..settings })),
        format!(
            r#"{{"schema":1,"time":"2027-01-15T08:00:00.000Z","type":"refusal","principal":"alice","client":"alice","session":null,"tool":"login","upstream_tool":"login","upstream":"fx","digest":"{digest}","granted":null,"routed":false,"outcome":"refused","reason":"gate","latency_ms":3.0,"arguments_digest":"{sent}"}}"#
        )
    );
}

#[test]
fn the_time_is_rfc3339_utc_in_milliseconds_from_one_second_to_the_next() {
    let settings = settings(AuditArguments::None, 16_384);
    let mut lines = writer::Lines::default();
    let epoch = SystemTime::UNIX_EPOCH;
    let base = epoch + Duration::from_secs(1_800_000_000);
    let times = [
        base + Duration::from_nanos(999_999_999),
        base + Duration::from_secs(1),
        base + Duration::from_millis(1_001),
        base + Duration::from_secs(86_400 * 365),
        epoch + Duration::from_millis(951_782_400_042), // 2000-02-29
        epoch,
    ];
    for time in times {
        let event = Event { time, kind: Kind::Drift { upstream: Arc::from("fx"), tool: "t".into(), kind: "new" } };
        let line = parsed(std::str::from_utf8(lines.render(&event, &settings)).unwrap());
        assert_eq!(line["time"], humantime::format_rfc3339_millis(time).to_string());
    }
    let event = |time| Event { time, kind: Kind::Drift { upstream: Arc::from("fx"), tool: "t".into(), kind: "new" } };
    let before = parsed(&line(&event(epoch - Duration::from_secs(1)), &settings));
    assert_eq!(before["time"], "1970-01-01T00:00:00.000Z", "a clock before 1970 writes the epoch");
}

#[test]
fn a_concerns_event_names_the_session_and_its_values() {
    let values = [("security", "high"), ("cost", "minimal")].map(|(c, v)| (c.to_owned(), v.to_owned()));
    let mut event = Event {
        time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        kind: Kind::Concerns { who: who(), concerns: Some(values.into_iter().collect()) },
    };
    let settings = settings(AuditArguments::Redacted, 16_384);
    assert_eq!(
        line(&event, &settings),
        r#"{"schema":1,"time":"2027-01-15T08:00:00.000Z","type":"concerns","principal":"alice","client":"alice","session":"s1","concerns":{"security":"high","cost":"minimal"}}"#
    );
    event.kind = Kind::Concerns { who: who(), concerns: None };
    assert_eq!(parsed(&line(&event, &settings))["concerns"], Value::Null);
}
