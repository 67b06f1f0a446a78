//! The authenticator end to end: API keys, and JWTs signed with keys made
//! here, checked against a JWKS file or a JWKS served on loopback.

use std::sync::OnceLock;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};

use super::*;
use crate::config::{ClientConfig, JwtConfig, Secret};
use toolgate_test_support::jwt::{AUDIENCE, ISSUER, JwksServer, Reply, TestKey, b64, client, good_claims, jwks, now};

const ALICE_KEY: &str = "alice-0123456789abcdef";
const CI_KEY: &str = "ci-key-0123456789abcdef";

/// Keys are slow-ish to make (RSA); make them once for all tests.
struct Keys {
    rsa: TestKey,
    ec: TestKey,
    ed: TestKey,
    /// Not in any JWKS.
    rogue_rsa: TestKey,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        rsa: TestKey::rsa("rsa-1"),
        ec: TestKey::ec("ec-1"),
        ed: TestKey::ed("ed-1"),
        rogue_rsa: TestKey::rsa("rsa-1"),
    })
}

fn client_entry(name: &str) -> ClientConfig {
    ClientConfig {
        name: name.into(),
        api_key: None,
        api_key_sha256: None,
        upstreams: None,
        tools: vec!["*".into()],
        deny_tools: Vec::new(),
        max_sessions: None,
        calls_per_minute: None,
        concerns: Default::default(),
        limits: Vec::new(),
        upstream_headers: Default::default(),
        upstream_env: Default::default(),
        identity_claims: Default::default(),
    }
}

fn clients() -> Vec<ClientConfig> {
    let alice = ClientConfig {
        api_key: Some(Secret::new(ALICE_KEY)),
        upstreams: Some(vec!["github".into(), "time".into()]),
        tools: vec!["github__get_*".into(), "time__*".into()],
        deny_tools: vec!["*__delete_*".into()],
        max_sessions: Some(20),
        calls_per_minute: Some(600),
        ..client_entry("alice")
    };
    let digest: String = sha256(CI_KEY.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let ci = ClientConfig { api_key_sha256: Some(digest), ..client_entry("ci") };
    let bob = ClientConfig { tools: vec!["time__*".into()], ..client_entry("bob") };
    let default = ClientConfig { tools: vec!["public__*".into()], ..client_entry("default") };
    vec![alice, ci, bob, default]
}

fn jwt_config(jwks_url: Option<String>, jwks_file: Option<std::path::PathBuf>) -> JwtConfig {
    JwtConfig {
        issuer: ISSUER.into(),
        audiences: vec![AUDIENCE.into(), "https://gateway.internal/mcp".into()],
        jwks_url,
        jwks_file,
        client_claim: "sub".into(),
        authorization_servers: Vec::new(),
        scopes_supported: vec!["mcp".into()],
    }
}

fn api_key_auth() -> Authenticator {
    Authenticator::new(&AuthConfig { clients: clients(), ..AuthConfig::default() }).expect("builds")
}

/// An authenticator with API keys and JWTs whose keys come from a file.
fn jwt_auth() -> (Authenticator, tempfile::TempDir) {
    let k = keys();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&[&k.rsa, &k.ec, &k.ed]).to_string()).expect("write jwks");
    let config = AuthConfig { clients: clients(), jwt: Some(jwt_config(None, Some(path))), allow_anonymous: false };
    (Authenticator::new(&config).expect("builds"), dir)
}

fn bearer(token: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("Bearer {token}")).expect("header value")
}

async fn check(auth: &Authenticator, token: &str) -> Result<Principal, AuthError> {
    auth.authenticate(Some(&bearer(token))).await
}

fn invalid(e: TokenError) -> Result<(), AuthError> {
    Err(AuthError::InvalidToken(e))
}

#[tokio::test]
async fn without_credentials_configured_everyone_is_anonymous() {
    let auth = Authenticator::new(&AuthConfig::default()).expect("builds");
    assert!(!auth.is_enabled());
    for header in [None, Some(bearer("whatever")), Some(HeaderValue::from_static("Basic junk"))] {
        let principal = auth.authenticate(header.as_ref()).await.expect("anonymous");
        assert_eq!(principal.kind(), PrincipalKind::Anonymous);
        assert_eq!(principal.name(), "anonymous");
        assert!(principal.tools().is_unrestricted());
    }
    let disabled = Authenticator::disabled();
    assert_eq!(disabled.authenticate_headers(&HeaderMap::new()).await.expect("anonymous").name(), ANONYMOUS);
}

