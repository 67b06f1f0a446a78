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
        tasks: vec![("task-1".into(), "fx".into())],
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
    assert_eq!(store.refresh("s2", "key.alice").await.unwrap(), Refresh::Missing);
    assert_eq!(server.command("EXISTS toolgate:session:s2"), ":0", "no half record");

    store.put("s2", &record()).await.unwrap();
    assert_eq!(store.update("s2", &fields).await.unwrap(), Refresh::Kept);
    assert_eq!(store.load("s2").await.unwrap().unwrap().state.log_level, Some(json!("info")));

    store.end("s2", "key.alice").await.unwrap();
    assert_eq!(store.load("s2").await.unwrap(), None);
    for answer in
        [store.put("s2", &record()).await, store.update("s2", &fields).await, store.refresh("s2", "key.alice").await]
    {
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
    assert_eq!(read.state.subscriptions, record().state.subscriptions, "the subscription fields stand");
    assert_eq!(read.grants, record().grants);
    assert_eq!(read.tasks, record().tasks);

    let mut other = fields.clone();
    other.insert("v".into(), "2".into());
    assert_eq!(Record::from_fields(other), None, "another layout");
    fields.remove("caller");
    assert_eq!(Record::from_fields(fields), None, "no identity, no adoption");
}

#[test]
fn subscriptions_are_one_field_each_and_a_record_of_the_earlier_layout_reads_its_list() {
    let fields: HashMap<String, String> = record().fields().into_iter().collect();
    assert_eq!(fields.get("s:file:///a").map(String::as_str), Some("1"));
    assert!(!fields.contains_key("subs"), "no list is written");
    let mut earlier = fields.clone();
    earlier.retain(|k, _| !k.starts_with("s:"));
    earlier.insert("subs".into(), r#"["file:///b","file:///a"]"#.into());
    let read = Record::from_fields(earlier).expect("a record");
    assert_eq!(read.state.subscriptions, ["file:///a", "file:///b"]);
}

#[tokio::test]
async fn one_subscription_is_one_field_written_and_removed_and_a_key_of_another_type_reads_as_no_record() {
    let Some(server) = RedisServer::start() else { return };
    let store = sessions(&server);
    store.put("s3", &record()).await.unwrap();
    let field = crate::shared::record::subscription_field("file:///c");
    assert_eq!(store.update("s3", &[(field.clone(), "1".into())]).await.unwrap(), Refresh::Kept);
    assert_eq!(server.command("HEXISTS toolgate:session:s3 s:file:///c"), ":1");
    assert_eq!(store.remove("s3", &[field]).await.unwrap(), Refresh::Kept);
    assert_eq!(server.command("HEXISTS toolgate:session:s3 s:file:///c"), ":0");
    assert_eq!(store.load("s3").await.unwrap().unwrap().state.subscriptions, ["file:///a"]);
    // A key that is no hash (a tombstone) is no record, and no outage.
    store.end("s3", "key.alice").await.unwrap();
    assert_eq!(store.load("gone:s3").await.unwrap(), None);
    assert!(!store.connection().is_failing());
}

#[tokio::test]
async fn max_sessions_slots_are_counted_across_replicas_live_with_the_record_and_end_with_it() {
    let Some(server) = RedisServer::start() else { return };
    // Two replicas' stores on one Redis.
    let (a, b) = (sessions(&server), sessions(&server));
    assert!(a.take_slot("key.alice", "s1", 2).await.unwrap());
    assert!(b.take_slot("key.alice", "s2", 2).await.unwrap());
    assert!(!a.take_slot("key.alice", "s3", 2).await.unwrap(), "a third session on either replica");
    assert!(!b.take_slot("key.alice", "s3", 2).await.unwrap());
    assert!(a.take_slot("key.alice", "s1", 2).await.unwrap(), "a session keeps the slot it holds");
    assert!(b.take_slot("key.bob", "s4", 2).await.unwrap(), "another client is not held back");
    // The record's writes keep the slot as long as the record.
    a.put("s1", &record()).await.unwrap();
    let score = |id: &str| server.bulk(&format!("ZSCORE toolgate:session:slots:key.alice toolgate:session:{id}"));
    let before = score("s1");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(b.refresh("s1", "key.alice").await.unwrap(), Refresh::Kept);
    assert_ne!(score("s1"), before, "the refresh started the slot's time over");
    // An ended session frees its slot for a new one.
    b.end("s1", "key.alice").await.unwrap();
    assert!(a.take_slot("key.alice", "s3", 2).await.unwrap());
}
