//! The shared session records against a real `redis-server` (see
//! `toolgate_test_support::RedisServer`): the round trip of a record, and
//! the write script's promises (an update never creates half a record, and
//! nothing revives an ended session).

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::json;
use toolgate_test_support::RedisServer;

use super::*;
use crate::shared::record::Mutable;

const IDLE: Duration = Duration::from_secs(60);

fn sessions(server: &RedisServer) -> SharedSessions {
    let connection = Connection::open(&server.url(), &crate::config::StateConfig::default()).expect("a valid URL");
    SharedSessions::new(Arc::new(connection), "toolgate:session:", IDLE, Arc::from("replica1"))
}

fn record() -> Record {
    Record {
        caller: "key.alice".into(),
        version: "2025-11-25".into(),
        capabilities: json!({"sampling": {}}),
        client_info: json!({"name": "t", "version": "1"}),
        state: Mutable {
            log_level: Some(json!("debug")),
            concerns: Some(IndexMap::from([("region".to_owned(), "eu".to_owned())])),
            subscriptions: vec!["file:///a".into()],
        },
        grants: HashMap::from([("echo".to_owned(), 42)]),
    }
}

#[tokio::test]
async fn a_record_reads_back_as_written_with_the_idle_timeout_as_its_ttl() {
    let Some(server) = RedisServer::start() else { return };
    let store = sessions(&server);
    assert_eq!(store.put("s1", &record()).await.unwrap(), Refresh::Kept);
    assert_eq!(store.load("s1").await.unwrap(), Some(record()));
    assert_eq!(store.grant_of("s1", "echo").await.unwrap(), Some(42));
    assert_eq!(store.grant_of("s1", "other").await.unwrap(), None);
    let ttl: u64 = server.command("PTTL toolgate:session:s1").trim_start_matches(':').parse().unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "{ttl}");
    assert_eq!(store.load("unknown").await.unwrap(), None);
}

#[tokio::test]
async fn an_update_never_creates_a_record_and_nothing_revives_an_ended_session() {
    let Some(server) = RedisServer::start() else { return };
    let store = sessions(&server);
    let fields = vec![("log".to_owned(), "\"info\"".to_owned())];
    // Missing (expired, or lost with Redis's data): the caller writes it whole.
    assert_eq!(store.update("s2", &fields).await.unwrap(), Refresh::Missing);
    assert_eq!(store.refresh("s2").await.unwrap(), Refresh::Missing);
    assert_eq!(server.command("EXISTS toolgate:session:s2"), ":0", "no half record");

    store.put("s2", &record()).await.unwrap();
    assert_eq!(store.update("s2", &fields).await.unwrap(), Refresh::Kept);
    assert_eq!(store.load("s2").await.unwrap().unwrap().state.log_level, Some(json!("info")));

    store.end("s2").await.unwrap();
    assert_eq!(store.load("s2").await.unwrap(), None);
    for answer in [store.put("s2", &record()).await, store.update("s2", &fields).await, store.refresh("s2").await] {
        assert_eq!(answer.unwrap(), Refresh::Ended);
    }
    assert_eq!(server.command("EXISTS toolgate:session:s2"), ":0", "a write-back does not revive it");
}

#[test]
fn a_record_of_another_layout_or_missing_its_identity_is_none_and_a_malformed_part_reads_as_absent() {
    let mut fields: HashMap<String, String> = record().fields().into_iter().collect();
    fields.insert("log".into(), "{not json".into());
    fields.insert("subs".into(), "42".into());
    let read = Record::from_fields(fields.clone()).expect("a record");
    assert_eq!(read.state.log_level, None);
    assert!(read.state.subscriptions.is_empty());
    assert_eq!(read.grants, record().grants);

    let mut other = fields.clone();
    other.insert("v".into(), "2".into());
    assert_eq!(Record::from_fields(other), None, "another layout");
    fields.remove("caller");
    assert_eq!(Record::from_fields(fields), None, "no identity, no adoption");
}
