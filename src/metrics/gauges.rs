//! Gauges read from the gateway at scrape time: live sessions (in all and
//! per client), each upstream's state and live connections, and the
//! runtime's size. Reading them when asked costs nothing between scrapes
//! and cannot drift.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use super::GatewayRef;
use super::clients::Clients;
use super::labels::Label;

/// The scrape-time gauges of one gateway.
#[derive(Debug)]
pub struct GatewayGauges {
    gateway: OnceLock<GatewayRef>,
    clients: Arc<Clients>,
}

impl GatewayGauges {
    pub fn new(clients: Arc<Clients>) -> Self {
        Self { gateway: OnceLock::new(), clients }
    }

    pub fn attach(&self, gateway: GatewayRef) {
        let _ = self.gateway.set(gateway);
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

impl Collector for GatewayGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let Some(gateway) = self.gateway.get().and_then(GatewayRef::upgrade) else { return Ok(()) };
        let sessions = gateway.sessions().sessions();
        gauge(&mut encoder, "toolgate_sessions_active", "Client sessions open now", sessions.len() as i64)?;
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
        let listening = gateway.listeners().len() as i64;
        gauge(
            &mut encoder,
            "toolgate_listen_streams_active",
            "subscriptions/listen streams open now (2026-07-28 clients)",
            listening,
        )?;

        let mut per_client: BTreeMap<String, i64> = BTreeMap::new();
        for s in &sessions {
            let label = match self.clients.label_of(s.state.client_name()) {
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

        let upstreams = gateway.upstreams();
        gauges(
            &mut encoder,
            "toolgate_upstream_up",
            "Whether the gateway's own connection to the upstream is up (1) or not (0: starting, failed, restarting)",
            "upstream",
            // Slots a reload retired are no upstream any more.
            upstreams
                .iter()
                .filter(|u| !u.is_retired())
                .map(|u| (Label::Name(u.label.clone()), i64::from(u.control().is_some()))),
        )?;
        let mut connections: Vec<i64> = upstreams.iter().map(|u| i64::from(u.control().is_some())).collect();
        for s in &sessions {
            for (index, _) in s.state.live_connections() {
                if let Some(n) = connections.get_mut(index) {
                    *n += 1;
                }
            }
        }
        gauges(
            &mut encoder,
            "toolgate_upstream_connections",
            "Live connections to the upstream (child processes for stdio): the gateway's own plus each session's own",
            "upstream",
            upstreams
                .iter()
                .zip(connections)
                .filter(|(u, _)| !u.is_retired())
                .map(|(u, n)| (Label::Name(u.label.clone()), n)),
        )
    }
}