#[tokio::test]
async fn api_keys_name_their_client_and_carry_its_policy() {
    let auth = api_key_auth();
    assert!(auth.is_enabled() && !auth.has_jwt());
    let alice = check(&auth, ALICE_KEY).await.expect("alice");
    assert_eq!(alice.id(), &PrincipalId::new(PrincipalKind::ApiKey, "alice"));
    assert_eq!(alice.policy().entry.as_deref(), Some("alice"));
    assert!(alice.tools().allows_tool("github__get_issue", "github__get_issue", "github"));
    assert!(!alice.tools().allows_tool("github__create_issue", "github__create_issue", "github"));
    assert!(!alice.tools().allows_tool("time__delete_timer", "time__delete_timer", "time"));
    assert!(!alice.tools().allows_upstream("files"));
    assert_eq!(alice.policy().max_sessions.map(|n| n.get()), Some(20));
    assert_eq!(alice.policy().calls_per_minute.map(|n| n.get()), Some(600));

    let ci = check(&auth, CI_KEY).await.expect("ci, from api_key_sha256");
    assert_eq!(ci.name(), "ci");
    assert!(ci.tools().is_unrestricted());
}

#[tokio::test]
async fn wrong_missing_and_malformed_api_keys_are_refused() {
    let auth = api_key_auth();
    assert_eq!(auth.authenticate(None).await.unwrap_err(), AuthError::Missing);
    assert_eq!(auth.authenticate_headers(&HeaderMap::new()).await.unwrap_err(), AuthError::Missing);
    for wrong in [&ALICE_KEY[1..], &format!("{ALICE_KEY}x"), &ALICE_KEY.to_uppercase(), "a.b.c"] {
        assert_eq!(check(&auth, wrong).await.map(drop), invalid(TokenError::Unknown), "{wrong}");
    }
    // An entry without a key can never be used with a key (bob, default).
    assert_eq!(check(&auth, "").await.map(drop), Err(AuthError::Malformed("no token after `Bearer`")));
    let basic = HeaderValue::from_static("Basic YWxpY2U6c2VjcmV0");
    assert_eq!(
        auth.authenticate(Some(&basic)).await.unwrap_err(),
        AuthError::Malformed("expected the `Bearer` scheme")
    );
    let mut twice = HeaderMap::new();
    twice.append(http::header::AUTHORIZATION, bearer(ALICE_KEY));
    twice.append(http::header::AUTHORIZATION, bearer(CI_KEY));
    assert_eq!(
        auth.authenticate_headers(&twice).await.unwrap_err(),
        AuthError::Malformed("more than one Authorization header")
    );
}

#[tokio::test]
async fn rs256_es256_and_eddsa_tokens_are_accepted() {
    let (auth, _dir) = jwt_auth();
    let k = keys();
    for key in [&k.rsa, &k.ec, &k.ed] {
        let principal =
            check(&auth, &key.token(&good_claims("bob"))).await.unwrap_or_else(|e| panic!("{}: {e}", key.alg));
        assert_eq!(principal.id(), &PrincipalId::new(PrincipalKind::Jwt, "bob"));
        assert_eq!(principal.id().to_string(), "jwt:bob");
    }
}

#[tokio::test]
async fn the_client_claim_picks_the_policy() {
    let (auth, _dir) = jwt_auth();
    let ec = &keys().ec;
    // An entry of its own (without a key).
    let bob = check(&auth, &ec.token(&good_claims("bob"))).await.expect("bob");
    assert_eq!(bob.policy().entry.as_deref(), Some("bob"));
    assert!(bob.tools().allows_name("time__now") && !bob.tools().allows_name("public__x"));
    // No entry: `default`.
    let carol = check(&auth, &ec.token(&good_claims("carol"))).await.expect("carol");
    assert_eq!(carol.policy().entry.as_deref(), Some("default"));
    assert!(carol.tools().allows_name("public__x") && !carol.tools().allows_name("time__now"));
    // An API-key client's entry never applies to a JWT of the same name.
    let alice = check(&auth, &ec.token(&good_claims("alice"))).await.expect("alice");
    assert_eq!(alice.policy().entry.as_deref(), Some("default"));
    assert_ne!(alice.id(), &PrincipalId::new(PrincipalKind::ApiKey, "alice"));
}

#[tokio::test]
async fn without_a_default_entry_jwt_clients_get_every_tool() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&[&keys().ed]).to_string()).expect("write");
    let mut jwt = jwt_config(None, Some(path));
    jwt.client_claim = "client_id".into();
    let auth = Authenticator::new(&AuthConfig { jwt: Some(jwt), ..AuthConfig::default() }).expect("builds");
    let mut claims = good_claims("user-1");
    claims["client_id"] = json!("my-agent");
    let principal = check(&auth, &keys().ed.token(&claims)).await.expect("accepted");
    assert_eq!(principal.name(), "my-agent");
    assert!(principal.tools().is_unrestricted());
    assert_eq!(principal.policy().entry, None);
}

