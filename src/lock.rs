//! Approved tool definitions: the lockfile (`toolgate lock`), and what the
//! gateway serves when an upstream's definitions drift from it.
//!
//! A lockfile holds, per upstream and tool (by the upstream's own name),
//! the full `Tool` object as it was approved and its digest: `sha256:` and
//! the SHA-256 of its canonical JSON (RFC 8785), over the whole object,
//! `_meta` included, as SEP-2636's tool manifests digest a tool. It is
//! pretty-printed JSON with sorted keys, one tool per entry, so that a
//! change reads as a small diff in review.
//!
//! Against a lock, each tool an upstream lists now is ([`drift`]):
//! - the same (its digest is the approved one): served as it is;
//! - **changed**: under `on_drift = "hold"` the *approved* definition is
//!   served (listed, described, searched); a call is refused while its
//!   `inputSchema` differs from the approved one. Under `"warn"` the
//!   current one is served;
//! - **new**: not served under `"hold"` until approved; reported as
//!   **renamed** when its definition, name aside, is one the upstream no
//!   longer lists;
//! - gone: it disappears, as without a lock.

pub mod cli;
pub mod diff;
pub mod drift;
mod file;

pub use drift::{Drift, DriftKind, OnDrift, Served, compare, serve};
pub use file::{LockError, LockedTool, LockedUpstream, Lockfile, digest};

/// The `tools/call` result refusing a call of `tool` (its exposed name)
/// held by the lock: a tool error, so the model reads why.
pub fn held_call(tool: &str) -> serde_json::Value {
    let text = format!(
        "This tool's definition changed upstream and awaits approval: `{tool}` now takes other arguments than the \
         definition that was reviewed, so calls are held until an operator approves the change (`toolgate lock \
         --approve`). Do not retry; continue without this tool or tell the user."
    );
    serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": {"dev.toolgate/lock": {"held": true, "tool": tool}},
    })
}

#[cfg(test)]
mod tests;
