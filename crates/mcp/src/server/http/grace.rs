//! The streaming grace of `POST` answers ([`STREAM_GRACE`]), and the coarse
//! clock that times it: one ticker task per server wakes every request
//! waiting out its grace each [`TICK`], instead of each request registering
//! a timer of its own.
//!
//! Why: a timer due sooner than anything the runtime's driver waits for
//! unparks the driver when it is registered (a write to the runtime's
//! eventfd, and one more return from `epoll_wait`), and the grace timer of a
//! forwarded tool call was that timer on every call. The ticker's own timer
//! is registered once per tick while requests are waiting, and the task ends
//! when none are. A grace so ends up to one tick late, which nobody can tell.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long answers the application wants streamed
/// ([`Downlink::prefer_stream`](crate::server::session::Downlink::prefer_stream)) may take and
/// still go out as one JSON response ([`answer`](super::answer)), for
/// session requests and sessionless 2026 ones alike.
///
/// Why 50 ms: a fast tool call, the common case, answers well within it and
/// then costs one write (and, in a session, no replay bookkeeping); a
/// slower one is streamed from then on (in a session, resumably), its first
/// event at most this much later (plus up to one [`TICK`]), a delay no
/// client notices next to the call it waits for.
pub(super) const STREAM_GRACE: Duration = Duration::from_millis(50);

/// How often waiting requests look at the time.
pub(super) const TICK: Duration = Duration::from_millis(10);

/// The clock of one server's requests.
#[derive(Default)]
pub(super) struct GraceClock(Arc<Inner>);

#[derive(Default)]
struct Inner {
    tick: Notify,
    /// Requests waiting for their grace to end.
    waiting: AtomicUsize,
    /// Whether a ticker task is running.
    ticking: AtomicBool,
}

impl GraceClock {
    /// Resolves at the first tick at or after `until`.
    pub(super) async fn until(&self, until: Instant) {
        let inner = &self.0;
        inner.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(inner);
        if !inner.ticking.swap(true, Ordering::SeqCst) {
            crate::spawn(ticker(inner.clone()));
        }
        loop {
            let tick = inner.tick.notified();
            let mut tick = std::pin::pin!(tick);
            // Registered before the time is read: no tick is missed between.
            tick.as_mut().enable();
            if Instant::now() >= until {
                return;
            }
            tick.await;
        }
    }
}

/// Counts a waiting request out, however its wait ends.
struct Waiting<'a>(&'a Inner);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Ticks while requests wait; ends once none do.
async fn ticker(inner: Arc<Inner>) {
    loop {
        tokio::time::sleep(TICK).await;
        inner.tick.notify_waiters();
        if inner.waiting.load(Ordering::SeqCst) > 0 {
            continue;
        }
        inner.ticking.store(false, Ordering::SeqCst);
        // A request that came in meanwhile either saw `ticking` still set
        // (then it is counted in `waiting` by now, and this task goes on) or
        // started a ticker of its own.
        if inner.waiting.load(Ordering::SeqCst) == 0 || inner.ticking.swap(true, Ordering::SeqCst) {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
