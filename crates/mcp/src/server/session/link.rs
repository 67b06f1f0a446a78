//! The queue between a request's [`Downlink`](super::Downlink) and the
//! [`Frames`](super::Frames) its transport drains.
//!
//! Made for what a request usually sends: its final response, then the end
//! of the POST's requests. Everything lives in one allocation (the `Arc`),
//! and the first two waiting frames are held inline; only a third starts a
//! queue. tokio's unbounded channel costs two allocations (its shared state
//! and the first block of slots) before anything is sent, and the
//! downlink's counters a third: three allocations for every request, where
//! this takes one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use parking_lot::Mutex;

use super::Frame;

/// Queue room (in frames) kept once the queue is drained; more is given back.
const SHRINK_ABOVE: usize = 64;

/// What the sending ends and the receiving end share.
#[derive(Debug)]
pub(super) struct Link {
    state: Mutex<State>,
    /// The receiver's waker, woken by every send and by the last sender's drop.
    waker: AtomicWaker,
    /// The receiver is gone: sends fail.
    closed: AtomicBool,
    /// Notifications sent and not yet received.
    pub(super) notes: AtomicUsize,
    /// Most notifications waiting at once.
    pub(super) capacity: usize,
    /// Notifications dropped because the queue was full.
    pub(super) dropped: AtomicU64,
    /// The application asks for a streamed answer (see `Downlink::prefer_stream`).
    pub(super) stream: AtomicBool,
}

#[derive(Debug)]
struct State {
    /// The oldest waiting frame, inline (the usual request's response);
    /// `None` only when nothing waits.
    head: Option<Frame>,
    /// The frame after `head`, inline (the usual request's `End`, queued
    /// before the response is taken); `None` when at most one waits.
    next: Option<Frame>,
    /// The frames after `next`, in order.
    rest: VecDeque<Frame>,
    /// Sending ends alive; none left and nothing waiting is the end.
    senders: usize,
}

/// What a receive found.
pub(super) enum Received {
    Frame(Frame),
    /// Nothing waiting, and senders left.
    Empty,
    /// Nothing waiting, and no sender left.
    Ended,
}

