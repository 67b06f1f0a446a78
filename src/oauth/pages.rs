//! The public OAuth routes: `/oauth/start/<opaque>` (the consent link,
//! which redirects to the authorization server), `/oauth/callback` (where
//! the server sends the browser back, ending on a small page that says what
//! happened) and `/oauth/client.json` (the Client ID Metadata Document).
//! They need no credential, since a browser has none, but pass the same
//! `Host`/`Origin` guard as the MCP endpoint.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::{CALLBACK_PATH, CLIENT_DOCUMENT_PATH, CallbackQuery, OAuth, PageError, START_PATH};
use crate::config::UpstreamConfig;
use crate::server::http::Guard;

/// The cookie that binds a flow to the browser that started it.
const COOKIE: &str = "toolgate_oauth";

/// The upstreams as configured now (a reload changes them).
pub type Upstreams = Arc<dyn Fn() -> Arc<[UpstreamConfig]> + Send + Sync>;

/// The routes of `oauth`.
pub fn routes(oauth: OAuth, upstreams: Upstreams, guard: Guard) -> Router {
    let start = {
        let (oauth, upstreams, guard) = (oauth.clone(), upstreams.clone(), guard.clone());
        move |Path(opaque): Path<String>, request: Request| {
            let (oauth, upstreams, checked) =
                (oauth.clone(), upstreams(), guard.check(request.headers(), request.uri()));
            async move {
                if let Err(why) = checked {
                    return page(StatusCode::FORBIDDEN, "Forbidden", &why.to_string());
                }
                match oauth.start(&opaque, &upstreams).await {
                    Ok((to, browser)) => redirect(&to, &cookie(&oauth, &browser)),
                    Err(e) => failure(&e),
                }
            }
        }
    };
    let callback = {
        let (oauth, guard) = (oauth.clone(), guard.clone());
        move |query: Result<Query<CallbackQuery>, axum::extract::rejection::QueryRejection>, request: Request| {
            let (oauth, upstreams, checked) =
                (oauth.clone(), upstreams(), guard.check(request.headers(), request.uri()));
            let browser = browser_cookie(request.headers());
            async move {
                if let Err(why) = checked {
                    return page(StatusCode::FORBIDDEN, "Forbidden", &why.to_string());
                }
                let query = query.map(|Query(q)| q).unwrap_or_default();
                match oauth.callback(&query, browser.as_deref(), &upstreams).await {
                    Ok(done) => {
                        let text = format!(
                            "toolgate may now use `{}` on your behalf. You can close this window and go back to your \
                             agent: the call works when it is made again.",
                            done.upstream
                        );
                        let mut response = page(StatusCode::OK, "Authorization complete", &text);
                        let expired = format!("{COOKIE}=; Path=/oauth; Max-Age=0; HttpOnly; SameSite=Lax");
                        if let Ok(value) = HeaderValue::from_str(&expired) {
                            response.headers_mut().insert(header::SET_COOKIE, value);
                        }
                        response
                    }
                    Err(e) => failure(&e),
                }
            }
        }
    };
    let document = move || {
        let doc = oauth.client_document();
        async move {
            match doc {
                Some(doc) => {
                    let mut response = Response::new(Body::from(doc.to_string()));
                    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    response
                }
                None => page(StatusCode::NOT_FOUND, "Not found", "toolgate's public URL is not https://"),
            }
        }
    };
    Router::new()
        .route(&format!("{START_PATH}/{{opaque}}"), axum::routing::get(start))
        .route(CALLBACK_PATH, axum::routing::get(callback))
        .route(CLIENT_DOCUMENT_PATH, axum::routing::get(document))
}

fn cookie(oauth: &OAuth, browser: &str) -> String {
    let secure = if oauth.base().starts_with("https://") { "; Secure" } else { "" };
    let age = oauth.inner.flow_lifetime.as_secs();
    format!("{COOKIE}={browser}; Path=/oauth; Max-Age={age}; HttpOnly; SameSite=Lax{secure}")
}

/// The flow cookie's value, if the browser sent it.
fn browser_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

fn redirect(to: &str, cookie: &str) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(to) {
        headers.insert(header::LOCATION, location);
    }
    if let Ok(cookie) = HeaderValue::from_str(cookie) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

fn failure(e: &PageError) -> Response {
    let status = match e {
        PageError::Unknown => StatusCode::NOT_FOUND,
        PageError::Tampered(_) | PageError::Refused(_) => StatusCode::BAD_REQUEST,
        PageError::Server(_) => StatusCode::BAD_GATEWAY,
        PageError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    };
    page(status, "Authorization not completed", &e.to_string())
}

/// A small HTML page.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <meta name=\"viewport\" content=\"width=device-width\"></head>\
         <body style=\"font-family:sans-serif;max-width:36em;margin:4em auto\"><h1>{t}</h1><p>{x}</p></body></html>",
        t = escape(title),
        x = escape(text)
    );
    let mut response = Response::new(Body::from(html));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    response
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flow_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; toolgate_oauth=xyz; b=2"));
        assert_eq!(browser_cookie(&headers).as_deref(), Some("xyz"));
        assert_eq!(browser_cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn pages_escape_what_they_show() {
        assert_eq!(escape("<script>\"&"), "&lt;script&gt;&quot;&amp;");
    }
}
