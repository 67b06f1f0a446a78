//! Unit tests of `caller.rs`.

use super::*;

#[test]
fn callers_compare_by_id_and_hand_back_what_was_attached() {
    let alice = Caller::new("alice", Arc::new(42u32));
    assert_eq!(alice.principal::<u32>(), Some(&42));
    assert_eq!(alice.principal::<String>(), None, "a different type is not downcast");
    assert!(alice.same_as(&Caller::new("alice", Arc::new(()))));
    assert!(!alice.same_as(&Caller::new("bob", Arc::new(42u32))));
    assert!(!alice.same_as(&Caller::anonymous()));
    let anonymous = Caller::anonymous();
    assert_eq!(anonymous.id(), ANONYMOUS);
    assert!(anonymous.principal::<u32>().is_none());
    assert!(anonymous.same_as(&Caller::anonymous()));
}
