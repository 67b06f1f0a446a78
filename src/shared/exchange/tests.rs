//! Unit tests of `exchange` (exchange.rs).

use super::*;

#[tokio::test]
async fn replies_reach_their_exchange_until_it_is_dropped() {
    let table = Arc::new(Exchanges::default());
    let mut waiting = table.open();
    let id = waiting.id().to_owned();
    assert!(table.deliver(&id, Value::from(1)));
    assert!(!table.deliver("someone else's", Value::from(2)));
    assert_eq!(waiting.next(Duration::from_secs(1)).await.ok(), Some(Value::from(1)));
    assert!(matches!(waiting.next(Duration::from_millis(10)).await, Err(ExchangeError::Silent)));
    drop(waiting);
    assert!(!table.deliver(&id, Value::from(3)), "a late reply is ignored");
    assert!(table.is_empty());
}
