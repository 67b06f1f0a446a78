//! The upstream that goes away: a `toolgate-fixture` serving Streamable
//! HTTP on a fixed loopback port, killed with SIGKILL and started again on
//! the same port every `interval`, for as long as the calls run. What it
//! records (when the last kill happened, since when the upstream is back)
//! lets each failed call be placed against the outages.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use tokio::time::Instant;
use toolgate_test_support::{Proc, start_http_server};

/// "Not up": the value of `up_since_ms` while the upstream is down.
pub const DOWN: u64 = u64::MAX;

/// The outage state, shared with the callers.
pub struct Outages {
    /// When the benchmark started (all times below are milliseconds since).
    pub epoch: Instant,
    /// SIGKILLs sent.
    pub kills: AtomicU64,
    /// Successful restarts.
    pub restarts: AtomicU64,
    /// When the last kill was sent (`DOWN` before the first).
    pub last_kill_ms: AtomicU64,
    /// When the upstream last printed `LISTENING`, or `DOWN` while it is down.
    pub up_since_ms: AtomicU64,
    /// Restart attempts that failed (port still taken, …) and were retried.
    pub restart_failures: AtomicU64,
}

impl Outages {
    pub fn new(epoch: Instant) -> Arc<Outages> {
        Arc::new(Outages {
            epoch,
            kills: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            last_kill_ms: AtomicU64::new(DOWN),
            up_since_ms: AtomicU64::new(0),
            restart_failures: AtomicU64::new(0),
        })
    }

    /// Milliseconds since the epoch.
    pub fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

/// The fixture on `addr` (`127.0.0.1:0` picks a port); returns it and its URL.
pub async fn start(fixture: &str, addr: &str) -> Result<(Proc, String)> {
    start_http_server(fixture, &["--http", addr]).await
}

/// Kills the fixture every `interval`, leaves it down for `down`, and
/// starts it again on the same port, until `stop` is set. Returns the last
/// instance (running) so the caller can stop it.
pub async fn cycle(
    fixture: String,
    addr: String,
    mut proc: Proc,
    interval: Duration,
    down: Duration,
    outages: Arc<Outages>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<Proc> {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(proc),
            _ = tokio::time::sleep(interval) => {}
        }
        outages.up_since_ms.store(DOWN, Ordering::SeqCst);
        outages.last_kill_ms.store(outages.now_ms(), Ordering::SeqCst);
        // SIGKILL: no goodbye to toolgate, the connections just break.
        proc.child.start_kill()?;
        proc.child.wait().await?;
        outages.kills.fetch_add(1, Ordering::SeqCst);
        drop(proc);
        tokio::time::sleep(down).await;
        let mut attempts = 0;
        proc = loop {
            match start(&fixture, &addr).await {
                Ok((p, _)) => break p,
                Err(e) => {
                    outages.restart_failures.fetch_add(1, Ordering::SeqCst);
                    attempts += 1;
                    if attempts >= 50 {
                        bail!("the HTTP fixture does not start again on {addr}: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        outages.up_since_ms.store(outages.now_ms(), Ordering::SeqCst);
        outages.restarts.fetch_add(1, Ordering::SeqCst);
    }
}
