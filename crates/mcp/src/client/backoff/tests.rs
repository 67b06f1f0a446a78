use super::*;

#[test]
fn backoff_doubles_and_caps() {
    assert_eq!(backoff(0), Duration::from_millis(500));
    assert_eq!(backoff(1), Duration::from_secs(1));
    assert_eq!(backoff(3), Duration::from_secs(4));
    assert_eq!(backoff(20), MAX_BACKOFF);
}