#[tokio::test]
async fn a_missing_or_unusable_client_claim_is_refused() {
    let (auth, _dir) = jwt_auth();
    let ec = &keys().ec;
    let mut claims = good_claims("x");
    for bad in [json!(null), json!(42), json!(""), json!("a\nb"), json!("x".repeat(300))] {
        claims["sub"] = bad.clone();
        assert_eq!(check(&auth, &ec.token(&claims)).await.map(drop), invalid(TokenError::BadClientClaim), "{bad}");
    }
    claims.as_object_mut().expect("object").remove("sub");
    assert_eq!(check(&auth, &ec.token(&claims)).await.map(drop), invalid(TokenError::BadClientClaim));
    // RFC 7519 makes `sub` a string; jsonwebtoken already refuses an array.
    claims["sub"] = json!(["bob"]);
    let result = check(&auth, &ec.token(&claims)).await.map(drop);
    assert!(
        matches!(result, Err(AuthError::InvalidToken(TokenError::Malformed | TokenError::BadClientClaim))),
        "{result:?}"
    );
}

#[tokio::test]
async fn time_claims_allow_a_small_clock_skew() {
    let (auth, _dir) = jwt_auth();
    let rsa = &keys().rsa;
    let with = |key: &str, value: u64| {
        let mut claims = good_claims("bob");
        claims[key] = json!(value);
        rsa.token(&claims)
    };
    let skew = CLOCK_SKEW.as_secs();
    let now = now();
    assert_eq!(check(&auth, &with("exp", now - skew - 60)).await.map(drop), invalid(TokenError::Expired));
    check(&auth, &with("exp", now - skew / 2)).await.expect("expired within the skew");
    assert_eq!(check(&auth, &with("nbf", now + skew + 60)).await.map(drop), invalid(TokenError::NotYetValid));
    check(&auth, &with("nbf", now + skew / 2)).await.expect("not yet valid within the skew");
    check(&auth, &with("nbf", now - 10)).await.expect("valid since 10 s");
}

#[tokio::test]
async fn issuer_and_audience_must_match() {
    let (auth, _dir) = jwt_auth();
    let ed = &keys().ed;
    let with = |key: &str, value: Value| {
        let mut claims = good_claims("bob");
        claims[key] = value;
        ed.token(&claims)
    };
    assert_eq!(
        check(&auth, &with("iss", json!("https://evil.example.com"))).await.map(drop),
        invalid(TokenError::WrongIssuer)
    );
    assert_eq!(
        check(&auth, &with("iss", json!("https://idp.example.com/"))).await.map(drop),
        invalid(TokenError::WrongIssuer)
    );
    // RFC 7519: `iss` is a string; an array that holds the issuer is not it.
    assert_eq!(check(&auth, &with("iss", json!([ISSUER]))).await.map(drop), invalid(TokenError::WrongIssuer));
    assert_eq!(
        check(&auth, &with("aud", json!("https://other.example.com/mcp"))).await.map(drop),
        invalid(TokenError::WrongAudience)
    );
    assert_eq!(check(&auth, &with("aud", json!([]))).await.map(drop), invalid(TokenError::WrongAudience));
    check(&auth, &with("aud", json!(["https://other.example.com", AUDIENCE]))).await.expect("one audience matches");
    check(&auth, &with("aud", json!("https://gateway.internal/mcp"))).await.expect("the second audience");
    for claim in ["exp", "iss", "aud"] {
        let mut claims = good_claims("bob");
        claims.as_object_mut().expect("object").remove(claim);
        assert_eq!(check(&auth, &ed.token(&claims)).await.map(drop), invalid(TokenError::MissingClaim), "{claim}");
    }
}

