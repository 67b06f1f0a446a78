//! Unit tests of `subscriptions.rs`.

use super::*;

#[test]
fn the_first_holder_subscribes_and_the_last_unsubscribes() {
    let subs = ResourceSubscriptions::default();
    let rx = subs.watch();
    assert!(subs.acquire("a://x"));
    assert!(!subs.acquire("a://x"));
    assert!(subs.acquire("b://y"));
    assert_eq!(subs.uris(), ["a://x", "b://y"]);
    assert_eq!(*rx.borrow(), 2);
    assert!(!subs.release("a://x"));
    assert!(subs.holds("a://x"));
    assert!(subs.release("a://x"));
    assert!(!subs.holds("a://x"));
    assert!(!subs.release("a://x"), "releasing what nobody holds does nothing");
    assert_eq!(subs.uris(), ["b://y"]);
    assert_eq!(*rx.borrow(), 3);
}
