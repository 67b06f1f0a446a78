//! Admission: the hook that decides who a request comes from before the
//! transport reads its body, and refuses it when it cannot tell.
//!
//! Every request to the MCP endpoint (`POST`, `GET`, `DELETE`) and to the
//! legacy endpoints (`GET /sse`, `POST /messages`) is admitted after the
//! `Host`/`Origin` check and before anything else. The application provides
//! the hook ([`HttpOptions::admit`](super::HttpOptions)); without one every
//! request is [`Caller::anonymous`]. The `Authorization` header is marked
//! sensitive first, so no `Debug` output of the request's headers shows it.

use std::fmt;

use axum::response::Response;
use futures::future::BoxFuture;
use http::HeaderMap;
use http::header::{AUTHORIZATION, Entry};

use crate::server::caller::Caller;

/// Maps a request's headers to its [`Caller`], or to the finished response
/// that refuses it (e.g. a 401 with its `WWW-Authenticate` challenge).
pub trait Admit: Send + Sync + 'static {
    /// Decides who sent a request with `headers`.
    fn admit<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Response>>;
}

impl fmt::Debug for dyn Admit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Admit")
    }
}

/// Runs `admit` (if any) on a request's headers, after marking its
/// credentials sensitive.
pub(super) async fn admit(hook: Option<&dyn Admit>, headers: &mut HeaderMap) -> Result<Caller, Response> {
    // Looked up first: `entry` makes room for the header even when it is absent.
    if headers.contains_key(AUTHORIZATION)
        && let Entry::Occupied(mut values) = headers.entry(AUTHORIZATION)
    {
        values.iter_mut().for_each(|v| v.set_sensitive(true));
    }
    match hook {
        None => Ok(Caller::anonymous()),
        Some(hook) => hook.admit(headers).await,
    }
}
