//! A request's future, polled only when something it waits on woke it.
//!
//! hyper polls a connection's request futures whenever the connection's
//! task runs, and the task runs for the connection's own reasons too: the
//! handler reading the request body wakes the dispatcher's body sender
//! (see `repoll.rs`), a socket turns writable. A request's future is a deep
//! one (the engine, the gateway's layers, the upstream client), and each
//! poll walks it down to whatever it waits on, to find it still waiting.
//! [`Woken`] gives the future a waker of its own, and on a poll of the task
//! polls the future only if that waker was woken since the last poll; any
//! wake also wakes the task, as the task's own waker would. The
//! connection's own watch (its check timer and its wake) is polled the same
//! way.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// `future`, polled when it was woken (and on its first poll).
pub(super) struct Woken<F> {
    future: F,
    flag: Arc<Flag>,
    /// The waker the future sees: the same one on every poll.
    waker: Waker,
    /// Where the flag goes back when the request is done.
    spare: Arc<Spare>,
}

/// A connection's flag between its requests, so that a request does not
/// allocate one of its own (requests at once, over HTTP/2, each take one).
/// A wake from a resource the last request left behind may still reach it:
/// one poll more, which costs nothing but the walk.
#[derive(Default)]
pub(super) struct Spare(parking_lot::Mutex<Option<Arc<Flag>>>);

impl<F: Future + Unpin> Woken<F> {
    pub(super) fn new(future: F, spare: &Arc<Spare>) -> Self {
        let flag = spare
            .0
            .lock()
            .take()
            .unwrap_or_else(|| Arc::new(Flag { woken: AtomicBool::new(true), task: AtomicWaker::new() }));
        flag.woken.store(true, Ordering::Release);
        Self { future, waker: Waker::from(flag.clone()), flag, spare: spare.clone() }
    }
}

impl<F> Drop for Woken<F> {
    fn drop(&mut self) {
        *self.spare.0.lock() = Some(self.flag.clone());
    }
}

impl<F: Future + Unpin> Future for Woken<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        // Registered before the flag is read: a wake from now on reaches
        // the task.
        this.flag.task.register(cx.waker());
        if !this.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        Pin::new(&mut this.future).poll(&mut Context::from_waker(&this.waker))
    }
}

/// The future's waker: marks the future woken, and wakes the task.
pub(super) struct Flag {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

#[cfg(test)]
mod tests;
