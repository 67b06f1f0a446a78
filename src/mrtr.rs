//! Multi-round-trip translation for a 2026-07-28 client in front of a
//! handshake-era upstream.
//!
//! The upstream asks for elicitation, sampling or roots mid-call with
//! ordinary server-to-client requests; toolgate keeps that call open
//! ("held"), answers the client's request with an `InputRequiredResult`
//! carrying the questions and a signed `requestState`, and completes the
//! held call with the answers of the client's retry.
//!
//! - [`state`]: the `requestState` toolgate mints (HMAC-signed, bound to the
//!   held call, the request and the client, with an expiry);
//! - [`holds`]: the table of held calls, with its caps and expiry.
//!
//! The gateway drives it (`gateway/mrtr.rs`). The other direction (a client
//! of an older revision in front of a 2026 upstream) is
//! [`upstream::modern::rounds`](crate::upstream::modern::rounds).

pub mod holds;
pub mod state;

use serde_json::json;

use crate::jsonrpc::{ErrorObject, codes};

pub use holds::{HoldId, Holds};
pub use state::{Binding, Codec, StateError, Verified};

/// Why a multi-round-trip request failed before reaching its held call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MrtrError {
    /// The `requestState` is not one toolgate issued, was changed, expired,
    /// was used already, or belongs to another request or client.
    #[error("invalid or expired requestState: {0}")]
    InvalidState(#[from] StateError),
    /// `inputResponses` is not an object of answer objects by key.
    #[error("invalid inputResponses: {0}")]
    MalformedResponses(String),
    /// Too many calls are held for this client, or for everyone.
    #[error("too many calls are waiting for client input ({held} held; the limit is {limit}{whose})")]
    TooManyHeld {
        /// How many are held now.
        held: usize,
        /// The limit reached.
        limit: usize,
        /// `" for this client"` or `""`.
        whose: &'static str,
    },
}

impl MrtrError {
    /// The JSON-RPC error the client gets: `-32602` for what it sent,
    /// `-32014` (a limit, retry later) for a full table.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            MrtrError::InvalidState(why) => ErrorObject::new(codes::INVALID_PARAMS, "invalid or expired requestState")
                .with_data(json!({"reason": why.to_string()})),
            MrtrError::MalformedResponses(_) => ErrorObject::new(codes::INVALID_PARAMS, self.to_string()),
            MrtrError::TooManyHeld { .. } => ErrorObject::new(codes::LIMIT_EXCEEDED, self.to_string()),
        }
    }
}
