//! Futures boxed where they are made.
//!
//! `Box::pin(future)` builds the future on the stack and then copies it into
//! the heap: a copy of its whole size, whatever state it is in. The futures
//! of a forwarded call are kilobytes (the gateway's is about 10 KB), and
//! these copies were a visible part of a call's cost in `benches/callgrind.sh`.
//! Allocating first and making the future in the allocation lets the
//! compiler write it there directly.

use std::future::Future;
use std::pin::Pin;

/// The future `make` returns, boxed and pinned: the box is allocated first,
/// so the future can be written straight into it rather than copied.
#[inline(always)]
pub fn pinned<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_future_boxed_where_it_is_made_runs_as_it_would_unboxed() {
        let text = String::from("made in place");
        let boxed = super::pinned(|| async move { text.len() });
        assert_eq!(boxed.await, 13);
    }
}
