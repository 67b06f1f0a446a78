//! The start-up wait: a request that needs the catalog while upstreams are
//! still making their first connection attempt waits for them, but each
//! client session waits once: `initialize` waits up to
//! `server.startup_timeout`, and what the session asks later waits no longer
//! than that wait's end (an upstream that hangs at start used to cost the
//! first client the timeout twice: once in `initialize`, again in
//! `tools/list`). How each wait that had to wait ended is logged.

use std::sync::Arc;

use tokio::time::Instant;

use super::upstreams::UpstreamHandle;
use crate::config::ServerConfig;

/// Waits until every upstream's first connection attempt is over, or until
/// `deadline`; logs how the wait ended if it had to wait at all.
pub(super) async fn wait(upstreams: &[Arc<UpstreamHandle>], deadline: Instant, server: &ServerConfig) {
    if upstreams.iter().all(|u| u.is_ready()) {
        return;
    }
    let began = Instant::now();
    if began >= deadline {
        // This session already spent its wait.
        return;
    }
    let all = futures::future::join_all(upstreams.iter().map(|u| u.wait_ready()));
    let finished = tokio::time::timeout_at(deadline, all).await.is_ok();
    let waited = humantime::format_duration(round_ms(began.elapsed()));
    if finished {
        let down = names(upstreams.iter().filter(|u| u.control().is_none()));
        if down.is_empty() {
            tracing::info!(%waited, "start-up wait over: every upstream answered");
        } else {
            tracing::info!(%waited, %down, "start-up wait over: every upstream finished starting, some failed");
        }
    } else {
        let starting = names(upstreams.iter().filter(|u| !u.is_ready()));
        tracing::warn!(
            %waited,
            %starting,
            "start-up wait over: server.startup_timeout ({}) passed; answering without the upstreams still starting",
            humantime::format_duration(server.startup_timeout)
        );
    }
}

fn names<'a>(upstreams: impl Iterator<Item = &'a Arc<UpstreamHandle>>) -> String {
    upstreams.map(|u| &*u.label).collect::<Vec<_>>().join(", ")
}

fn round_ms(d: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(d.as_millis() as u64)
}
