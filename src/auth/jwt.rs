//! JWT access tokens (OAuth 2.1 resource server, MCP authorization spec).
//!
//! A token is accepted when its `alg` is RS256, ES256 or EdDSA (never `none`
//! or an HMAC algorithm), a key of the issuer with its `kid` verifies the
//! signature, `iss` is the configured issuer, `aud` names one of the
//! configured audiences, `exp` is not past and `nbf` (if any) not ahead, both
//! with [`CLOCK_SKEW`] of tolerance, and the `client_claim` is a usable name.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use serde_json::{Map, Value};

use super::error::{AuthError, TokenError};
use super::jwks::{ALGORITHMS, KeyLookupError, KeyStore};
use crate::config::JwtConfig;

/// Tolerance for `exp` and `nbf`, for clocks that disagree a little.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// Longest client name taken from a claim (it appears in logs and metrics).
const MAX_CLIENT_NAME: usize = 256;

/// Verifies tokens of one issuer.
#[derive(Debug)]
pub(crate) struct JwtVerifier {
    keys: KeyStore,
    issuer: String,
    audiences: Vec<String>,
    client_claim: String,
}

impl JwtVerifier {
    pub(crate) fn new(config: &JwtConfig, keys: KeyStore) -> Self {
        Self {
            keys,
            issuer: config.issuer.clone(),
            audiences: config.audiences.clone(),
            client_claim: config.client_claim.clone(),
        }
    }

    pub(crate) fn keys(&self) -> &KeyStore {
        &self.keys
    }

    /// Verifies `token` and returns the value of its client claim.
    pub(crate) async fn verify(&self, token: &str) -> Result<Verified, AuthError> {
        let invalid = |e: TokenError| AuthError::InvalidToken(e);
        let header = decode_header(token).map_err(|e| invalid(header_error(e.kind())))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(invalid(TokenError::UnsupportedAlgorithm));
        }
        if has_critical_extensions(token) {
            return Err(invalid(TokenError::UnsupportedCritical));
        }
        let keys = self.keys.find(header.kid.as_deref(), header.alg).await.map_err(|e| match e {
            KeyLookupError::UnknownKey => invalid(TokenError::UnknownKey),
            KeyLookupError::Unavailable => AuthError::KeysUnavailable,
        })?;
        let validation = self.validation(header.alg);
        let mut outcome = Err(TokenError::UnknownKey);
        for key in &keys {
            match decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) => {
                    outcome = Ok(data.claims);
                    break;
                }
                // Without a `kid` several keys may be tried; a signature
                // that does not verify under one may under the next.
                Err(e) if is_key_mismatch(e.kind()) => outcome = Err(TokenError::BadSignature),
                Err(e) => {
                    outcome = Err(claims_error(e.kind()));
                    break;
                }
            }
        }
        let claims = outcome.map_err(invalid)?;
        // The library also takes an array that contains the issuer.
        if !claims.get("iss").is_some_and(Value::is_string) {
            return Err(invalid(TokenError::WrongIssuer));
        }
        let name = client_name(&claims, &self.client_claim).ok_or(invalid(TokenError::BadClientClaim))?;
        let subject = claims.get("sub").and_then(Value::as_str).map_or_else(|| Arc::from(name.as_str()), Arc::from);
        let expires_at = claims.get("exp").and_then(Value::as_u64).unwrap_or_default();
        Ok(Verified { name, subject, expires_at })
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        validation.leeway = CLOCK_SKEW.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation
    }
}

/// The claim's value when it is a usable client name.
/// What a verified token says of its client.
pub(crate) struct Verified {
    /// The value of the client claim.
    pub(crate) name: String,
    /// Its `sub` (the name when it has none).
    pub(crate) subject: Arc<str>,
    /// Its `exp`, Unix seconds.
    pub(crate) expires_at: u64,
}

fn client_name(claims: &Map<String, Value>, claim: &str) -> Option<String> {
    let name = claims.get(claim)?.as_str()?;
    let usable = !name.is_empty() && name.len() <= MAX_CLIENT_NAME && !name.chars().any(char::is_control);
    usable.then(|| name.to_owned())
}

/// Whether the token's header has a `crit` member: toolgate understands no
/// extension, so any (even an empty list, which RFC 7515 forbids) rejects it.
/// The header was decoded already; this reads it once more as plain JSON.
fn has_critical_extensions(token: &str) -> bool {
    let Some(segment) = token.split('.').next() else { return false };
    let Ok(bytes) = B64URL.decode(segment) else { return false };
    serde_json::from_slice::<Map<String, Value>>(&bytes).is_ok_and(|header| header.contains_key("crit"))
}

/// Errors from parsing the header: an unknown `alg` (`none`, `HS999`) fails
/// there, as does anything that is not three base64url JSON segments.
fn header_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm | ErrorKind::InvalidAlgorithm => {
            TokenError::UnsupportedAlgorithm
        }
        ErrorKind::Json(e) if e.to_string().contains("unknown variant") => TokenError::UnsupportedAlgorithm,
        _ => TokenError::Malformed,
    }
}

/// Errors that mean "not this key": try the next candidate.
fn is_key_mismatch(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::InvalidSignature
            | ErrorKind::InvalidRsaKey(_)
            | ErrorKind::InvalidEcdsaKey
            | ErrorKind::InvalidEddsaKey
            | ErrorKind::InvalidKeyFormat
            | ErrorKind::Provider(_)
    )
}

/// Errors after the signature verified (claims), or about the token's form.
fn claims_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::MissingRequiredClaim(_) => TokenError::MissingClaim,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => {
            TokenError::UnsupportedAlgorithm
        }
        _ => TokenError::Malformed,
    }
}
