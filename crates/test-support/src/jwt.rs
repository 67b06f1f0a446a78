//! Signing keys made at run time, their JWKs, and JWTs signed with them
//! (header and claims exactly as a test writes them, so tests can also
//! forge bad tokens); a JWKS endpoint whose answer a test sets.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
    RsaPublicKeyComponents,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// base64url without padding, as JWS uses.
pub fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs()
}

enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
}

/// A private key with its `kid`.
pub struct TestKey {
    pub kid: String,
    pub alg: &'static str,
    signer: Signer,
}

impl TestKey {
    /// A fresh RSA-2048 key for RS256.
    pub fn rsa(kid: &str) -> Self {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key generation");
        Self { kid: kid.into(), alg: "RS256", signer: Signer::Rsa(pair) }
    }

    /// A fresh P-256 key for ES256.
    pub fn ec(kid: &str) -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key generation");
        Self { kid: kid.into(), alg: "ES256", signer: Signer::Ec(pair) }
    }

    /// A fresh Ed25519 key for EdDSA.
    pub fn ed(kid: &str) -> Self {
        let pair = Ed25519KeyPair::generate().expect("Ed25519 key generation");
        Self { kid: kid.into(), alg: "EdDSA", signer: Signer::Ed(pair) }
    }

    /// The public JWK, with `kid`, `use` and `alg`.
    pub fn jwk(&self) -> Value {
        let mut jwk = match &self.signer {
            Signer::Rsa(pair) => {
                let parts = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public_key());
                json!({ "kty": "RSA", "n": b64(&parts.n), "e": b64(&parts.e) })
            }
            Signer::Ec(pair) => {
                let point = pair.public_key().as_ref();
                assert_eq!(point.len(), 65, "uncompressed P-256 point");
                json!({ "kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..]) })
            }
            Signer::Ed(pair) => json!({ "kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref()) }),
        };
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        jwk["alg"] = json!(self.alg);
        jwk
    }

    /// The signature of `message`.
    pub fn sign_bytes(&self, message: &[u8]) -> Vec<u8> {
        match &self.signer {
            Signer::Rsa(pair) => {
                let mut sig = vec![0; pair.public_modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut sig).expect("RSA signing");
                sig
            }
            Signer::Ec(pair) => pair.sign(&SystemRandom::new(), message).expect("EC signing").as_ref().to_vec(),
            Signer::Ed(pair) => pair.sign(message).as_ref().to_vec(),
        }
    }

    /// A compact JWS of `header` and `claims`, signed with this key.
    pub fn sign(&self, header: &Value, claims: &Value) -> String {
        let message = format!("{}.{}", b64(header.to_string()), b64(claims.to_string()));
        let signature = self.sign_bytes(message.as_bytes());
        format!("{message}.{}", b64(signature))
    }

    /// The usual header: this key's `alg` and `kid`.
    pub fn header(&self) -> Value {
        json!({ "alg": self.alg, "typ": "JWT", "kid": self.kid })
    }

    /// A token with the usual header.
    pub fn token(&self, claims: &Value) -> String {
        self.sign(&self.header(), claims)
    }
}

/// A JWK Set of these keys.
pub fn jwks(keys: &[&TestKey]) -> Value {
    json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() })
}

/// The issuer and audience the tests configure.
pub const ISSUER: &str = "https://idp.example.com";
pub const AUDIENCE: &str = "https://gateway.example.com/mcp";

/// Claims that pass: right issuer and audience, valid for an hour.
pub fn good_claims(sub: &str) -> Value {
    let now = now();
    json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 3600 })
}

/// What the test JWKS server answers.
#[derive(Clone)]
pub enum Reply {
    /// 200 with this body.
    Json(Value),
    /// This status, empty body.
    Status(u16),
    /// A redirect to this location.
    Redirect(&'static str),
    /// A body of this many bytes.
    Huge(usize),
    /// Wait this long, then answer with the JWKS.
    Slow(std::time::Duration, Value),
}

struct ServerState {
    reply: parking_lot::Mutex<Reply>,
    hits: std::sync::atomic::AtomicUsize,
}

/// A JWKS endpoint on 127.0.0.1:0 that counts its requests.
pub struct JwksServer {
    pub url: String,
    state: std::sync::Arc<ServerState>,
    task: tokio::task::JoinHandle<()>,
}

impl JwksServer {
    pub async fn start(reply: Reply) -> Self {
        use axum::response::IntoResponse;
        let state = std::sync::Arc::new(ServerState {
            reply: parking_lot::Mutex::new(reply),
            hits: std::sync::atomic::AtomicUsize::new(0),
        });
        let handler_state = state.clone();
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let state = handler_state.clone();
                async move {
                    state.hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let reply = state.reply.lock().clone();
                    match reply {
                        Reply::Json(body) => json_response(&body),
                        Reply::Status(code) => http::StatusCode::from_u16(code).expect("test status").into_response(),
                        Reply::Redirect(to) => {
                            (http::StatusCode::FOUND, [(http::header::LOCATION, to)]).into_response()
                        }
                        Reply::Huge(n) => vec![b' '; n].into_response(),
                        Reply::Slow(wait, body) => {
                            tokio::time::sleep(wait).await;
                            json_response(&body)
                        }
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let task = toolgate_mcp::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self { url: format!("http://{addr}/jwks.json"), state, task }
    }

    /// Changes what the next requests get.
    pub fn set(&self, reply: Reply) {
        *self.state.reply.lock() = reply;
    }

    /// Requests served so far.
    pub fn hits(&self) -> usize {
        self.state.hits.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An HTTP client that ignores proxy settings of the environment (the
/// server is on loopback).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("HTTP client")
}

fn json_response(body: &Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(http::header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}
