//! The `Content-Length` of a POST, as a header value that costs no
//! allocation.
//!
//! hyper writes a missing `Content-Length` from the body's size as
//! `HeaderValue::from(u64)`: a buffer with room for twenty digits, then a
//! shared header made when it is frozen, two allocations per request. A
//! length below [`LIMIT`] is instead a slice of one static text holding
//! every such number's digits, so the value borrows it.

use std::sync::LazyLock;

use bytes::Bytes;
use http::HeaderValue;

/// Lengths below this are slices of [`DIGITS`] (whose text is 38,890 bytes).
const LIMIT: usize = 10_000;

/// The decimal digits of 0, 1, …, `LIMIT - 1`, one after the other.
static DIGITS: LazyLock<String> = LazyLock::new(|| {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(38_890);
    for n in 0..LIMIT {
        let _ = write!(text, "{n}");
    }
    text
});

/// `len` as a `Content-Length` value.
pub(crate) fn content_length(len: usize) -> HeaderValue {
    if len >= LIMIT {
        return HeaderValue::from(len as u64);
    }
    // The numbers with fewer digits come first: ten of one digit, ninety of
    // two, nine hundred of three.
    let (digits, first, start) = match len {
        0..10 => (1, 0, 0),
        10..100 => (2, 10, 10),
        100..1000 => (3, 100, 190),
        _ => (4, 1000, 2890),
    };
    let at = start + (len - first) * digits;
    let text: &'static str = DIGITS.as_str();
    match text.get(at..at + digits) {
        Some(slice) => HeaderValue::from_maybe_shared(Bytes::from_static(slice.as_bytes()))
            .unwrap_or_else(|_| HeaderValue::from(len as u64)),
        None => HeaderValue::from(len as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_reads_as_its_number() {
        assert_eq!(DIGITS.len(), 38_890);
        for len in (0..LIMIT + 20).chain([65_535, 1 << 20]) {
            assert_eq!(content_length(len).to_str().unwrap(), len.to_string(), "length {len}");
        }
    }
}
