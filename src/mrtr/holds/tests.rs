use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Counts its drops: a dropped value is an answered, cancelled held call.
struct Probe(Arc<AtomicUsize>);

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_held_value_is_taken_once() {
    let holds = Holds::new(Duration::from_secs(60), 4, 10);
    let drops = Arc::new(AtomicUsize::new(0));
    let id = holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    assert_eq!(holds.len(), 1);
    assert!(holds.take(&id).is_some());
    assert!(holds.take(&id).is_none(), "a state is single use");
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(holds.is_empty());
}

#[tokio::test]
async fn caps_per_client_and_in_all_refuse_and_hand_the_value_back() {
    let holds = Holds::new(Duration::from_secs(60), 2, 3);
    let drops = Arc::new(AtomicUsize::new(0));
    let a1 = holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    let (e, back) = holds.insert("alice", Probe(drops.clone())).expect_err("alice is at her cap");
    assert_eq!(e, MrtrError::TooManyHeld { held: 2, limit: 2, whose: " for this client" });
    drop(back);
    holds.insert("bob", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    let (e, _) = holds.insert("carol", Probe(drops.clone())).expect_err("the table is full");
    assert_eq!(e, MrtrError::TooManyHeld { held: 3, limit: 3, whose: "" });
    // Taking one out makes room for its client again.
    drop(holds.take(&a1));
    holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room again");
}

#[tokio::test(start_paused = true)]
async fn an_untaken_value_is_dropped_when_its_hold_time_passes() {
    let holds = Holds::new(Duration::from_secs(5), 4, 10);
    let drops = Arc::new(AtomicUsize::new(0));
    let id = holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(drops.load(Ordering::SeqCst), 1, "expired");
    assert!(holds.take(&id).is_none());
    // Its client's count was released.
    for _ in 0..4 {
        holds.insert("alice", Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    }
}

#[tokio::test]
async fn clear_drops_everything() {
    let holds = Holds::new(Duration::from_secs(60), 4, 10);
    let drops = Arc::new(AtomicUsize::new(0));
    for who in ["a", "b", "c"] {
        holds.insert(who, Probe(drops.clone())).map_err(|(e, _)| e).expect("room");
    }
    holds.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert!(holds.is_empty());
}
