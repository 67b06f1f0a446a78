use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;

use super::*;
use crate::auth::TokenError;

#[test]
fn bearer_tokens_are_taken_whatever_the_scheme_case_and_spacing() {
    assert_eq!(parse_authorization(b"Bearer abc.def-ghi_~+/="), Ok("abc.def-ghi_~+/="));
    assert_eq!(parse_authorization(b"bearer abc"), Ok("abc"));
    assert_eq!(parse_authorization(b"BEARER   abc  "), Ok("abc"));
    assert_eq!(parse_authorization(b" Bearer\tabc"), Ok("abc"));
}

#[test]
fn anything_else_is_malformed() {
    let malformed = |why| Err(AuthError::Malformed(why));
    assert_eq!(parse_authorization(b""), malformed("expected `Bearer <token>`"));
    assert_eq!(parse_authorization(b"Bearer"), malformed("no token after `Bearer`"));
    assert_eq!(parse_authorization(b"Bearer    "), malformed("no token after `Bearer`"));
    assert_eq!(parse_authorization(b"Basic dXNlcjpwYXNz"), malformed("expected the `Bearer` scheme"));
    assert_eq!(parse_authorization(b"Bearerabc"), malformed("expected `Bearer <token>`"));
    assert_eq!(parse_authorization(b"Bearer a b"), malformed("the token contains spaces or control characters"));
    assert_eq!(parse_authorization(b"Bearer a\x01"), malformed("the token contains spaces or control characters"));
    assert_eq!(parse_authorization("Bearer café".as_bytes()), malformed("not ASCII"));
    assert_eq!(parse_authorization(b"Bearer \xff\xfe"), malformed("not ASCII"));
    let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
    assert_eq!(parse_authorization(long.as_bytes()), malformed("token too long"));
    let longest = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES));
    assert_eq!(parse_authorization(longest.as_bytes()).map(str::len), Ok(MAX_TOKEN_BYTES));
}

#[test]
fn a_request_has_no_one_or_too_many_authorization_headers() {
    let mut headers = HeaderMap::new();
    assert_eq!(bearer_token(&headers), Ok(None));
    headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer one"));
    assert_eq!(bearer_token(&headers), Ok(Some("one")));
    headers.append(AUTHORIZATION, HeaderValue::from_static("Bearer two"));
    assert_eq!(bearer_token(&headers), Err(AuthError::Malformed("more than one Authorization header")));
}

#[test]
fn challenges_carry_what_the_client_needs() {
    assert_eq!(challenge(None, &[], None), "Bearer");
    assert_eq!(challenge(None, &[], Some(&AuthError::Missing)), "Bearer", "no error code without a credential");
    let url = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
    assert_eq!(
        challenge(Some(url), &["mcp".into(), "tools:read".into()], Some(&AuthError::Missing)),
        format!(r#"Bearer resource_metadata="{url}", scope="mcp tools:read""#)
    );
    assert_eq!(
        challenge(Some(url), &[], Some(&AuthError::InvalidToken(TokenError::Expired))),
        format!(
            r#"Bearer resource_metadata="{url}", error="invalid_token", error_description="the token has expired""#
        )
    );
    assert_eq!(
        challenge(None, &[], Some(&AuthError::Malformed("no token after `Bearer`"))),
        r#"Bearer error="invalid_token", error_description="malformed Authorization header: no token after `Bearer`""#
    );
}

#[test]
fn quoted_values_are_escaped() {
    assert_eq!(challenge(Some("a\"b\\c\nd"), &[], None), r#"Bearer resource_metadata="a\"b\\cd""#);
}

proptest! {
    #[test]
    fn parsing_arbitrary_bytes_never_panics_and_yields_a_clean_token(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(token) = parse_authorization(&bytes) {
            prop_assert!(!token.is_empty());
            prop_assert!(token.len() <= MAX_TOKEN_BYTES);
            prop_assert!(token.bytes().all(|b| b.is_ascii_graphic()));
        }
    }

    #[test]
    fn parsing_header_like_text_never_panics(text in "(?i:bearer)?[ \t]{0,3}\\PC{0,60}") {
        if let Ok(token) = parse_authorization(text.as_bytes()) {
            prop_assert!(text.contains(token));
        }
    }

    #[test]
    fn any_token_round_trips(token in "[!-~]{1,100}") {
        let header = format!("Bearer {token}");
        prop_assert_eq!(parse_authorization(header.as_bytes()), Ok(token.as_str()));
    }

    #[test]
    fn challenges_are_always_valid_header_values(url in "\\PC{0,60}", scope in "\\PC{0,20}") {
        let value = challenge(Some(&url), &[scope], Some(&AuthError::InvalidToken(TokenError::BadSignature)));
        prop_assert!(HeaderValue::from_str(&value).is_ok(), "{}", value);
    }
}
