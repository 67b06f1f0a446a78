//! Opening an upstream session: start the transport, then learn the era
//! (`protocol = "auto"`: the `server/discover` probe, see
//! [`modern::probe`](super::modern::probe)) and either adopt the discover
//! answer (modern, sessionless) or perform the `initialize` handshake.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::{Cause, UpstreamError};
use super::http::HttpTransport;
use super::modern::probe::{self, Verdict};
use super::modern::{UpstreamEra, envelope, listen};
use super::peer::{Call, ClientHello, Peer, PeerEvents, ServerHello};
use super::target::{EraChoice, Target};
use super::{sse, stdio};
use crate::jsonrpc::Outcome;
use crate::protocol::{Version, method, modern};

/// Longest wait for a stdio child's answer to the probe: a handshake-era
/// server may ignore a request before `initialize`, and then silence is the
/// verdict.
const STDIO_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How to open one upstream session.
pub struct ConnectOptions {
    /// Name used in logs and errors.
    pub label: Arc<str>,
    /// What toolgate declares in `initialize`.
    pub hello: ClientHello,
    /// Receives what belongs to no call.
    pub events: Arc<dyn PeerEvents>,
    /// Attribute unsolicited traffic to the newest call (one client over stdio
    /// or legacy SSE, where nothing else says which call it belongs to).
    pub attribute_to_latest_call: bool,
    /// How long the handshake may take (the upstream's `timeout`).
    pub timeout: Duration,
    /// How long telling the upstream of an abandoned call may take.
    pub cancel_timeout: Duration,
    /// Which era to speak (`auto` probes).
    pub protocol: EraChoice,
    /// What the upstream's connections share about its era (the last
    /// verdict, the tools' `x-mcp-header`s). `None`: nothing shared.
    pub era: Option<Arc<UpstreamEra>>,
    /// The upstream's control connection: it probes afresh (others reuse
    /// the last verdict) and keeps a modern upstream's listen stream open.
    pub control: bool,
}

/// Starts the transport for `target` and performs the MCP handshake.
pub async fn connect(
    target: &Target,
    http: &reqwest::Client,
    options: ConnectOptions,
) -> Result<Arc<Peer>, UpstreamError> {
    let ConnectOptions {
        label,
        hello,
        events,
        attribute_to_latest_call,
        timeout,
        cancel_timeout,
        protocol,
        era,
        control,
    } = options;
    let open = || async {
        let peer = open(target, http, &label, &events, attribute_to_latest_call, timeout).await?;
        peer.set_cancel_timeout(cancel_timeout);
        Ok::<_, UpstreamError>(peer)
    };
    let peer = open().await?;
    let known = era.as_ref().filter(|_| !control && protocol == EraChoice::Auto).and_then(|e| e.known());
    // Legacy HTTP+SSE predates the modern era; a known legacy verdict needs
    // no second probe.
    let probing = !matches!(target, Target::Sse(_)) && protocol != EraChoice::Legacy && known.is_none();
    if let Some(known) = known.clone().filter(|h| h.modern.is_some()) {
        adopt(&peer, &hello, known, era.as_ref(), false);
        return Ok(peer);
    }
    let peer = if probing {
        match discover(&peer, &hello, timeout, protocol).await {
            Ok(Probed::Modern(found)) => {
                adopt(&peer, &hello, found, era.as_ref(), control);
                return Ok(peer);
            }
            Ok(Probed::Legacy) if peer.is_closed() => {
                // The child ended on a request before `initialize` (some
                // servers do): a fresh one for the handshake.
                tracing::debug!(upstream = %label, "the upstream exited on the probe; restarting it for initialize");
                open().await?
            }
            Ok(Probed::Silent) => {
                // The child did not answer the probe in time: one slow to
                // start may still answer it, and pin its connection to the
                // era the probe spoke. A fresh one for the handshake.
                tracing::debug!(upstream = %label, "no answer to the probe; restarting the upstream for initialize");
                peer.shutdown().await;
                open().await?
            }
            Ok(Probed::Legacy) => peer,
            Err(e) => {
                peer.shutdown().await;
                return Err(e);
            }
        }
    } else {
        peer
    };
    match handshake(&peer, &hello, timeout).await {
        Ok(()) => {
            if let (Some(era), Some(h)) = (&era, peer.hello()) {
                era.remember(h);
            }
            Ok(peer)
        }
        Err(e) => {
            peer.shutdown().await;
            Err(e)
        }
    }
}

/// Starts the transport for `target`.
async fn open(
    target: &Target,
    http: &reqwest::Client,
    label: &Arc<str>,
    events: &Arc<dyn PeerEvents>,
    attribute_to_latest_call: bool,
    timeout: Duration,
) -> Result<Arc<Peer>, UpstreamError> {
    let (label, events) = (label.clone(), events.clone());
    let peer = match target {
        Target::Stdio(command) => {
            let spawned = stdio::spawn(command, &label)?;
            Peer::new(label.clone(), |inbox| Box::new(spawned.start(inbox)), events, attribute_to_latest_call)
        }
        Target::StreamableHttp(endpoint) => Peer::new(
            label.clone(),
            |inbox| Box::new(HttpTransport::new(endpoint, &label, http.clone(), inbox)),
            events,
            attribute_to_latest_call,
        ),
        Target::Sse(endpoint) => {
            let opened = sse::open(endpoint, &label, http.clone(), timeout).await?;
            Peer::new(label.clone(), |inbox| Box::new(opened.start(inbox)), events, attribute_to_latest_call)
        }
        #[cfg(any(test, feature = "test-util"))]
        Target::Memory(server) => Peer::new(
            label.clone(),
            |inbox| Box::new(super::memory::open(server, &label, inbox)),
            events,
            attribute_to_latest_call,
        ),
    };
    Ok(peer)
}