#[tokio::test]
async fn alg_none_hmac_and_other_algorithms_are_refused() {
    let (auth, _dir) = jwt_auth();
    let claims = b64(good_claims("bob").to_string());
    let none = format!("{}.{claims}.", b64(r#"{"alg":"none","typ":"JWT"}"#));
    assert_eq!(check(&auth, &none).await.map(drop), invalid(TokenError::UnsupportedAlgorithm));
    let none_upper = format!("{}.{claims}.", b64(r#"{"alg":"None","kid":"rsa-1"}"#));
    assert_eq!(check(&auth, &none_upper).await.map(drop), invalid(TokenError::UnsupportedAlgorithm));
    // HS256 "signed" with the RSA public key: the classic key-confusion attack.
    let n = keys().rsa.jwk()["n"].as_str().expect("n").to_owned();
    let message = format!("{}.{claims}", b64(r#"{"alg":"HS256","kid":"rsa-1"}"#));
    let tag = aws_lc_rs::hmac::sign(
        &aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, n.as_bytes()),
        message.as_bytes(),
    );
    let hs256 = format!("{message}.{}", b64(tag.as_ref()));
    assert_eq!(check(&auth, &hs256).await.map(drop), invalid(TokenError::UnsupportedAlgorithm));
    for alg in ["RS512", "PS256", "ES384"] {
        let token = keys().rsa.sign(&json!({"alg": alg, "kid": "rsa-1"}), &good_claims("bob"));
        assert_eq!(check(&auth, &token).await.map(drop), invalid(TokenError::UnsupportedAlgorithm), "{alg}");
    }
}

#[tokio::test]
async fn critical_header_extensions_are_refused() {
    let (auth, _dir) = jwt_auth();
    let ed = &keys().ed;
    for crit in [json!(["exp"]), json!(["urn:example:unknown"]), json!([])] {
        let mut header = ed.header();
        header["crit"] = crit.clone();
        let token = ed.sign(&header, &good_claims("bob"));
        assert_eq!(check(&auth, &token).await.map(drop), invalid(TokenError::UnsupportedCritical), "{crit}");
    }
    check(&auth, &ed.token(&good_claims("bob"))).await.expect("the same token without crit");
}

#[tokio::test]
async fn tampered_and_foreign_signatures_are_refused() {
    let (auth, _dir) = jwt_auth();
    let k = keys();
    let token = k.ec.token(&good_claims("bob"));
    let parts: Vec<&str> = token.split('.').collect();
    // Another subject, original signature.
    let forged = format!("{}.{}.{}", parts[0], b64(good_claims("admin").to_string()), parts[2]);
    assert_eq!(check(&auth, &forged).await.map(drop), invalid(TokenError::BadSignature));
    // Signature of another token.
    let other = k.ec.token(&good_claims("carol"));
    let spliced = format!("{}.{}.{}", parts[0], parts[1], other.rsplit('.').next().expect("signature"));
    assert_eq!(check(&auth, &spliced).await.map(drop), invalid(TokenError::BadSignature));
    // A key the issuer never published, claiming a published kid.
    let rogue = k.rogue_rsa.token(&good_claims("bob"));
    assert_eq!(check(&auth, &rogue).await.map(drop), invalid(TokenError::BadSignature));
    // A kid the issuer does not have (a file source never refreshes).
    let unknown = k.ec.sign(&json!({"alg": "ES256", "kid": "nope"}), &good_claims("bob"));
    assert_eq!(check(&auth, &unknown).await.map(drop), invalid(TokenError::UnknownKey));
    // The kid of a key of another type.
    let crossed = k.ec.sign(&json!({"alg": "ES256", "kid": "rsa-1"}), &good_claims("bob"));
    assert_eq!(check(&auth, &crossed).await.map(drop), invalid(TokenError::UnknownKey));
    // No kid: every key of the algorithm is tried.
    let no_kid = k.ed.sign(&json!({"alg": "EdDSA"}), &good_claims("bob"));
    check(&auth, &no_kid).await.expect("the only Ed25519 key verifies it");
    let no_kid_rogue = k.rogue_rsa.sign(&json!({"alg": "RS256"}), &good_claims("bob"));
    assert_eq!(check(&auth, &no_kid_rogue).await.map(drop), invalid(TokenError::BadSignature));
}

#[tokio::test]
async fn malformed_tokens_are_refused_cleanly() {
    let (auth, _dir) = jwt_auth();
    for junk in
        ["a.b.c", "..", "eyJ.eyJ.sig", &format!("{}.{}.x", b64("{}"), b64("{}")), &format!("{}.e30.", b64("[1]"))]
    {
        let result = check(&auth, junk).await.map(drop);
        assert!(
            matches!(result, Err(AuthError::InvalidToken(TokenError::Malformed | TokenError::UnsupportedAlgorithm))),
            "{junk}: {result:?}"
        );
    }
    // Claims that are not an object.
    let array = keys().ec.sign(&keys().ec.header(), &json!([1, 2]));
    assert_eq!(check(&auth, &array).await.map(drop), invalid(TokenError::Malformed));
    // exp of the wrong type.
    let mut claims = good_claims("bob");
    claims["exp"] = json!("tomorrow");
    let result = check(&auth, &keys().ec.token(&claims)).await.map(drop);
    assert!(
        matches!(result, Err(AuthError::InvalidToken(TokenError::Malformed | TokenError::MissingClaim))),
        "{result:?}"
    );
}

#[tokio::test]
async fn api_keys_still_work_beside_jwt() {
    let (auth, _dir) = jwt_auth();
    assert_eq!(check(&auth, ALICE_KEY).await.expect("alice").kind(), PrincipalKind::ApiKey);
    assert_eq!(check(&auth, "no-such-key").await.map(drop), invalid(TokenError::Unknown));
}

#[tokio::test]
async fn keys_are_fetched_from_the_jwks_url_and_rotations_are_picked_up() {
    let k = keys();
    let server = JwksServer::start(Reply::Json(jwks(&[&k.rsa]))).await;
    let config = AuthConfig { jwt: Some(jwt_config(Some(server.url.clone()), None)), ..AuthConfig::default() };
    let options = AuthOptions {
        jwks: JwksSettings { min_refresh_interval: Duration::ZERO, ..JwksSettings::default() },
        http: Some(client()),
    };
    let auth = Authenticator::with_options(&config, options).expect("builds");
    assert_eq!(auth.prefetch_keys().await, Ok(1));
    check(&auth, &k.rsa.token(&good_claims("bob"))).await.expect("rsa");
    assert_eq!(check(&auth, &k.ed.token(&good_claims("bob"))).await.map(drop), invalid(TokenError::UnknownKey));
    server.set(Reply::Json(jwks(&[&k.rsa, &k.ed])));
    check(&auth, &k.ed.token(&good_claims("bob"))).await.expect("found after the rotation");
    assert_eq!(server.hits(), 3);
}

#[tokio::test]
async fn an_unreachable_issuer_is_a_server_problem_not_a_bad_token() {
    let server = JwksServer::start(Reply::Status(500)).await;
    let config = AuthConfig { jwt: Some(jwt_config(Some(server.url.clone()), None)), ..AuthConfig::default() };
    let auth = Authenticator::with_options(&config, AuthOptions { http: Some(client()), ..AuthOptions::default() })
        .expect("builds");
    assert!(auth.prefetch_keys().await.is_err());
    let error = check(&auth, &keys().ec.token(&good_claims("bob"))).await.unwrap_err();
    assert_eq!(error, AuthError::KeysUnavailable);
    assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn challenges_point_at_the_resource_metadata() {
    let (auth, _dir) = jwt_auth();
    let url = "https://gateway.example.com/.well-known/oauth-protected-resource/mcp";
    assert_eq!(auth.resource_metadata_url(), Some(url));
    assert_eq!(auth.challenge(&AuthError::Missing), format!(r#"Bearer resource_metadata="{url}", scope="mcp""#));
    let expired = AuthError::InvalidToken(TokenError::Expired);
    assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        auth.challenge(&expired),
        format!(
            r#"Bearer resource_metadata="{url}", scope="mcp", error="invalid_token", error_description="the token has expired""#
        )
    );
    assert_eq!(api_key_auth().challenge(&AuthError::Missing), "Bearer");
    assert!(HeaderValue::from_str(&auth.challenge(&expired)).is_ok());
}

#[tokio::test]
async fn nothing_shows_a_credential() {
    let (auth, _dir) = jwt_auth();
    let debug = format!("{auth:?}");
    for secret in [ALICE_KEY, CI_KEY, keys().rsa.jwk()["n"].as_str().expect("n")] {
        assert!(!debug.contains(secret), "Debug shows a secret: {debug}");
    }
    let token = keys().ec.token(&good_claims("bob"));
    let principal = check(&auth, &token).await.expect("accepted");
    assert!(!format!("{principal:?}").contains(&token));
    let error = check(&auth, &format!("{token}x")).await.unwrap_err();
    assert!(!format!("{error:?}{error}{}", auth.challenge(&error)).contains(&token[..20]));
}

#[tokio::test]
async fn a_client_entry_with_a_bad_pattern_does_not_build() {
    let mut bad = client_entry("x");
    bad.api_key = Some(Secret::new("0123456789abcdef"));
    bad.tools = vec!["[".into()];
    let error = Authenticator::new(&AuthConfig { clients: vec![bad], ..AuthConfig::default() }).unwrap_err();
    assert!(error.to_string().starts_with("auth.clients `x`: `[` is not a valid glob pattern"), "{error}");
}

#[test]
fn a_logged_client_name_reads_back_as_that_client() {
    for id in [PrincipalId::new(PrincipalKind::ApiKey, "alice"), PrincipalId::new(PrincipalKind::Jwt, "user-123")] {
        assert_eq!(PrincipalId::from_logged(&id.to_string()), id);
    }
}
