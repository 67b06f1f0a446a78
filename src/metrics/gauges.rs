//! Gauges read at scrape time: live sessions (in all and per client), each
//! upstream's state and live connections, and the runtime's size. Reading
//! them when asked costs nothing between scrapes and cannot drift.
//!
//! What serves the sessions (the gateway) hands over a [`LiveState`]: the
//! metrics know that trait, never the gateway's types.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use super::clients::Clients;
use super::labels::Label;

/// The live state a scrape reads.
pub trait LiveState: Send + Sync {
    /// The state now.
    fn live(&self) -> Live;
}

/// The live state at one moment.
#[derive(Debug, Default)]
pub struct Live {
    /// The configured client name of each open session (`""`: anonymous).
    pub sessions: Vec<Arc<str>>,
    /// `subscriptions/listen` streams open now.
    pub listening: usize,
    /// Each configured upstream (not those a reload retired).
    pub upstreams: Vec<LiveUpstream>,
}

/// One upstream's live state.
#[derive(Debug)]
pub struct LiveUpstream {
    /// Its configured name.
    pub name: Arc<str>,
    /// Whether the gateway's own connection to it is up.
    pub up: bool,
    /// Live connections to it: the gateway's own plus each session's own.
    pub connections: i64,
}

/// The scrape-time gauges.
pub struct LiveGauges {
    source: OnceLock<Weak<dyn LiveState>>,
    clients: Arc<Clients>,
}

impl std::fmt::Debug for LiveGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveGauges").field("attached", &self.source.get().is_some()).finish_non_exhaustive()
    }
}

impl LiveGauges {
    pub fn new(clients: Arc<Clients>) -> Self {
        Self { source: OnceLock::new(), clients }
    }

    /// Reads `source` at each scrape while it lives (weakly: the metrics
    /// never keep the gateway alive).
    pub fn attach(&self, source: Weak<dyn LiveState>) {
        let _ = self.source.set(source);
    }
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> std::fmt::Result {
    let gauge = ConstGauge::new(value);
    gauge.encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

fn gauges(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &'static str,
    values: impl IntoIterator<Item = (Label, i64)>,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (value_label, value) in values {
        ConstGauge::new(value).encode(family.encode_family(&[(label, value_label)])?)?;
    }
    Ok(())
}

impl Collector for LiveGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let Some(source) = self.source.get().and_then(Weak::upgrade) else { return Ok(()) };
        let live = source.live();
        gauge(&mut encoder, "toolgate_sessions_active", "Client sessions open now", live.sessions.len() as i64)?;
        // The runtime that serves the scrape is the one serving everything.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let workers = runtime.metrics().num_workers() as i64;
            gauge(
                &mut encoder,
                "toolgate_runtime_workers",
                "Threads of the async runtime ([server] worker_threads)",
                workers,
            )?;
        }
        gauge(
            &mut encoder,
            "toolgate_listen_streams_active",
            "subscriptions/listen streams open now (2026-07-28 clients)",
            live.listening as i64,
        )?;

        let mut per_client: BTreeMap<String, i64> = BTreeMap::new();
        for client in &live.sessions {
            let label = match self.clients.label_of(client) {
                Label::Name(name) => name.to_string(),
                Label::Static(word) => word.to_owned(),
            };
            *per_client.entry(label).or_default() += 1;
        }
        gauges(
            &mut encoder,
            "toolgate_client_sessions_active",
            "Client sessions open now, by client",
            "client",
            per_client.into_iter().map(|(name, n)| (Label::Name(Arc::from(name)), n)),
        )?;
        gauges(
            &mut encoder,
            "toolgate_upstream_up",
            "Whether the gateway's own connection to the upstream is up (1) or not (0: starting, failed, restarting)",
            "upstream",
            live.upstreams.iter().map(|u| (Label::Name(u.name.clone()), i64::from(u.up))),
        )?;
        gauges(
            &mut encoder,
            "toolgate_upstream_connections",
            "Live connections to the upstream (child processes for stdio): the gateway's own plus each session's own",
            "upstream",
            live.upstreams.iter().map(|u| (Label::Name(u.name.clone()), u.connections)),
        )
    }
}
