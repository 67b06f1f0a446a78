//! Authentication on the HTTP transports: the engine's admission hook
//! ([`Admission`]), the 401 that refuses a request, and the RFC 9728
//! Protected Resource Metadata document.
//!
//! The hook reads only the `Authorization` header, before the transport
//! reads the body. A request it admits carries its [`Principal`] into the
//! engine (as the [`Caller`]'s attachment, whose id is the principal's
//! identity: sessions belong to it). Refusals name the reason (missing,
//! expired, wrong audience…) but never the credential, in the answer or in
//! the log.

use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::Router;
use axum::body::Body;
use axum::response::Response;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

use crate::auth::{AuthError, Authenticator, Principal, protected_resource_metadata, well_known_paths};
use crate::config::JwtConfig;
use crate::jsonrpc::codes;
use crate::server::Caller;
use crate::server::http::Admit;
use crate::server::http::health::{HEALTHZ_PATH, READYZ_PATH};

/// The admission hook of a gateway with credentials configured.
pub struct Admission {
    /// Swapped when a reload changes `[[auth.clients]]`.
    authenticator: Arc<ArcSwap<Authenticator>>,
    /// Who every request is without `[auth]`: made once, not per request.
    anonymous: Caller,
    /// Where the access tokens of JWT clients are kept for token exchange
    /// (when an upstream trades them): the newest one each presented.
    subjects: Option<crate::identity::Subjects>,
}

impl Admission {
    /// A hook that authenticates with `authenticator`.
    pub fn new(authenticator: Arc<ArcSwap<Authenticator>>) -> Self {
        Self { authenticator, anonymous: caller(Principal::anonymous()), subjects: None }
    }

    /// This hook, keeping each JWT client's newest access token in `subjects`.
    pub fn keeping_tokens(mut self, subjects: Option<crate::identity::Subjects>) -> Self {
        self.subjects = subjects;
        self
    }
}

impl Admit for Admission {
    fn admit<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Response>> {
        // One snapshot decides and authenticates, even across a reload.
        let authenticator = self.authenticator.load_full();
        if !authenticator.is_enabled() {
            return Box::pin(std::future::ready(Ok(self.anonymous.clone())));
        }
        Box::pin(async move {
            match authenticator.authenticate_headers(headers).await {
                Ok(principal) => {
                    if let Some(subjects) = &self.subjects {
                        subjects.note(&principal);
                    }
                    Ok(caller(principal))
                }
                Err(error) => Err(refusal(&authenticator, &error)),
            }
        })
    }
}

/// The engine's view of a principal: its identity (`alice`, `jwt:user-1`)
/// and the principal itself for the gateway to take back at `initialize`.
pub fn caller(principal: Principal) -> Caller {
    Caller::new(principal.id().to_string(), Arc::new(principal))
}

/// The answer refusing an unauthenticated request: 401 with the
/// `WWW-Authenticate: Bearer …` challenge (503 when the issuer's keys could
/// not be loaded), and a JSON-RPC error body without an id.
pub fn refusal(authenticator: &Authenticator, error: &AuthError) -> Response {
    match error {
        AuthError::Missing => tracing::debug!("request refused: no credentials"),
        AuthError::KeysUnavailable => tracing::warn!(reason = %error, "request refused: the JWT cannot be checked"),
        _ => tracing::info!(reason = %error, "request refused: invalid credentials"),
    }
    let status = error.status();
    let message = match status {
        StatusCode::UNAUTHORIZED => format!("Unauthorized: {error}"),
        _ => format!("Service Unavailable: {error}"),
    };
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": codes::SERVER_ERROR, "message": message}});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if status == StatusCode::UNAUTHORIZED {
        // The challenge is built from configuration and fixed texts only, so
        // it is always a valid header value.
        if let Ok(challenge) = HeaderValue::from_str(&authenticator.challenge(error)) {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
    }
    response
}

/// `GET` routes serving the metadata document at
/// `/.well-known/oauth-protected-resource`, and at that path followed by the
/// public URL's path and by `server.path` (RFC 9728 §3.1). They need no
/// credentials, like the health routes.
pub fn metadata_routes(jwt: &JwtConfig, server_path: &str) -> Router {
    let document = Arc::new(protected_resource_metadata(jwt).to_string());
    let mut router = Router::new();
    let taken = [server_path, HEALTHZ_PATH, READYZ_PATH];
    for path in well_known_paths(jwt.resource().unwrap_or_default(), server_path) {
        if taken.contains(&path.as_str()) {
            continue;
        }
        let document = document.clone();
        router = router.route(
            &path,
            axum::routing::get(move || {
                let document = document.clone();
                async move {
                    let mut response = Response::new(Body::from(document.as_str().to_owned()));
                    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    response
                }
            }),
        );
    }
    router
}

/// `GET /.well-known/jwks.json`: the public keys of toolgate's identity
/// assertions (`[identity] signing_keys`), for upstreams to verify them. No
/// credential is needed, but the `Host`/`Origin` checks apply as on the MCP
/// endpoint.
pub fn jwks_routes(jwks: bytes::Bytes, guard: crate::server::http::Guard) -> Router {
    let serve = move |request: axum::extract::Request| {
        let (jwks, checked) = (jwks.clone(), guard.check(request.headers(), request.uri()));
        async move {
            if let Err(why) = checked {
                tracing::warn!(%why, "JWKS request refused (DNS-rebinding protection)");
                let mut response = Response::new(Body::from(format!("Forbidden: {why}\n")));
                *response.status_mut() = StatusCode::FORBIDDEN;
                return response;
            }
            let mut response = Response::new(Body::from(jwks));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jwk-set+json"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
            response
        }
    };
    Router::new().route(JWKS_PATH, axum::routing::get(serve))
}

/// Where the JWK Set of toolgate's identity assertions is served.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
