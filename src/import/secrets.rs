//! Recognising credentials in literal values, so they can be moved out of
//! the imported file into environment variables.
//!
//! A value is treated as a secret when its name says so (an env variable,
//! header, flag or query parameter named like a token, key, password or
//! secret), when it has the prefix of a well-known token format (`ghp_`,
//! `sk-`, `xoxb-`, a JWT's `eyJ`, …), or when it looks random (at least 20
//! characters of letters, digits and `_-+=`, with both letters and digits,
//! and no dots, slashes or spaces, so paths, hosts and versions are not).
//! A URL's password is a secret whatever it is called. Err on the side of
//! moving a value out: a needless variable costs a line in an env file, a
//! copied token is a leak.

use std::ops::Range;

/// Name parts that mark a credential (`API_KEY`, `X-Auth-Token`, `apiKey`).
const SECRET_WORDS: [&str; 16] = [
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "pass",
    "key",
    "apikey",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "pat",
    "cookie",
    "signature",
    "dsn",
];

/// Word endings that mark a credential when run together (`ACCESSTOKEN`).
const SECRET_SUFFIXES: [&str; 4] = ["token", "secret", "password", "apikey"];

/// Prefixes of well-known token formats.
const TOKEN_PREFIXES: [&str; 27] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ntn_",
    "secret_",
    "lin_api_",
    "npm_",
    "pypi-",
    "hf_",
    "tvly-",
    "pplx-",
    "eyJ",
];

/// Whether a name (of an env variable, header, flag or query parameter)
/// says its value is a credential.
pub fn is_secret_name(name: &str) -> bool {
    words(name).iter().any(|w| SECRET_WORDS.contains(&w.as_str()) || SECRET_SUFFIXES.iter().any(|s| w.ends_with(s)))
}

/// Lowercase words of a name: split at anything not alphanumeric and at
/// lower-to-upper case changes (`apiKey` -> `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    out.extend((!word.is_empty()).then_some(word));
    out
}

/// Whether a value looks like a credential by itself.
pub fn looks_like_token(value: &str) -> bool {
    if value.len() >= 20 && TOKEN_PREFIXES.iter().any(|p| value.starts_with(p)) && !value.contains(' ') {
        return true;
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_-+=".contains(c);
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let letters = value.chars().filter(char::is_ascii_alphabetic).count();
    value.len() >= 20
        && value.chars().all(allowed)
        && !value.starts_with('-')
        && digits >= 2
        && letters >= 4
        && !is_uuid(value)
}

/// UUIDs are ids far more often than credentials (database, project and
/// tenant ids); a UUID under a credential name is still caught by the name.
fn is_uuid(value: &str) -> bool {
    let groups: Vec<&str> = value.split('-').collect();
    groups.len() == 5
        && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `Bearer abc`, `Basic abc`, `token abc`: the scheme and the credential.
pub fn split_scheme(value: &str) -> Option<(&str, &str)> {
    let (scheme, credential) = value.split_once(' ')?;
    let known = ["bearer", "basic", "token", "bot", "apikey", "api-key", "key"];
    (known.contains(&scheme.to_ascii_lowercase().as_str()) && !credential.trim().is_empty())
        .then(|| (scheme, credential.trim()))
}

/// A credential inside a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlSecret {
    /// Where it is in the URL text.
    pub range: Range<usize>,
    /// What to call its variable, e.g. `PASSWORD`, `API_KEY`.
    pub what: String,
}

/// The credentials in a URL: the password of its user part (or the whole
/// user part when it has no password: `https://TOKEN@host/`), query
/// parameters named like credentials, and path segments that look like
/// tokens (`/mcp/sk-…/sse`). Empty for anything that is not a URL.
pub fn url_secrets(url: &str) -> Vec<UrlSecret> {
    let mut found = Vec::new();
    let Some(scheme_end) = url.find("://") else {
        return found;
    };
    if scheme_end == 0 || !url[..scheme_end].chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return found;
    }
    let start = scheme_end + 3;
    let end_of = |from: usize, stops: &[char]| url[from..].find(stops).map_or(url.len(), |i| from + i);
    let authority_end = end_of(start, &['/', '?', '#']);
    if let Some(at) = url[start..authority_end].rfind('@') {
        let userinfo = start..start + at;
        match url[userinfo.clone()].find(':') {
            Some(colon) if colon + 1 < userinfo.len() => {
                found.push(UrlSecret { range: userinfo.start + colon + 1..userinfo.end, what: "PASSWORD".into() });
            }
            _ => found.push(UrlSecret { range: userinfo, what: "URL_CREDENTIALS".into() }),
        }
    }
    let path_end = end_of(authority_end, &['?', '#']);
    let mut offset = authority_end;
    for segment in url[authority_end..path_end].split('/') {
        if looks_like_token(segment) {
            found.push(UrlSecret { range: offset..offset + segment.len(), what: "URL_SECRET".into() });
        }
        offset += segment.len() + 1;
    }
    if url[path_end..].starts_with('?') {
        let query_end = end_of(path_end, &['#']);
        let mut offset = path_end + 1;
        for pair in url[path_end + 1..query_end].split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && !value.is_empty()
                && (is_secret_name(name) || looks_like_token(value))
            {
                let from = offset + name.len() + 1;
                found.push(UrlSecret { range: from..from + value.len(), what: super::vars::env_name(name) });
            }
            offset += pair.len() + 1;
        }
    }
    found
}

#[cfg(test)]
mod tests;
