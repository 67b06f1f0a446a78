//! The `requestState` toolgate mints for a held call:
//!
//! ```text
//! base64url(payload) "." base64url(HMAC-SHA256(key, "toolgate.requestState.v1:" + payload))
//! ```
//!
//! The payload (JSON) names the held call (a random 128-bit id), this
//! replica, the expiry, and what it is bound to ([`Binding`]: the upstream,
//! the method, the tool, prompt or resource name, a digest of the request's
//! params, and the client). Nothing in it is secret, so it is signed, not
//! encrypted. The key is `[mrtr] key`, which every replica shares, so any
//! replica verifies any replica's state and can pass a retry to the replica
//! named in it (the held call lives there); without one it is random per
//! process, and a state is only good on the replica that issued it.
//! Single use is the hold table's business ([`super::holds`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::{digest, hmac, rand};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::modern::{method::name_param, result};

/// What the MAC covers before the payload: a state of another format or
/// purpose never verifies as this one.
const CONTEXT: &[u8] = b"toolgate.requestState.v1:";
/// The payload format.
const VERSION: u8 = 1;

/// Why a `requestState` was refused (each is `-32602` to the client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not of toolgate's format.
    #[error("not a requestState toolgate issued")]
    Malformed,
    /// The signature does not match: it was changed.
    #[error("its integrity check failed")]
    Tampered,
    /// Issued by another toolgate replica (or before a restart).
    #[error("it was issued by another toolgate replica or before a restart")]
    OtherReplica,
    /// Issued by another toolgate replica, which is gone or did not answer
    /// in time: its held call ended with it.
    #[error("the toolgate replica holding its call is gone or did not answer; its call is no longer held")]
    ReplicaGone,
    /// Past its expiry.
    #[error("it expired")]
    Expired,
    /// Issued to another client.
    #[error("it was issued to another client")]
    OtherClient,
    /// Issued for another request (method, name, arguments or upstream).
    #[error("it was issued for another request")]
    OtherRequest,
    /// Its held call is gone: answered already (a state is single use),
    /// expired, or dropped.
    #[error("it was used already or its call is no longer held")]
    NotHeld,
}

/// What a state is bound to: the request it answers and the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The upstream holding the call.
    #[serde(rename = "u")]
    pub upstream: String,
    /// The request's method.
    #[serde(rename = "m")]
    pub method: String,
    /// The tool or prompt name, or the resource URI (empty for other methods).
    #[serde(rename = "n")]
    pub name: String,
    /// base64url SHA-256 of the request's params, canonical (keys sorted),
    /// without `_meta`, `inputResponses` and `requestState`.
    #[serde(rename = "d")]
    pub digest: String,
    /// Whose: the client's grant scope.
    #[serde(rename = "p")]
    pub principal: String,
}

impl Binding {
    /// The binding of a request of `method` with `params` to `upstream`, for
    /// `principal`.
    pub fn of(upstream: &str, method: &str, params: Option<&Value>, principal: &str) -> Self {
        let name = name_param(method).and_then(|key| params?.get(key)?.as_str()).unwrap_or_default().to_owned();
        let mut salient = params.cloned().unwrap_or(Value::Null);
        if let Value::Object(p) = &mut salient {
            for key in ["_meta", result::INPUT_RESPONSES, result::REQUEST_STATE] {
                p.remove(key);
            }
        }
        let mut canonical = String::new();
        write_canonical(&salient, &mut canonical);
        let digest = B64.encode(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref());
        Self { upstream: upstream.to_owned(), method: method.to_owned(), name, digest, principal: principal.to_owned() }
    }
}

/// `value` as JSON with every object's keys sorted (arguments that differ
/// only in key order are the same request).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    v: u8,
    /// The held call.
    h: String,
    /// The replica that holds it.
    r: String,
    /// Expiry, in milliseconds since the Unix epoch.
    e: u64,
    #[serde(flatten)]
    binding: Binding,
}

/// A state whose signature, expiry, client and request check out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The held call it names.
    pub hold: String,
    /// The replica that holds it.
    pub replica: String,
}

