//! DNS-rebinding protection: `Host` and `Origin` validation.
//!
//! MCP servers MUST validate `Origin` (403 when present and invalid). toolgate
//! also checks `Host`, which is what actually stops a rebound DNS name from
//! reaching a loopback listener.

use http::{HeaderMap, Uri, header};

/// Host names that mean "this machine".
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Why a request's `Host` or `Origin` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("missing Host header")]
    MissingHost,
    #[error("Host '{0}' is not allowed")]
    Host(String),
    #[error("Origin header is not valid text")]
    OriginNotText,
    #[error("Origin '{0}' is not allowed")]
    Origin(String),
}

/// Accepted `Host` and `Origin` values.
#[derive(Debug, Clone)]
pub struct Guard {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl Guard {
    /// A guard from the configured allowlists; empty lists mean loopback only.
    pub fn new(allowed_hosts: &[String], allowed_origins: &[String]) -> Self {
        let norm = |v: &[String]| v.iter().map(|s| s.trim().trim_end_matches('/').to_ascii_lowercase()).collect();
        Self { hosts: norm(allowed_hosts), origins: norm(allowed_origins) }
    }

    /// Checks a request's `Host` (or HTTP/2 authority) and `Origin`.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refused> {
        // One walk finds both (the first value of each, as a lookup would):
        // each lookup hashes its name, and a request has a handful of
        // headers, checked on every request.
        let (mut host, mut origin) = (None, None);
        for (name, value) in headers {
            let slot = match name {
                n if n == header::HOST => &mut host,
                n if n == header::ORIGIN => &mut origin,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        let host = host
            .and_then(|h| h.to_str().ok())
            .or_else(|| uri.authority().map(|a| a.as_str()))
            .ok_or(Refused::MissingHost)?;
        if !self.host_allowed(host) {
            return Err(Refused::Host(host.to_owned()));
        }
        if let Some(origin) = origin {
            let origin = origin.to_str().map_err(|_| Refused::OriginNotText)?;
            if !self.origin_allowed(origin) {
                return Err(Refused::Origin(origin.to_owned()));
            }
        }
        Ok(())
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let authority = lowercase(authority.trim());
        let authority = authority.as_ref();
        let name = host_name(authority);
        if self.hosts.is_empty() {
            return LOOPBACK_HOSTS.contains(&name);
        }
        self.hosts.iter().any(|h| h == "*" || *h == authority || h == name)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = lowercase(origin.trim().trim_end_matches('/'));
        let origin = origin.as_ref();
        if self.origins.is_empty() {
            let Some((scheme, rest)) = origin.split_once("://") else { return false };
            return matches!(scheme, "http" | "https") && LOOPBACK_HOSTS.contains(&host_name(rest));
        }
        self.origins.iter().any(|o| o == "*" || *o == origin)
    }
}

/// `text` in ASCII lower case, copied only when it has an upper-case letter
/// (clients send `Host` and `Origin` in lower case: checked on every request).
fn lowercase(text: &str) -> std::borrow::Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(text.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The host part of `host[:port]`, keeping IPv6 brackets.
fn host_name(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    // A byte search: `split(':')` sets up a char searcher, a visible cost
    // on a check made for every request.
    match authority.bytes().position(|b| b == b':') {
        Some(colon) => &authority[..colon],
        None => authority,
    }
}

#[cfg(test)]
mod tests;
