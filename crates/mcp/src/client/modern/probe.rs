//! The era probe: what an upstream's answer to `server/discover` says about
//! the revision it speaks (`protocol = "auto"`).
//!
//! A `DiscoverResult` listing a revision toolgate speaks, or a `-32022`
//! naming one, means a modern server (after `-32022`, ask again at that
//! version: never fall back). A JSON-RPC error of another kind, or an HTTP
//! 400/404/405 without a JSON-RPC body, means a handshake-era server. Auth
//! failures, server errors and network failures say nothing about the era:
//! they fail the connection attempt, which the supervisor retries.

use serde_json::{Value, json};

use super::super::error::UpstreamError;
use crate::jsonrpc::Outcome;
use crate::protocol::modern::{self, code, discover, meta, result};

/// What the upstream said about itself in `server/discover`.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// The modern revision this leg speaks.
    pub version: &'static str,
    /// The upstream's capabilities.
    pub capabilities: Value,
    /// Its name and version: `_meta.serverInfo`, or the body's older field.
    pub server_info: Value,
    /// Its workflow instructions.
    pub instructions: Option<String>,
}

/// The probe's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A modern server: use this leg sessionless.
    Modern(Discovered),
    /// A modern server that wants another version it listed: probe again at it.
    RetryAt(&'static str),
    /// A handshake-era server: `initialize`.
    Legacy(String),
}

/// Classifies the answer to `server/discover`. `Err` is no verdict (the
/// upstream is down, refuses our credentials, or broke): the attempt fails.
/// A `-32022` that lists a modern version is always [`Verdict::RetryAt`],
/// even the version just asked for (the conformance `request-metadata`
/// server refuses the first request whatever it is); the caller bounds the
/// retries.
pub fn classify(answer: Result<Outcome, UpstreamError>) -> Result<Verdict, UpstreamError> {
    match answer {
        Ok(Outcome::Error(e)) if e.get("code").and_then(Value::as_i64) == Some(code::UNSUPPORTED_PROTOCOL_VERSION) => {
            let listed = e.pointer(&format!("/data/{}", result::SUPPORTED)).and_then(Value::as_array);
            match listed.into_iter().flatten().filter_map(Value::as_str).find_map(speakable) {
                Some(v) => Ok(Verdict::RetryAt(v)),
                None => Ok(Verdict::Legacy("the upstream serves no modern revision toolgate speaks".into())),
            }
        }
        Ok(Outcome::Error(e)) => Ok(Verdict::Legacy(format!("server/discover failed: {e}"))),
        Ok(ok) => Ok(from_result(&ok.result_value().unwrap_or(Value::Null))),
        Err(e) => match e.http_status() {
            Some(400 | 404 | 405) => Ok(Verdict::Legacy(e.report().to_string())),
            _ => Err(e),
        },
    }
}

/// A `DiscoverResult`, in either shape (serverInfo in `_meta`, or in the body
/// as SEP-2575 had it).
fn from_result(value: &Value) -> Verdict {
    let supported = value.get(discover::SUPPORTED_VERSIONS).and_then(Value::as_array);
    let Some(version) = supported.into_iter().flatten().filter_map(Value::as_str).find_map(speakable) else {
        return Verdict::Legacy("server/discover lists no modern revision toolgate speaks".into());
    };
    let server_info = value
        .pointer(&format!("/_meta/{}", meta::SERVER_INFO.replace('/', "~1")))
        .or_else(|| value.get(discover::SERVER_INFO_BODY))
        .cloned()
        .unwrap_or(Value::Null);
    Verdict::Modern(Discovered {
        version,
        capabilities: value.get(discover::CAPABILITIES).filter(|c| c.is_object()).cloned().unwrap_or_else(|| json!({})),
        server_info,
        instructions: value.get(discover::INSTRUCTIONS).and_then(Value::as_str).map(str::to_owned),
    })
}

/// toolgate's own string for a modern version it speaks.
fn speakable(v: &str) -> Option<&'static str> {
    modern::VERSIONS.into_iter().find(|s| *s == v)
}

#[cfg(test)]
mod tests;
