//! Configuration: the typed model, loading (TOML file, then `TOOLGATE_*`
//! environment overrides, then `${VAR}` expansion) and validation.

mod audit;
mod auth;
mod concerns;
mod expand;
mod identity;
mod limits;
mod load;
mod model;
mod mrtr;
mod oauth;
mod observability;
mod path;
mod schema;
mod state;
mod target;
mod validate;

pub use audit::{AuditArguments, AuditConfig};
pub use auth::{AuthConfig, ClientConfig, DEFAULT_CLIENT, JwtConfig, Secret, compile_glob, sha256};
pub use concerns::{ConcernConfig, ConcernValues};
pub use identity::{ClientAuth, IdentityConfig, IdentityMode, MAX_ASSERTION_LIFETIME, UpstreamIdentity};
pub use limits::{IdenticalCalls, LimitDefaults, ToolLimit, defaults_of as limit_defaults};
pub use load::{ConfigError, load, load_str, load_str_in};
#[cfg(test)]
pub(crate) use load::{in_jail, load_str_jailed};
pub use model::*;
pub use mrtr::MrtrConfig;
pub use oauth::{OAuthCatalog, OAuthConfig, UpstreamAuth, UpstreamOAuth};
pub use observability::{MetricsConfig, OTEL_BUILT, TracingConfig};
pub use schema::{schema, schema_json};
pub use state::{DEFAULT_KEY_PREFIX, DEFAULT_SESSION_PREFIX, SessionSharing, StateConfig};
pub use target::TargetError;
pub use toolgate_mcp::client::{HttpTarget, StdioTarget, Target};
pub use validate::Problem;
