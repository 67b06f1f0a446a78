//! What a reload changes: the upstreams added, removed and changed (by
//! name), the clients' policies, and the sections that changed but only
//! take effect after a restart. Pure functions of the running and the new configuration.

use std::fmt;

use crate::config::{Config, UpstreamConfig};

#[cfg(test)]
mod tests;

/// The difference between the running configuration and a new one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Upstreams in the new configuration only (they start).
    pub added: Vec<String>,
    /// Upstreams in the running configuration only (they stop).
    pub removed: Vec<String>,
    /// Upstreams whose settings differ (they restart with the new ones).
    pub changed: Vec<String>,
    /// `[[auth.clients]]` changed (keys, policies), the rest of `[auth]` not:
    /// running sessions get their client's new policy.
    pub clients: bool,
    /// Sections that differ but are kept as they are until a restart.
    pub needs_restart: Vec<&'static str>,
}

impl Changes {
    /// Whether the reload changes nothing that applies now.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty() && !self.clients
    }

    /// Whether upstream `name` gets a new connection (added or changed).
    pub fn starts(&self, name: &str) -> bool {
        self.added.iter().chain(&self.changed).any(|n| n == name)
    }
}

impl fmt::Display for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (what, names) in [("added", &self.added), ("removed", &self.removed), ("restarted", &self.changed)] {
            if !names.is_empty() {
                parts.push(format!("upstreams {what}: {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            parts.push("no upstream changed".to_owned());
        }
        if self.clients {
            parts.push("client policies changed".to_owned());
        }
        if !self.needs_restart.is_empty() {
            parts.push(format!("changed but kept until a restart: [{}]", self.needs_restart.join("], [")));
        }
        f.write_str(&parts.join("; "))
    }
}

/// Sections that cannot change under a running gateway: the listener and
/// its limits (`[server]`), how clients authenticate (`[auth]` but its
/// `[[auth.clients]]`: `[auth.jwt]`, `allow_anonymous`, and whether any
/// credential is configured at all, which decides the routes), the metrics
/// listener (`[metrics]`), the trace exporter (`[tracing]`),
/// `[disclosure]` (the shape of every served catalog and the answer cache),
/// `[state]`, `[mrtr]` (the held-call table's limits) and `[[concerns]]`
/// (what sessions were told at `initialize`; the upstreams' and clients'
/// concern values reload with them), and `[oauth]` (the public URL registered at authorization
/// servers).
pub const RESTART_ONLY: [&str; 12] = [
    "server",
    "auth",
    "metrics",
    "tracing",
    "disclosure",
    "state",
    "mrtr",
    "concerns",
    "limits",
    "audit",
    "identity",
    "oauth",
];

/// What changes from `old` to `new`.
pub fn diff(old: &Config, new: &Config) -> Changes {
    let find = |list: &[UpstreamConfig], name: &str| list.iter().position(|u| u.name == name);
    let mut changes = Changes::default();
    for up in &new.upstreams {
        match find(&old.upstreams, &up.name) {
            None => changes.added.push(up.name.clone()),
            Some(i) if old.upstreams[i] != *up => changes.changed.push(up.name.clone()),
            Some(_) => {}
        }
    }
    changes.removed =
        old.upstreams.iter().filter(|u| find(&new.upstreams, &u.name).is_none()).map(|u| u.name.clone()).collect();
    let sections = [
        old.server != new.server,
        old.auth.jwt != new.auth.jwt
            || old.auth.allow_anonymous != new.auth.allow_anonymous
            || old.auth.is_enabled() != new.auth.is_enabled(),
        old.metrics != new.metrics,
        old.tracing != new.tracing,
        old.disclosure != new.disclosure,
        old.state != new.state,
        old.mrtr != new.mrtr,
        old.concerns != new.concerns,
        old.limits != new.limits,
        old.audit != new.audit,
        old.identity != new.identity,
        old.oauth != new.oauth,
    ];
    changes.needs_restart =
        RESTART_ONLY.iter().zip(sections).filter(|(_, changed)| *changed).map(|(s, _)| *s).collect();
    changes.clients = !changes.needs_restart.contains(&"auth") && old.auth.clients != new.auth.clients;
    changes
}

/// The configuration a reload puts in effect: `new`'s upstreams (and
/// clients, unless the rest of `[auth]` changed too), with the
/// [`RESTART_ONLY`] sections as they run now.
pub fn effective(old: &Config, new: Config) -> Config {
    let keeps_auth = diff(old, &new).needs_restart.contains(&"auth");
    Config {
        upstreams: new.upstreams,
        server: old.server.clone(),
        auth: if keeps_auth { old.auth.clone() } else { new.auth },
        metrics: old.metrics.clone(),
        tracing: old.tracing.clone(),
        disclosure: old.disclosure.clone(),
        state: old.state.clone(),
        mrtr: old.mrtr.clone(),
        concerns: old.concerns.clone(),
        limits: old.limits.clone(),
        audit: old.audit.clone(),
        identity: old.identity.clone(),
        oauth: old.oauth.clone(),
    }
}
