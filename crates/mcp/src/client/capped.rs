//! Size caps on what an HTTP upstream sends (`max_message_bytes`): a whole
//! response body, and each event of an SSE stream, so that no upstream can
//! make toolgate buffer without bound. The SSE cap watches the bytes before
//! the SSE parser gets them: the parser buffers an event until its blank
//! line, so a stream that never ends an event must be cut here. Also the
//! redirects the upstream HTTP client follows: within one origin only.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;

#[cfg(test)]
mod tests;

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 5;

/// The redirect policy of the upstream HTTP client: redirects are followed
/// only within the origin (scheme, host, port) of the first request, so the
/// configured headers (credentials) never reach another server.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(url::Url::origin);
        match first {
            _ if attempt.previous().len() > MAX_REDIRECTS => attempt.error("too many redirects"),
            Some(origin) if origin == attempt.url().origin() => attempt.follow(),
            _ => attempt.stop(),
        }
    })
}

/// An SSE event (or a line) longer than the cap.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CapError<E> {
    #[error("an SSE event is longer than {0} bytes (max_message_bytes)")]
    EventTooLarge(usize),
    #[error(transparent)]
    Inner(E),
}

/// A byte stream that fails once one SSE event (the bytes between two
/// blank lines) grows past `limit`.
pub(crate) struct CappedEvents<S> {
    inner: S,
    limit: usize,
    /// Bytes of the current event so far.
    event: usize,
    /// Bytes of the current line so far (0: at a line's start).
    line: usize,
    /// The previous byte was `\r` (a following `\n` ends the same line).
    after_cr: bool,
    failed: bool,
}

impl<S> CappedEvents<S> {
    pub(crate) fn new(inner: S, limit: usize) -> Self {
        Self { inner, limit, event: 0, line: 0, after_cr: false, failed: false }
    }

    /// Counts `chunk`; `false` once the current event is over the limit.
    fn count(&mut self, chunk: &[u8]) -> bool {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    if self.line == 0 {
                        // A blank line ends the event.
                        self.event = 0;
                    }
                    self.line = 0;
                }
                _ => {
                    self.after_cr = false;
                    self.line += 1;
                    self.event += 1;
                    if self.event > self.limit {
                        return false;
                    }
                }
            }
        }
        true
    }
}

impl<S, E> Stream for CappedEvents<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, CapError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match std::task::ready!(Pin::new(&mut self.inner).poll_next(cx)) {
            Some(Ok(chunk)) => {
                if self.count(&chunk) {
                    Poll::Ready(Some(Ok(chunk)))
                } else {
                    self.failed = true;
                    Poll::Ready(Some(Err(CapError::EventTooLarge(self.limit))))
                }
            }
            Some(Err(e)) => Poll::Ready(Some(Err(CapError::Inner(e)))),
            None => Poll::Ready(None),
        }
    }
}
