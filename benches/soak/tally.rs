//! What each call's answer was, and the counts the report is made of.
//!
//! Every answer is classified as one of:
//! - **ok**: the response with the request's id, carrying the exact token sent;
//! - **refused by outage**: a JSON-RPC error `-32010` (upstream unavailable)
//!   or `-32012` (upstream closed) from the upstream that is being killed;
//! - **other error**: any other JSON-RPC error or tool error (or those two
//!   codes from the upstream that is never killed);
//! - **mismatched**: a response with another id, or with the right id but
//!   another token;
//! - **lost**: no answer (transport error, client timeout), an HTTP status
//!   other than 200, or a body that is not JSON-RPC.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::client::{Answer, Failure};

/// The upstreams calls go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Leg {
    /// The shared stdio upstream (never killed).
    Stdio,
    /// The Streamable HTTP upstream (killed and restarted).
    Http,
}

impl Leg {
    pub fn tool(self) -> &'static str {
        match self {
            Leg::Stdio => "st__echo",
            Leg::Http => "ht__echo",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Leg::Stdio => "stdio",
            Leg::Http => "http",
        }
    }
}

/// The class of one answer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    Refused(i64),
    Other(String),
    Mismatched(&'static str),
    Lost(String),
}

impl Outcome {
    /// The counting key (`lost:transport`, `refused:-32012`, …).
    pub fn key(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Refused(code) => format!("refused:{code}"),
            Outcome::Other(what) => format!("other:{what}"),
            Outcome::Mismatched(what) => format!("mismatched:{what}"),
            Outcome::Lost(what) => format!("lost:{what}"),
        }
    }
}

/// Classifies the answer to `tools/call` id `id` that should echo `token`.
pub fn classify(leg: Leg, answer: Result<Answer, Failure>, id: u64, token: &str) -> (Outcome, Option<String>) {
    let answer = match answer {
        Ok(a) => a,
        Err(Failure::Status(s)) => return (Outcome::Lost(format!("http-{s}")), None),
        Err(e) => return (Outcome::Lost(e.kind().into()), Some(e.to_string())),
    };
    let messages = match answer.messages() {
        Ok(m) => m,
        Err(e) => return (Outcome::Lost("malformed".into()), Some(e.to_string())),
    };
    let is_response = |m: &Value| m.get("result").is_some() || m.get("error").is_some();
    let mut mine = None;
    for m in &messages {
        if !is_response(m) {
            continue; // a notification on the stream
        }
        if m.get("id").and_then(Value::as_u64) == Some(id) && mine.is_none() {
            mine = Some(m);
        } else {
            return (Outcome::Mismatched("wrong-id"), Some(format!("wanted id {id}, got {m}")));
        }
    }
    let Some(m) = mine else {
        return (Outcome::Lost("no-response".into()), Some(Value::Array(messages).to_string()));
    };
    if let Some(error) = m.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let outage = matches!(code, -32010 | -32012);
        return if outage && leg == Leg::Http {
            (Outcome::Refused(code), Some(error.to_string()))
        } else {
            (Outcome::Other(format!("{code}")), Some(error.to_string()))
        };
    }
    let result = &m["result"];
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return (Outcome::Other("tool-error".into()), Some(result.to_string()));
    }
    match result.pointer("/content/0/text").and_then(Value::as_str) {
        Some(t) if t == token => (Outcome::Ok, None),
        Some(_) => (Outcome::Mismatched("wrong-token"), Some(format!("sent {token:?}, got {result}"))),
        None => (Outcome::Lost("malformed".into()), Some(result.to_string())),
    }
}

/// One failed call, kept for the report.
#[derive(Debug, Clone)]
pub struct Incident {
    pub leg: Leg,
    pub outcome: Outcome,
    /// When the call was sent and answered, ms since the start.
    pub sent_ms: u64,
    pub done_ms: u64,
    /// The last kill before the call was answered, ms since the start.
    pub last_kill_ms: Option<u64>,
    pub detail: Option<String>,
}

/// Counts per leg and outcome key, and the incidents worth printing.
#[derive(Default)]
pub struct Tally {
    pub counts: BTreeMap<(Leg, String), u64>,
    /// Refusals of calls sent when the upstream had been up for more than
    /// a second and answered before the next kill: toolgate failing while
    /// the upstream is back.
    pub late_refusals: u64,
    /// Refusals by how long after the last kill they were answered
    /// (upper bound of the bucket in ms).
    pub refusal_delay: BTreeMap<u64, u64>,
    /// Incidents other than refusals (all kept: they must be none).
    pub incidents: Vec<Incident>,
    /// The first few late refusals.
    pub late_examples: Vec<Incident>,
}

impl Tally {
    pub fn add(&mut self, leg: Leg, key: String) {
        *self.counts.entry((leg, key)).or_default() += 1;
    }

    pub fn merge(&mut self, other: Tally) {
        for (k, n) in other.counts {
            *self.counts.entry(k).or_default() += n;
        }
        self.late_refusals += other.late_refusals;
        for (k, n) in other.refusal_delay {
            *self.refusal_delay.entry(k).or_default() += n;
        }
        self.incidents.extend(other.incidents);
        self.late_examples.extend(other.late_examples);
        self.late_examples.truncate(10);
    }

    /// The sum over legs of the outcomes whose key starts with `prefix`.
    pub fn total(&self, prefix: &str) -> u64 {
        self.counts.iter().filter(|((_, k), _)| k.starts_with(prefix)).map(|(_, n)| n).sum()
    }

    /// All answered or failed calls.
    pub fn calls(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// The bucket (upper bound, ms) of a refusal's delay after the kill.
pub fn delay_bucket(ms: u64) -> u64 {
    [10, 100, 500, 1_000, 2_000, 5_000, 10_000, 30_000].into_iter().find(|&b| ms <= b).unwrap_or(u64::MAX)
}
