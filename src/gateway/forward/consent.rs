//! The consent a call to an OAuth upstream (`auth = "oauth"`) needs before
//! it goes upstream, asked the way the client understands:
//! - a 2025-11-25 client that declared `elicitation.url`: the error
//!   `-32042` (URL elicitation required) with toolgate's consent link; when
//!   the user is back, the session hears `notifications/elicitation/complete`;
//! - a 2026-07-28 client that declared it: an `InputRequiredResult` whose
//!   request is a URL-mode elicitation and whose `requestState` is toolgate's
//!   own (`toolgate-consent:<elicitation id>`); its retry is the same call,
//!   asked again until the user has consented;
//! - any other client: a tool error whose text carries the absolute link and
//!   what the user must do, which the model can show.

use serde_json::{Map, Value, json};

use super::Forwarding;
use crate::jsonrpc::{ErrorObject, Outcome};
use crate::oauth::{Access, Consent};
use crate::protocol::modern::result;
use crate::upstream::UpstreamError;

/// JSON-RPC error of 2025-11-25: a URL-mode elicitation must complete first.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// The `requestState` prefix of a consent toolgate asked for.
const STATE_PREFIX: &str = "toolgate-consent:";
/// The key of the consent among the `inputRequests`.
const INPUT_KEY: &str = "consent";

/// Takes toolgate's own consent retry fields out of `params` (a 2026
/// client's retry of a call that asked for consent): the upstream never
/// sees them.
pub fn strip_retry(params: &mut Value) {
    let ours = params.get(result::REQUEST_STATE).and_then(Value::as_str).is_some_and(|s| s.starts_with(STATE_PREFIX));
    if ours && let Some(object) = params.as_object_mut() {
        object.remove(result::REQUEST_STATE);
        object.remove(result::INPUT_RESPONSES);
    }
}

/// Whether the call may go on to upstream `up`, or the answer asking for
/// consent (or saying why none can be asked).
pub async fn check(
    cx: Forwarding<'_>,
    up: &crate::gateway::upstreams::UpstreamHandle,
    config: &crate::config::UpstreamConfig,
) -> Result<(), Outcome> {
    let principal = cx.session.state.principal();
    let session = (!cx.session.is_sessionless()).then(|| cx.session.id());
    match cx.forwarder.reach.identity.oauth().access(config, &principal, session).await {
        Ok(Access::Ready) => Ok(()),
        Ok(Access::Consent(consent)) => Err(ask(cx, &consent)),
        Err(e) => {
            let error = UpstreamError::Credentials {
                upstream: up.label.clone(),
                source: crate::upstream::Cause::msg(e.to_string()),
            };
            Err(Outcome::error(error.to_error_object()))
        }
    }
}

/// The answer that asks `consent` of the client `cx` is for.
fn ask(cx: Forwarding<'_>, consent: &Consent) -> Outcome {
    let url_mode = cx.session.client_capabilities().pointer("/elicitation/url").is_some();
    let elicitation = json!({
        "mode": "url",
        "elicitationId": consent.elicitation_id,
        "url": consent.url,
        "message": format!("Authorize toolgate to use `{}` on your behalf.", consent.upstream),
    });
    if url_mode && cx.session.is_sessionless() {
        let mut requests = Map::new();
        requests.insert(INPUT_KEY.into(), json!({"method": "elicitation/create", "params": elicitation}));
        return Outcome::Result(json!({
            result::RESULT_TYPE: result::INPUT_REQUIRED,
            result::INPUT_REQUESTS: requests,
            result::REQUEST_STATE: format!("{STATE_PREFIX}{}", consent.elicitation_id),
        }));
    }
    if url_mode {
        let message = format!("This request requires authorizing toolgate for `{}`.", consent.upstream);
        return Outcome::error(
            ErrorObject::new(URL_ELICITATION_REQUIRED, message).with_data(json!({"elicitations": [elicitation]})),
        );
    }
    Outcome::Result(json!({"content": [{"type": "text", "text": consent.message()}], "isError": true}))
}