/// What the era probe found.
enum Probed {
    /// A modern upstream, with what it said of itself.
    Modern(ServerHello),
    /// A handshake-era one: the caller initializes (a peer that closed under
    /// the probe needs a fresh start first).
    Legacy,
    /// A stdio child that did not answer in time: handshake-era, or slow;
    /// the caller initializes a fresh one.
    Silent,
}

/// The era probe. `protocol = "2026-07-28"` turns a legacy verdict into an
/// error.
async fn discover(
    peer: &Arc<Peer>,
    hello: &ClientHello,
    timeout: Duration,
    protocol: EraChoice,
) -> Result<Probed, UpstreamError> {
    let label = peer.label().clone();
    let start_error = |why: String| UpstreamError::Start { upstream: label.clone(), source: Cause::msg(why) };
    let stdio = !peer.transport().carries_headers();
    let wait = if stdio { timeout.min(STDIO_PROBE_TIMEOUT) } else { timeout };
    let mut version = modern::VERSION_2026_07_28;
    // One more probe after a `-32022` that names a version we speak.
    for _ in 0..2 {
        let mut params = None;
        envelope::stamp(&mut params, version, &hello.capabilities, None);
        let mut call = Call::new(method::SERVER_DISCOVER, params);
        call.probe = Some(version);
        let answer = super::service::call_on(peer.clone(), wait, call).await;
        let silent = matches!(answer, Err(UpstreamError::Timeout { .. })) && stdio;
        let verdict = match answer {
            // Over stdio, silence or an exit is a handshake-era server.
            Err(UpstreamError::Timeout { .. } | UpstreamError::Closed { .. }) if stdio => {
                Ok(Verdict::Legacy("no answer to server/discover".into()))
            }
            answer => probe::classify(answer),
        };
        match verdict? {
            Verdict::Modern(d) => {
                return Ok(Probed::Modern(ServerHello {
                    version: Version::LATEST,
                    modern: Some(d.version),
                    capabilities: d.capabilities,
                    server_info: d.server_info,
                    instructions: d.instructions,
                }));
            }
            Verdict::RetryAt(v) => {
                tracing::debug!(upstream = %label, asked = version, retry = v, "the upstream wants another modern version");
                version = v;
            }
            Verdict::Legacy(why) if protocol == EraChoice::Modern => {
                return Err(start_error(format!(
                    "protocol = \"2026-07-28\", but the upstream does not speak it: {why}"
                )));
            }
            Verdict::Legacy(why) => {
                tracing::debug!(upstream = %label, %why, "not a 2026-07-28 upstream; initializing");
                return Ok(if silent { Probed::Silent } else { Probed::Legacy });
            }
        }
    }
    Err(start_error(format!("the upstream refused protocol version {version} twice although it lists it")))
}

/// Makes `peer` a modern leg with what the probe found.
fn adopt(peer: &Arc<Peer>, hello: &ClientHello, found: ServerHello, era: Option<&Arc<UpstreamEra>>, control: bool) {
    let version = found.modern.unwrap_or(modern::VERSION_2026_07_28);
    peer.set_modern(version, hello.capabilities.clone(), era.cloned());
    if let Some(era) = era {
        era.remember(&found);
    }
    let filter = listen::filter(&found.capabilities);
    tracing::info!(upstream = %peer.label(), version, server = %found.server_info, "upstream speaks the sessionless revision");
    peer.set_hello(found);
    // The control connection listens, for list changes and for the
    // resources clients subscribe to (it may have no list changes yet
    // subscriptions later).
    let subscribes = peer.hello().is_some_and(|h| h.flag("resources", "subscribe"));
    if control && (filter.is_some() || subscribes) {
        listen::keep_open(peer.clone(), filter, era.cloned());
    }
}

async fn handshake(peer: &Arc<Peer>, hello: &ClientHello, timeout: Duration) -> Result<(), UpstreamError> {
    let label = peer.label().clone();
    let start_error = |source: Cause| UpstreamError::Start { upstream: label.clone(), source };
    let params = json!({
        "protocolVersion": Version::LATEST.as_str(),
        "capabilities": hello.capabilities,
        "clientInfo": hello.client_info,
    });
    let answer = super::service::call_on(peer.clone(), timeout, Call::new(method::INITIALIZE, Some(params))).await;
    let outcome = answer.map_err(|e| match e {
        UpstreamError::Closed { source, .. } => start_error(source),
        other => other,
    })?;
    let result = match outcome {
        Outcome::Error(e) => return Err(start_error(Cause::msg(format!("initialize failed: {e}")))),
        other => other.result_value().unwrap_or(Value::Null),
    };
    let offered = result.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let Some(version) = Version::parse(offered) else {
        return Err(start_error(Cause::msg(format!(
            "the upstream speaks protocol version {offered:?}, which toolgate does not"
        ))));
    };
    peer.set_hello(ServerHello {
        version,
        modern: None,
        capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
    });
    peer.notify(method::INITIALIZED, None).await;
    peer.transport().established(version).await;
    tracing::info!(upstream = %label, %version, server = %peer.hello().map(|h| h.server_info.to_string()).unwrap_or_default(), "upstream session ready");
    Ok(())
}
