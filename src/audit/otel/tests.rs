use std::sync::Arc;
use std::time::{Duration, SystemTime};

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::{AnyValue, LoggerProvider as _, Severity};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogProcessor, SdkLogRecord, SdkLoggerProvider};
use parking_lot::Mutex;
use serde_json::json;

use super::super::event::{Call, Event, Kind, Who};
use super::Logs;

/// Keeps what is emitted.
#[derive(Debug, Default, Clone)]
struct Kept(Arc<Mutex<Vec<SdkLogRecord>>>);

impl LogProcessor for Kept {
    fn emit(&self, record: &mut SdkLogRecord, _: &InstrumentationScope) {
        self.0.lock().push(record.clone());
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

fn emitted(event: &Event, line: &str) -> SdkLogRecord {
    let kept = Kept::default();
    let provider = SdkLoggerProvider::builder().with_log_processor(kept.clone()).build();
    Logs::new(provider.logger("test")).emit(event, line.as_bytes());
    kept.0.lock().pop().expect("a record")
}

fn attributes(record: &SdkLogRecord) -> Vec<(String, AnyValue)> {
    record.attributes_iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn text(value: &str) -> AnyValue {
    AnyValue::String(value.to_owned().into())
}

fn who() -> Who {
    Who { principal: Arc::from("jwt:alice"), client: Arc::from("alice"), session: Some(Arc::from("s1")) }
}

fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

#[test]
fn a_refusal_is_a_record_with_the_line_as_body_and_the_calls_fields_as_attributes() {
    let definition = json!({"name": "login", "inputSchema": {"type": "object"}});
    let entry = crate::catalog::test_entries(json!({"name": "fx"}), vec![definition]).remove(0);
    let digest = entry.digest.to_string();
    let call = Call {
        who: who(),
        entry,
        upstream: Arc::from("fx"),
        granted: Some(false),
        routed: false,
        arguments: None,
        outcome: "gate",
        result_bytes: None,
        latency: Duration::ZERO,
    };
    let line = r#"{"schema":1,"type":"refusal","outcome":"refused"}"#;
    let record = emitted(&Event { time: at(), kind: Kind::Refusal(Box::new(call)) }, line);
    assert_eq!(record.event_name(), Some("toolgate.audit.refusal"));
    assert_eq!(record.severity_number(), Some(Severity::Info));
    assert_eq!(record.severity_text(), Some("INFO"));
    assert_eq!(record.timestamp(), Some(at()));
    assert_eq!(record.body(), Some(&text(line)));
    assert_eq!(
        attributes(&record),
        vec![
            ("audit.schema".into(), AnyValue::Int(1)),
            ("audit.type".into(), text("refusal")),
            ("audit.principal".into(), text("jwt:alice")),
            ("audit.tool".into(), text("login")),
            ("audit.upstream".into(), text("fx")),
            ("audit.outcome".into(), text("refused")),
            ("audit.digest".into(), text(&digest)),
        ]
    );
}

#[test]
fn events_without_a_call_carry_what_they_have() {
    let describe = Event { time: at(), kind: Kind::Describe { who: who(), tools: vec![] } };
    let record = emitted(&describe, "{}");
    assert_eq!(record.event_name(), Some("toolgate.audit.describe"));
    let keys: Vec<String> = attributes(&record).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["audit.schema", "audit.type", "audit.principal"]);

    let drift =
        Event { time: at(), kind: Kind::Drift { upstream: Arc::from("fx"), tool: "login".into(), kind: "changed" } };
    let record = emitted(&drift, "{}");
    assert_eq!(record.event_name(), Some("toolgate.audit.drift"));
    assert_eq!(
        attributes(&record)[1..],
        [
            ("audit.type".into(), text("drift")),
            ("audit.upstream".into(), text("fx")),
            ("audit.tool".into(), text("login")),
        ]
    );
}
