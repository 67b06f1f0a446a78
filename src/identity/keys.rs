//! toolgate's signing keys (`[identity] signing_keys`): PKCS#8 PEM files of
//! P-256 (ES256) or Ed25519 (EdDSA) keys, each published in the JWK Set with
//! its RFC 7638 thumbprint as `kid`.

use std::path::Path;

use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// Why a signing key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{0}` is not a PKCS#8 PEM private key of P-256 (ES256) or Ed25519 (EdDSA)")]
    Unsupported(String),
}

/// One signing key: what signs, and what is published.
pub struct SigningKey {
    alg: Algorithm,
    kid: String,
    key: EncodingKey,
    jwk: Jwk,
}

impl SigningKey {
    /// The key in the PEM file at `path`.
    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        let shown = path.display().to_string();
        let pem = std::fs::read(path).map_err(|source| KeyFileError::Read { path: shown.clone(), source })?;
        Self::from_pem(&pem).ok_or(KeyFileError::Unsupported(shown))
    }

    /// The key in `pem`, if it is one toolgate signs with.
    pub fn from_pem(pem: &[u8]) -> Option<Self> {
        let ec = EncodingKey::from_ec_pem(pem).ok().map(|k| (k, Algorithm::ES256));
        let ed = || EncodingKey::from_ed_pem(pem).ok().and_then(|k| ed25519_v1(&k)).map(|k| (k, Algorithm::EdDSA));
        let (key, alg) = ec.or_else(ed)?;
        let mut jwk = Jwk::from_encoding_key(&key, alg).ok()?;
        let kid = jwk.thumbprint(ThumbprintHash::SHA256).ok()?;
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        let signer = Self { alg, kid, key, jwk };
        // A key that parses but cannot sign (a P-384 key read as P-256) is refused now.
        signer.sign(&serde_json::json!({})).ok()?;
        Some(signer)
    }

    /// `claims` signed with this key, `kid` in the header.
    pub fn sign(&self, claims: &impl serde::Serialize) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key)
    }

    /// Its `kid`.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Its public half, as published (for a provider that registers
    /// toolgate as a `private_key_jwt` client).
    pub fn public_jwk(&self) -> serde_json::Value {
        serde_json::to_value(&self.jwk).unwrap_or_default()
    }
}

/// An Ed25519 key as PKCS#8 v1, the form the JWT library signs with
/// (`openssl genpkey` writes v1; other tools write v2, with the public key).
fn ed25519_v1(key: &EncodingKey) -> Option<EncodingKey> {
    let pair = aws_lc_rs::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(key.as_bytes()).ok()?;
    Some(EncodingKey::from_ed_der(pair.to_pkcs8v1().ok()?.as_ref()))
}

/// The JWK Set of `keys`, as served at `/.well-known/jwks.json`.
pub fn jwks(keys: &[SigningKey]) -> JwkSet {
    JwkSet { keys: keys.iter().map(|k| k.jwk.clone()).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem(alg: &'static rcgen::SignatureAlgorithm) -> String {
        rcgen::KeyPair::generate_for(alg).unwrap().serialize_pem()
    }

    #[test]
    fn p256_and_ed25519_keys_sign_and_publish_their_thumbprint() {
        for (alg, want) in
            [(&rcgen::PKCS_ECDSA_P256_SHA256, Algorithm::ES256), (&rcgen::PKCS_ED25519, Algorithm::EdDSA)]
        {
            let key = SigningKey::from_pem(pem(alg).as_bytes()).expect("a usable key");
            assert_eq!(key.alg, want);
            let set = serde_json::to_value(jwks(std::slice::from_ref(&key))).unwrap();
            assert_eq!(set["keys"][0]["kid"], key.kid());
            assert_eq!(set["keys"][0]["use"], "sig");
            assert!(set["keys"][0].get("d").is_none(), "no private part is published: {set}");
            // What it signs verifies under what it publishes.
            let token = key.sign(&serde_json::json!({"sub": "alice"})).unwrap();
            let jwk: Jwk = serde_json::from_value(set["keys"][0].clone()).unwrap();
            let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
            let mut validation = jsonwebtoken::Validation::new(want);
            validation.required_spec_claims.clear();
            validation.validate_exp = false;
            let data = jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation).unwrap();
            assert_eq!(data.claims["sub"], "alice");
            assert_eq!(data.header.kid.as_deref(), Some(key.kid()));
        }
    }

    #[test]
    fn other_keys_are_refused() {
        assert!(SigningKey::from_pem(pem(&rcgen::PKCS_ECDSA_P384_SHA384).as_bytes()).is_none());
        assert!(SigningKey::from_pem(b"not a key").is_none());
        let e = SigningKey::load(Path::new("/nonexistent/key.pem")).err().unwrap();
        assert!(e.to_string().contains("cannot read"), "{e}");
    }
}
