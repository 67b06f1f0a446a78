//! Where an upstream lives, resolved once from its configuration into the
//! MCP client's [`Target`]: the program to run, or the parsed URL and
//! headers to send. Validation reports the same errors
//! ([`UpstreamConfig::target`] is what it checks), so a loaded configuration
//! always resolves, and nothing is parsed again when toolgate connects.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use toolgate_mcp::client::{EraChoice, HttpTarget, StdioTarget, Target};

use super::{HttpTransport, UpstreamConfig, UpstreamProtocol};

/// Why an upstream's configuration does not name a usable target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("needs `command` (a stdio server) or `url` (an HTTP server)")]
    Missing,
    #[error("has both `command` and `url`: use `command` for a stdio server or `url` for an HTTP server, not both")]
    Both,
    #[error("`{url}` is not a valid URL")]
    BadUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
    #[error("`{0}` must be an http:// or https:// URL")]
    NotHttp(String),
    #[error("invalid HTTP header name")]
    BadHeaderName {
        name: String,
        #[source]
        source: http::header::InvalidHeaderName,
    },
    /// The value is not echoed: headers usually carry credentials.
    #[error("invalid HTTP header value (control characters such as newlines are not allowed)")]
    BadHeaderValue {
        name: String,
        #[source]
        source: http::header::InvalidHeaderValue,
    },
}

impl TargetError {
    /// The key under `[[upstream]]` the error is about, for its TOML path.
    pub fn key(&self) -> Vec<&str> {
        match self {
            TargetError::Missing | TargetError::Both => Vec::new(),
            TargetError::BadUrl { .. } | TargetError::NotHttp(_) => vec!["url"],
            TargetError::BadHeaderName { name, .. } | TargetError::BadHeaderValue { name, .. } => {
                vec!["headers", name]
            }
        }
    }
}

impl UpstreamConfig {
    /// Resolves where this upstream lives. Every problem in `url` and
    /// `headers` is reported, not just the first.
    pub fn target(&self) -> Result<Target, Vec<TargetError>> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(vec![TargetError::Both]),
            (None, None) => Err(vec![TargetError::Missing]),
            (Some(program), None) => Ok(Target::Stdio(Arc::new(StdioTarget {
                program: program.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                inherit_env: self.inherit_env,
                cwd: self.cwd.clone(),
                max_message_bytes: self.max_message_bytes,
            }))),
            (None, Some(url)) => {
                let mut errors = Vec::new();
                let parsed = match url::Url::parse(url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
                    Ok(_) => {
                        errors.push(TargetError::NotHttp(url.clone()));
                        None
                    }
                    Err(source) => {
                        errors.push(TargetError::BadUrl { url: url.clone(), source });
                        None
                    }
                };
                let mut headers = HeaderMap::new();
                for (name, value) in &self.headers {
                    let header = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|source| TargetError::BadHeaderName { name: name.clone(), source });
                    let value = HeaderValue::from_str(value)
                        .map_err(|source| TargetError::BadHeaderValue { name: name.clone(), source });
                    match (header, value) {
                        (Ok(header), Ok(mut value)) => {
                            value.set_sensitive(true);
                            headers.insert(header, value);
                        }
                        (header, value) => errors.extend(header.err().into_iter().chain(value.err())),
                    }
                }
                match parsed {
                    Some(url) if errors.is_empty() => {
                        let target = Arc::new(HttpTarget {
                            url,
                            headers,
                            max_message_bytes: self.max_message_bytes,
                            credentials: None,
                        });
                        Ok(match self.transport {
                            HttpTransport::StreamableHttp => Target::StreamableHttp(target),
                            HttpTransport::Sse => Target::Sse(target),
                        })
                    }
                    _ => Err(errors),
                }
            }
        }
    }
}

impl From<UpstreamProtocol> for EraChoice {
    fn from(protocol: UpstreamProtocol) -> Self {
        match protocol {
            UpstreamProtocol::Auto => EraChoice::Auto,
            UpstreamProtocol::Modern => EraChoice::Modern,
            UpstreamProtocol::Legacy => EraChoice::Legacy,
        }
    }
}
