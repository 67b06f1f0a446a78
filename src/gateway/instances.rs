//! The child processes of a `sharing = "per_session"` stdio upstream (and
//! those of clients with an `upstream_env` of their own), held to
//! `max_instances`: each session's child takes a place for as long as it
//! runs; a child with no call for `instance_idle_timeout` is stopped, which
//! frees its place (the session gets a new child on its next call); and a
//! session that finds every place taken waits at most `instance_wait` for
//! one, then gets a clear error. Never a hang, never a child over the cap.
//! The upstream's control connection (tools, resources, prompts) is not
//! counted.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::config::{Target, UpstreamConfig};
use crate::upstream::{Peer, UpstreamError};

/// The places for one upstream's per-session children.
pub(crate) struct Instances {
    places: Arc<Semaphore>,
    max: usize,
    wait: Duration,
    idle: Duration,
}

impl Instances {
    /// The places of `config`'s upstream, if it is a stdio one: children
    /// per session (`per_session`), or per client with an `upstream_env`
    /// of its own (any `sharing`).
    pub(crate) fn of(config: &UpstreamConfig, target: &Target) -> Option<Self> {
        if !matches!(target, Target::Stdio(_)) {
            return None;
        }
        let max = config.max_instances.max(1);
        Some(Self {
            places: Arc::new(Semaphore::new(max)),
            max,
            wait: config.instance_wait,
            idle: config.instance_idle_timeout,
        })
    }

    /// Takes a place for a new child, waiting at most `instance_wait`.
    pub(crate) async fn acquire(&self, upstream: &Arc<str>) -> Result<OwnedSemaphorePermit, UpstreamError> {
        if let Ok(place) = self.places.clone().try_acquire_owned() {
            return Ok(place);
        }
        tracing::debug!(%upstream, max_instances = self.max, "every instance is in use; waiting for a free one");
        match tokio::time::timeout(self.wait, self.places.clone().acquire_owned()).await {
            Ok(Ok(place)) => Ok(place),
            _ => {
                tracing::warn!(%upstream, max_instances = self.max, "a session found no free instance");
                Err(UpstreamError::Busy { upstream: upstream.clone(), max: self.max, waited: self.wait })
            }
        }
    }

    /// Holds `place` while `peer` runs, and stops `peer` once it has sent
    /// no request for `instance_idle_timeout` and has none in flight.
    pub(crate) fn hold(&self, peer: Arc<Peer>, place: OwnedSemaphorePermit) {
        let idle = self.idle;
        crate::spawn(async move {
            idle_then_stop(&peer, idle).await;
            drop(place);
        });
    }
}

/// Stops `peer` once it has sent no request for `idle` and has none in
/// flight (a connection no cap holds, e.g. an HTTP upstream's).
pub(crate) fn stop_when_idle(peer: Arc<Peer>, idle: Duration) {
    crate::spawn(async move { idle_then_stop(&peer, idle).await });
}

/// Returns when `peer` closed, or once it was idle for `idle` (then stopped).
async fn idle_then_stop(peer: &Arc<Peer>, idle: Duration) {
    let (mut sent, _) = peer.activity();
    let mut idle_since = Instant::now();
    loop {
        tokio::select! {
            () = peer.closed().cancelled() => return,
            () = tokio::time::sleep_until(idle_since + idle) => {
                let (now_sent, in_flight) = peer.activity();
                if now_sent != sent || in_flight > 0 {
                    // Used meanwhile: the idle clock starts again.
                    (sent, idle_since) = (now_sent, Instant::now());
                    continue;
                }
                tracing::info!(upstream = %peer.label(), ?idle, "stopping an idle per-session instance");
                peer.shutdown().await;
                return;
            }
        }
    }
}
