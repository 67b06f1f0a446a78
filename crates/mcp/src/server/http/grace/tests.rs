//! Unit tests of `grace.rs`.

use super::*;

#[tokio::test(start_paused = true)]
async fn a_wait_ends_at_the_first_tick_after_its_time_and_the_ticker_stops_when_idle() {
    let clock = GraceClock::default();
    let started = Instant::now();
    clock.until(started + Duration::from_millis(25)).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(25) && took <= Duration::from_millis(25) + TICK, "{took:?}");
    // Nobody waits: the ticker ends after its next tick.
    tokio::time::sleep(TICK * 3).await;
    assert!(!clock.0.ticking.load(Ordering::SeqCst), "the ticker stopped");
    assert_eq!(clock.0.waiting.load(Ordering::SeqCst), 0);

    // Waits that overlap share the ticker, and a wait given up is
    // counted out.
    let a = clock.until(Instant::now() + Duration::from_millis(15));
    let b = clock.until(Instant::now() + Duration::from_millis(45));
    let dropped = tokio::time::timeout(Duration::from_millis(5), clock.until(Instant::now() + TICK * 100));
    assert!(dropped.await.is_err(), "timed out");
    let started = Instant::now();
    tokio::join!(a, b);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(40) && took <= Duration::from_millis(45) + TICK, "{took:?}");
    tokio::time::sleep(TICK * 3).await;
    assert!(!clock.0.ticking.load(Ordering::SeqCst));
    assert_eq!(clock.0.waiting.load(Ordering::SeqCst), 0);
}
