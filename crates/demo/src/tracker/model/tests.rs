//! Unit tests of `model.rs`.

use super::*;

#[test]
fn dates_round_trip_and_reject_non_dates() {
    assert_eq!(days("1970-01-01"), Some(0));
    assert_eq!(days("2025-06-16"), Some(20_255));
    for n in [0, 20_255, 20_269, 11_016, -1] {
        assert_eq!(days(&date_from_days(n)), Some(n));
    }
    assert_eq!(date_from_days(days("2024-02-28").unwrap() + 1), "2024-02-29");
    for bad in ["2025-02-29", "2025-13-01", "2025-6-1", "tomorrow", "2025-06-31", ""] {
        assert_eq!(days(bad), None, "{bad}");
    }
}