/// Signs and verifies states with the shared key or this process's own.
pub struct Codec {
    key: hmac::Key,
    replica: String,
}

impl Codec {
    /// A codec with a fresh random key and replica id.
    pub fn random() -> Self {
        let rng = rand::SystemRandom::new();
        // The system's random source failing is not something to run on.
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).unwrap_or_else(|_| {
            tracing::error!("no system randomness for the requestState key; using a time-derived one");
            hmac::Key::new(hmac::HMAC_SHA256, &now_ms(SystemTime::now()).to_le_bytes())
        });
        let mut id = [0u8; 8];
        let _ = rand::fill(&mut id);
        Self { key, replica: B64.encode(id) }
    }

    /// A codec with `key` (`[mrtr] key`) and a fresh random replica id.
    pub fn keyed(key: &[u8]) -> Self {
        let mut codec = Self::random();
        codec.key = hmac::Key::new(hmac::HMAC_SHA256, key);
        codec
    }

    /// This codec, naming `replica` in its states (with shared sessions:
    /// the replica's tag, which is also its channel on the bus).
    pub fn naming(mut self, replica: &str) -> Self {
        replica.clone_into(&mut self.replica);
        self
    }

    /// A codec with a given key (a test's) and replica id.
    #[cfg(test)]
    pub fn with_key(key: &[u8], replica: &str) -> Self {
        Self { key: hmac::Key::new(hmac::HMAC_SHA256, key), replica: replica.to_owned() }
    }

    /// The state of held call `hold`, bound to `binding`, valid until `expires`.
    pub fn sign(&self, hold: &str, binding: &Binding, expires: SystemTime) -> String {
        let payload = Payload {
            v: VERSION,
            h: hold.to_owned(),
            r: self.replica.clone(),
            e: now_ms(expires),
            binding: binding.clone(),
        };
        let json = serde_json::to_vec(&payload).unwrap_or_default();
        let tag = hmac::sign(&self.key, &[CONTEXT, &json].concat());
        format!("{}.{}", B64.encode(&json), B64.encode(tag.as_ref()))
    }

    /// Whether `token` is a state this codec signed (valid signature; no
    /// other check).
    pub fn is_own(&self, token: &str) -> bool {
        self.authentic(token).is_ok()
    }

    /// The held call `token` names, once its signature, replica, expiry,
    /// client and request all check out against `expected` at `now`.
    pub fn verify(&self, token: &str, expected: &Binding, now: SystemTime) -> Result<String, StateError> {
        let verified = self.check(token, expected, now)?;
        if verified.replica != self.replica {
            return Err(StateError::OtherReplica);
        }
        Ok(verified.hold)
    }

    /// This codec's replica id (what its states name).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The held call `token` names and the replica holding it, once its
    /// signature, expiry, client and request check out against `expected`
    /// at `now` (whichever replica issued it: with a shared key, any).
    pub fn check(&self, token: &str, expected: &Binding, now: SystemTime) -> Result<Verified, StateError> {
        let payload = self.authentic(token)?;
        if now_ms(now) >= payload.e {
            return Err(StateError::Expired);
        }
        if payload.binding.principal != expected.principal {
            return Err(StateError::OtherClient);
        }
        if payload.binding != *expected {
            return Err(StateError::OtherRequest);
        }
        Ok(Verified { hold: payload.h, replica: payload.r })
    }

    /// The payload of a state whose signature verifies (in constant time).
    fn authentic(&self, token: &str) -> Result<Payload, StateError> {
        let (payload, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let payload = B64.decode(payload).map_err(|_| StateError::Malformed)?;
        let tag = B64.decode(tag).map_err(|_| StateError::Malformed)?;
        hmac::verify(&self.key, &[CONTEXT, &payload].concat(), &tag).map_err(|_| StateError::Tampered)?;
        let payload: Payload = serde_json::from_slice(&payload).map_err(|_| StateError::Malformed)?;
        if payload.v != VERSION {
            return Err(StateError::Malformed);
        }
        Ok(payload)
    }
}

fn now_ms(t: SystemTime) -> u64 {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
