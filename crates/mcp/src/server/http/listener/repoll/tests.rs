//! Unit tests of `repoll` (repoll.rs).

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

fn task() -> (Arc<Task>, Waker) {
    let task = Arc::new(Task::default());
    (task.clone(), Waker::from(task))
}

/// Wakes itself `times` times, from inside its own poll, before it is done;
/// counts its polls.
struct WakesItself {
    times: usize,
    polls: Arc<AtomicUsize>,
}

impl Future for WakesItself {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        if self.times == 0 {
            return Poll::Ready(());
        }
        self.times -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn a_future_that_wakes_itself_is_polled_again_in_the_same_turn() {
    let (task, waker) = task();
    let polls = Arc::new(AtomicUsize::new(0));
    let mut future = Repoll::new(WakesItself { times: 3, polls: polls.clone() });
    let polled = Pin::new(&mut future).poll(&mut Context::from_waker(&waker));
    assert!(polled.is_ready());
    assert_eq!(polls.load(Ordering::SeqCst), 4);
    assert_eq!(task.0.load(Ordering::SeqCst), 0, "the task was not woken for it");
}

#[test]
fn one_that_keeps_waking_itself_yields_after_some_turns() {
    let (task, waker) = task();
    let polls = Arc::new(AtomicUsize::new(0));
    let mut future = Repoll::new(WakesItself { times: usize::MAX, polls: polls.clone() });
    let polled = Pin::new(&mut future).poll(&mut Context::from_waker(&waker));
    assert!(polled.is_pending());
    assert_eq!(polls.load(Ordering::SeqCst), TURNS);
    assert_eq!(task.0.load(Ordering::SeqCst), 1, "it yields: the task is woken to run again later");
}

/// Pending until woken from elsewhere; keeps the waker it was given.
#[derive(Default)]
struct WaitsForOthers {
    waker: Arc<Mutex<Option<Waker>>>,
    polls: usize,
}

impl Future for WaitsForOthers {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polls += 1;
        if self.polls > 1 {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn a_wake_from_elsewhere_wakes_the_task() {
    let (task, waker) = task();
    let inner = WaitsForOthers::default();
    let kept = inner.waker.clone();
    let mut future = Repoll::new(inner);
    assert!(Pin::new(&mut future).poll(&mut Context::from_waker(&waker)).is_pending());
    assert_eq!(task.0.load(Ordering::SeqCst), 0);
    let from_elsewhere = kept.lock().unwrap().take().expect("the future kept a waker");
    std::thread::spawn(move || from_elsewhere.wake()).join().expect("woken");
    assert_eq!(task.0.load(Ordering::SeqCst), 1, "a wake after the poll reaches the task");
    assert!(Pin::new(&mut future).poll(&mut Context::from_waker(&waker)).is_ready());
}

#[tokio::test]
async fn out_of_tokio_budget_it_yields_at_once() {
    let polls = Arc::new(AtomicUsize::new(0));
    let future = Repoll::new(WakesItself { times: usize::MAX, polls: polls.clone() });
    let mut future = std::pin::pin!(future);
    let (task, waker) = task();
    // Spend the task's budget as a busy connection would.
    while tokio::task::coop::has_budget_remaining() {
        tokio::task::coop::consume_budget().await;
        if !tokio::task::coop::has_budget_remaining() {
            break;
        }
    }
    assert!(future.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    assert_eq!(polls.load(Ordering::SeqCst), 1, "not polled again without budget");
    assert_eq!(task.0.load(Ordering::SeqCst), 1, "it yields");
}