impl Link {
    /// A link with one sender.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State { head: None, next: None, rest: VecDeque::new(), senders: 1 }),
            waker: AtomicWaker::new(),
            closed: AtomicBool::new(false),
            notes: AtomicUsize::new(0),
            capacity,
            dropped: AtomicU64::new(0),
            stream: AtomicBool::new(false),
        }
    }

    /// Queues `frame`, or hands it back when the receiver is gone.
    pub(super) fn send(&self, frame: Frame) -> Result<(), Frame> {
        {
            let mut state = self.state.lock();
            // Checked under the lock: the receiver's drop empties the queue
            // under it, so nothing is queued after that.
            if self.closed.load(Ordering::Acquire) {
                return Err(frame);
            }
            if state.head.is_none() {
                state.head = Some(frame);
            } else if state.next.is_none() {
                state.next = Some(frame);
            } else {
                state.rest.push_back(frame);
            }
        }
        self.waker.wake();
        Ok(())
    }

    /// Takes the oldest waiting frame.
    pub(super) fn try_recv(&self) -> Received {
        let mut state = self.state.lock();
        match state.head.take() {
            Some(frame) => {
                // Keep the next ones inline, so the queue stays in order.
                state.head = state.next.take();
                state.next = state.rest.pop_front();
                // A session-wide downlink (stdio, legacy SSE) lives long:
                // room a burst needed is given back once it is drained.
                if state.next.is_none() && state.rest.capacity() > SHRINK_ABOVE {
                    state.rest = VecDeque::new();
                }
                Received::Frame(frame)
            }
            None if state.senders == 0 => Received::Ended,
            None => Received::Empty,
        }
    }

    /// Polls for the oldest waiting frame; `None` once no sender is left
    /// and nothing waits.
    pub(super) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Option<Frame>> {
        match self.try_recv() {
            Received::Frame(frame) => return Poll::Ready(Some(frame)),
            Received::Ended => return Poll::Ready(None),
            Received::Empty => {}
        }
        self.waker.register(cx.waker());
        // A send between the first look and the registration woke nobody.
        match self.try_recv() {
            Received::Frame(frame) => Poll::Ready(Some(frame)),
            Received::Ended => Poll::Ready(None),
            Received::Empty => Poll::Pending,
        }
    }

    /// One more sending end.
    pub(super) fn add_sender(&self) {
        self.state.lock().senders += 1;
    }

    /// A sending end is gone; the last one wakes the receiver (to end).
    pub(super) fn drop_sender(&self) {
        let last = {
            let mut state = self.state.lock();
            state.senders -= 1;
            state.senders == 0
        };
        if last {
            self.waker.wake();
        }
    }

    /// The receiver is gone: sends fail from now on, and what waits is dropped.
    pub(super) fn close(&self) {
        let dropped = {
            let mut state = self.state.lock();
            self.closed.store(true, Ordering::Release);
            (state.head.take(), state.next.take(), std::mem::take(&mut state.rest))
        };
        // Dropped outside the lock: a frame's drop may run anything.
        drop(dropped);
    }

    /// Whether no frame waits.
    pub(super) fn is_empty(&self) -> bool {
        self.state.lock().head.is_none()
    }

    /// Whether the receiver is gone.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Downlink, Frame};
    use crate::jsonrpc::{Id, Message, Notification, Response};

    fn note(n: u64) -> Message {
        Message::Notification(Notification { method: format!("n/{n}"), params: None })
    }

    fn method(frame: Frame) -> String {
        match frame {
            Frame::Message(Message::Notification(n)) => n.method,
            Frame::Final(r) => format!("final {:?}", r.id),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn frames_come_out_in_the_order_they_went_in() {
        let (down, mut frames) = Downlink::with_capacity(100);
        // Interleaved: the two inline frames and the queue behind them stay
        // in order.
        assert!(down.send(note(1)));
        assert!(down.send(note(2)));
        assert!(down.send(note(3)));
        assert_eq!(method(frames.try_recv().unwrap()), "n/1");
        assert!(down.send(note(4)));
        assert!(down.finish(Response::result(Id::number(7), serde_json::json!({}))));
        assert_eq!(method(frames.try_recv().unwrap()), "n/2");
        assert_eq!(method(frames.try_recv().unwrap()), "n/3");
        assert_eq!(method(frames.try_recv().unwrap()), "n/4");
        assert_eq!(method(frames.try_recv().unwrap()), format!("final {:?}", Some(Id::number(7))));
        assert!(matches!(frames.try_recv(), Err(super::super::TryRecvError::Empty)));
    }

    #[tokio::test]
    async fn the_end_comes_once_every_sender_is_gone_and_the_queue_is_drained() {
        let (down, mut frames) = Downlink::with_capacity(100);
        let clone = down.clone();
        let modern = down.for_modern(None);
        drop(down);
        assert!(clone.send(note(1)));
        drop(clone);
        drop(modern);
        assert_eq!(method(frames.recv().await.unwrap()), "n/1");
        assert!(frames.recv().await.is_none());
        assert!(matches!(frames.try_recv(), Err(super::super::TryRecvError::Disconnected)));
    }

    #[test]
    fn a_send_after_the_receiver_is_gone_fails_and_nothing_is_kept() {
        let (down, frames) = Downlink::with_capacity(100);
        assert!(down.send(note(1)));
        assert!(!down.is_closed());
        drop(frames);
        assert!(down.is_closed());
        assert!(!down.send(note(2)));
        assert!(!down.finish(Response::result(Id::number(1), serde_json::json!({}))));
        // What waited went with the receiver.
        let state = down.link.state.lock();
        assert!(state.head.is_none() && state.next.is_none() && state.rest.is_empty());
    }

    #[test]
    fn a_response_and_the_end_wait_without_a_queue() {
        let (down, mut frames) = Downlink::with_capacity(100);
        assert!(down.finish(Response::result(Id::number(1), serde_json::json!({}))));
        down.end();
        assert_eq!(down.link.state.lock().rest.capacity(), 0, "both held inline");
        assert_eq!(method(frames.try_recv().unwrap()), format!("final {:?}", Some(Id::number(1))));
        assert_eq!(method(frames.try_recv().unwrap()), "End");
    }

    #[test]
    fn a_drained_queue_gives_back_the_room_a_burst_took() {
        let (down, mut frames) = Downlink::with_capacity(1000);
        for n in 0..500 {
            assert!(down.send(note(n)));
        }
        assert!(down.link.state.lock().rest.capacity() >= 498);
        for n in 0..500 {
            assert_eq!(method(frames.try_recv().unwrap()), format!("n/{n}"));
        }
        assert!(down.link.state.lock().rest.capacity() <= super::SHRINK_ABOVE);
        // And it still works after.
        assert!(down.send(note(7)));
        assert_eq!(method(frames.try_recv().unwrap()), "n/7");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_receiver_is_woken_by_a_send_from_another_task() {
        // Room for all: none is dropped for a slow reader.
        let (down, mut frames) = Downlink::with_capacity(1000);
        let sender = crate::spawn(async move {
            for n in 0..200 {
                assert!(down.send(note(n)));
                if n % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        });
        for n in 0..200 {
            let frame = tokio::time::timeout(std::time::Duration::from_secs(10), frames.recv()).await;
            assert_eq!(method(frame.expect("woken").expect("a frame")), format!("n/{n}"));
        }
        sender.await.unwrap();
        assert!(frames.recv().await.is_none());
    }
}
