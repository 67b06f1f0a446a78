//! Unit tests of `woken` (woken.rs).

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use super::*;

/// The task's waker: counts its wakes.
#[derive(Default)]
struct Task(AtomicUsize);

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Pends until told, keeping the waker it was last polled with; counts its
/// polls.
#[derive(Clone, Default)]
struct Waits {
    polls: Arc<AtomicUsize>,
    waker: Arc<Mutex<Option<Waker>>>,
    done: Arc<AtomicBool>,
}

impl Future for Waits {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        if self.done.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn the_future_is_polled_first_and_then_only_once_woken() {
    let task = Arc::new(Task::default());
    let waker = Waker::from(task.clone());
    let mut cx = Context::from_waker(&waker);
    let waits = Waits::default();
    let mut woken = Woken::new(waits.clone(), &Arc::default());
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    assert_eq!(waits.polls.load(Ordering::SeqCst), 1, "the first poll reaches the future");
    // The task runs for another reason: the future is not polled.
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    assert_eq!(waits.polls.load(Ordering::SeqCst), 1);
    // What it waits on wakes it: the task is woken, and the next poll
    // reaches the future.
    waits.done.store(true, Ordering::SeqCst);
    let inner = waits.waker.lock().unwrap().take().unwrap();
    inner.wake();
    assert_eq!(task.0.load(Ordering::SeqCst), 1, "the task was woken");
    assert!(Pin::new(&mut woken).poll(&mut cx).is_ready());
    assert_eq!(waits.polls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_wake_during_its_own_poll_is_kept_for_the_next() {
    /// Wakes itself once, from inside its first poll.
    struct WakesItself(usize);
    impl Future for WakesItself {
        type Output = usize;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.0 += 1;
            if self.0 == 1 {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(self.0)
        }
    }
    let task = Arc::new(Task::default());
    let waker = Waker::from(task.clone());
    let mut cx = Context::from_waker(&waker);
    let mut woken = Woken::new(WakesItself(0), &Arc::default());
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    assert_eq!(task.0.load(Ordering::SeqCst), 1);
    assert_eq!(Pin::new(&mut woken).poll(&mut cx), Poll::Ready(2));
}

#[test]
fn a_connections_next_request_takes_the_flag_back_and_starts_woken() {
    let spare = Arc::default();
    let task = Arc::new(Task::default());
    let waker = Waker::from(task.clone());
    let mut cx = Context::from_waker(&waker);
    let first = Waits::default();
    let mut woken = Woken::new(first.clone(), &spare);
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    let flag = Arc::as_ptr(&woken.flag);
    drop(woken);
    let next = Waits::default();
    let mut woken = Woken::new(next.clone(), &spare);
    assert_eq!(Arc::as_ptr(&woken.flag), flag, "the same flag");
    assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
    assert_eq!(next.polls.load(Ordering::SeqCst), 1, "its first poll reaches it");
    // Two at once: the second gets a flag of its own.
    let other = Woken::new(Waits::default(), &spare);
    assert_ne!(Arc::as_ptr(&other.flag), flag);
}
