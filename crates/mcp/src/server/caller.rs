//! [`Caller`]: who a request comes from, as the application's admission hook
//! ([`Admit`](super::http::Admit)) decided before the transport read the body.
//!
//! The engine only needs an identity to compare: a session belongs to the
//! caller that initialized it, and a request naming it with another caller's
//! credentials is answered as if the session did not exist. What the
//! application knows about the caller (the gateway's principal and its
//! policy) rides along type-erased and is handed back to the application at
//! `initialize` ([`InitContext::caller`](super::InitContext)); the engine never looks
//! inside. That keeps the engine free of any dependency on the application,
//! and keeps [`HttpOptions`](super::http::HttpOptions), [`Session`](super::Session) and every
//! other handler (the demo, the fixture) free of a type parameter they
//! would never use.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The id of [`Caller::anonymous`].
pub const ANONYMOUS: &str = "anonymous";

/// Who a request comes from. Cheap to clone.
#[derive(Clone)]
pub struct Caller {
    id: Arc<str>,
    principal: Option<Arc<dyn Any + Send + Sync>>,
}

impl Caller {
    /// A caller identified by `id` (two requests come from the same caller
    /// exactly when their ids are equal), with the application's own
    /// description of it.
    pub fn new(id: impl Into<Arc<str>>, principal: Arc<dyn Any + Send + Sync>) -> Self {
        Self { id: id.into(), principal: Some(principal) }
    }

    /// The caller of a transport without authentication (stdio, or HTTP
    /// without an admission hook): id `anonymous`, nothing attached.
    pub fn anonymous() -> Self {
        static ID: OnceLock<Arc<str>> = OnceLock::new();
        Self { id: ID.get_or_init(|| Arc::from(ANONYMOUS)).clone(), principal: None }
    }

    /// Its identity, for session ownership and logs. Never a credential.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What the application attached, if it is a `T`.
    pub fn principal<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.principal.as_deref()?.downcast_ref()
    }

    /// Whether `other` is the same caller.
    pub fn same_as(&self, other: &Caller) -> bool {
        self.id == other.id
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Caller({})", self.id)
    }
}

#[cfg(test)]
mod tests;
