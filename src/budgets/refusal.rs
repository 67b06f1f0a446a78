//! The answer to a call over a budget: a tool error (`isError: true`), not
//! a protocol error, so an agent reads it and adapts instead of failing.
//! The text says which limit, when it resets and what to do; `_meta`
//! carries the same facts for programs.

use serde_json::{Value, json};

use super::{Exceeded, Limit};

/// The `_meta` key of the refusal's facts.
pub const META_KEY: &str = "dev.toolgate/limit";

/// The `tools/call` result refusing a call of `tool` by `client`.
pub fn result(tool: &str, client: &str, exceeded: &Exceeded) -> Value {
    let seconds = retry_seconds(exceeded);
    let at = humantime::format_rfc3339_seconds(exceeded.resets_at()).to_string();
    let what = match exceeded.limit {
        Limit::PerMinute => format!("at most {} calls of `{tool}` per minute", exceeded.max),
        Limit::PerDay => format!("at most {} calls of `{tool}` per day (UTC)", exceeded.max),
        Limit::WritePerMinute => {
            format!("at most {} calls per minute of `{tool}`, which may change data", exceeded.max)
        }
        Limit::IdenticalCalls => format!(
            "at most {} identical calls of `{tool}` (same arguments) within {}",
            exceeded.max,
            humantime::format_duration(exceeded.window.unwrap_or_default())
        ),
    };
    let advice = match exceeded.limit {
        Limit::IdenticalCalls => {
            "Do not repeat this call with the same arguments: use the result you already have, change the \
             arguments, or ask the user."
        }
        Limit::PerDay => "Do not retry today; tell the user the daily limit is reached, or do the task another way.",
        _ => "Wait before calling this tool again, or continue with other work meanwhile.",
    };
    let text = format!(
        "Limit reached ({}): client `{client}` may make {what}. It resets in {seconds} s (at {at}). {advice}",
        exceeded.limit.as_str()
    );
    json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": {META_KEY: {
            "limit": exceeded.limit.as_str(),
            "max": exceeded.max,
            "tools": &*exceeded.tools,
            "retryAfter": seconds,
            "resetsAt": at,
        }},
    })
}

/// The wait in whole seconds, rounded up, at least 1.
fn retry_seconds(exceeded: &Exceeded) -> u64 {
    let wait = exceeded.retry_after;
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}
