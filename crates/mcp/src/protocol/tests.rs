//! Unit tests of `protocol.rs`.

use super::*;

#[test]
fn negotiation_echoes_known_and_falls_back_to_latest() {
    assert_eq!(Version::negotiate(Some("2025-03-26")), Version::V2025_03_26);
    assert_eq!(Version::negotiate(Some("2026-07-28")), Version::LATEST);
    assert_eq!(Version::negotiate(None), Version::LATEST);
    assert!(Version::V2025_03_26 < Version::V2025_06_18);
    assert!(Version::V2025_03_26.allows_batches());
    assert!(!Version::V2025_03_26.has_version_header());
}

#[test]
fn header_text_is_borrowed_when_it_is_utf8_and_mended_when_not() {
    assert!(matches!(header::text(b"2025-11-25"), std::borrow::Cow::Borrowed("2025-11-25")));
    assert_eq!(header::text(b"2025\xff"), "2025\u{fffd}");
}
