//! The `Authorization: Bearer <token>` header (RFC 6750 §2.1) and the
//! `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1).
//!
//! Parsing takes raw header bytes from any peer, so it never panics and
//! bounds the token's length. Credentials are accepted only in the
//! `Authorization` header (never a query parameter or the body).

use http::HeaderMap;
use http::header::AUTHORIZATION;

use super::error::AuthError;

/// Longest token accepted. Real access tokens are a few KiB; this bounds the
/// work a peer can cause before anything is verified.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The token of an `Authorization` header value: the scheme `Bearer` (any
/// case), one or more spaces, then the token (visible ASCII, no spaces).
pub fn parse_authorization(value: &[u8]) -> Result<&str, AuthError> {
    let Ok(text) = std::str::from_utf8(value) else {
        return Err(AuthError::Malformed("not ASCII"));
    };
    if !text.is_ascii() {
        return Err(AuthError::Malformed("not ASCII"));
    }
    let text = text.trim_matches([' ', '\t']);
    let Some((scheme, rest)) = text.split_once([' ', '\t']) else {
        return Err(if text.eq_ignore_ascii_case("bearer") {
            AuthError::Malformed("no token after `Bearer`")
        } else {
            AuthError::Malformed("expected `Bearer <token>`")
        });
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed("expected the `Bearer` scheme"));
    }
    let token = rest.trim_start_matches([' ', '\t']);
    if token.is_empty() {
        return Err(AuthError::Malformed("no token after `Bearer`"));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Malformed("token too long"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(AuthError::Malformed("the token contains spaces or control characters"));
    }
    Ok(token)
}

/// The bearer token of a request: `Ok(None)` without an `Authorization`
/// header; an error when there are several or the one there is malformed.
pub fn bearer_token(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let Some(first) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(AuthError::Malformed("more than one Authorization header"));
    }
    parse_authorization(first.as_bytes()).map(Some)
}

/// The `WWW-Authenticate` value of a 401: `Bearer`, then
/// `resource_metadata="<url>"` (when JWT is configured), `scope="<scopes>"`
/// (when scopes are configured), and `error="invalid_token"` with an
/// `error_description` when a credential was sent.
pub fn challenge(resource_metadata: Option<&str>, scopes: &[String], error: Option<&AuthError>) -> String {
    let mut params: Vec<(&str, String)> = Vec::new();
    if let Some(url) = resource_metadata {
        params.push(("resource_metadata", url.to_owned()));
    }
    if !scopes.is_empty() {
        params.push(("scope", scopes.join(" ")));
    }
    if let Some(error) = error.filter(|e| e.credential_sent()) {
        params.push(("error", "invalid_token".to_owned()));
        params.push(("error_description", error.description()));
    }
    let mut out = String::from("Bearer");
    for (i, (name, value)) in params.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(name);
        out.push('=');
        push_quoted(&mut out, value);
    }
    out
}

/// An RFC 9110 quoted-string; characters a header value cannot hold are
/// dropped so the result is always a valid `HeaderValue`.
fn push_quoted(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' ' | '\t' => out.push(c),
            c if c.is_ascii_graphic() => out.push(c),
            _ => {}
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests;
