//! Unit tests of `replicas` (replicas.rs).

use super::*;

#[test]
fn answers_name_the_replica_that_asked() {
    assert_eq!(replica_of(&Id::string("Ab_c-d9-17")).as_deref(), Some("Ab_c-d9"));
    assert_eq!(replica_of(&Id::string("x-")), None);
    assert_eq!(replica_of(&Id::string("-3")), None);
    assert_eq!(replica_of(&Id::number(3)), None, "an untagged id is no replica's");
    assert_eq!(replica_of(&Id::string("tag-1e3")), None);
}
