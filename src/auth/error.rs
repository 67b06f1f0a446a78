//! [`AuthError`]: why a request was not authenticated, and what the HTTP layer
//! answers (status and `WWW-Authenticate` error code).
//!
//! Messages name the reason (expired, wrong audience…) but never the
//! credential itself.

use http::StatusCode;

/// Why a request is refused before it reaches the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("no credentials: send `Authorization: Bearer <token>`")]
    Missing,
    /// An `Authorization` header that is not one `Bearer <token>`.
    #[error("malformed Authorization header: {0}")]
    Malformed(&'static str),
    /// A bearer token that is no configured API key and no acceptable JWT.
    #[error("invalid token: {0}")]
    InvalidToken(TokenError),
    /// The token is a JWT but the issuer's keys could never be loaded, so it
    /// cannot be checked (a server-side problem, not the client's).
    #[error("the token cannot be checked now: the issuer's keys are unavailable")]
    KeysUnavailable,
}

/// What is wrong with a bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Neither a configured API key nor a JWT (or JWT auth is not enabled).
    #[error("unknown token")]
    Unknown,
    /// Not a well-formed JWT (segments, base64, JSON, claim types).
    #[error("malformed token")]
    Malformed,
    /// `alg` other than RS256, ES256 and EdDSA (`none` included).
    #[error("unsupported signature algorithm (accepted: RS256, ES256, EdDSA)")]
    UnsupportedAlgorithm,
    /// No key of the issuer matches the token's `kid` and algorithm.
    #[error("signed by an unknown key")]
    UnknownKey,
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// `exp` is past (beyond the allowed clock skew).
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future (beyond the allowed clock skew).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `iss` is not the configured issuer (or not a string: RFC 7519 §4.1.1).
    #[error("wrong issuer")]
    WrongIssuer,
    /// The header lists `crit` extensions, none of which toolgate
    /// understands (RFC 7515 §4.1.11: such a token must be rejected).
    #[error("the token has critical header extensions that are not supported")]
    UnsupportedCritical,
    /// `aud` names none of the configured audiences.
    #[error("wrong audience")]
    WrongAudience,
    /// A required claim (`exp`, `iss`, `aud`) is absent.
    #[error("a required claim is missing (exp, iss and aud are required)")]
    MissingClaim,
    /// The `client_claim` is absent, not a string, empty, too long or has
    /// control characters.
    #[error("the client claim is missing or not a usable name")]
    BadClientClaim,
}

impl AuthError {
    /// The HTTP status to answer with: 401, except 503 when the issuer's keys
    /// are unavailable.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::KeysUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::Missing | Self::Malformed(_) | Self::InvalidToken(_) => StatusCode::UNAUTHORIZED,
        }
    }

    /// Whether the client sent a credential (then the challenge carries
    /// `error="invalid_token"`).
    pub fn credential_sent(&self) -> bool {
        !matches!(self, Self::Missing)
    }

    /// A short description for `error_description` (no quotes or
    /// backslashes, no secrets).
    pub fn description(&self) -> String {
        match self {
            Self::Missing => "credentials required".to_owned(),
            Self::Malformed(why) => format!("malformed Authorization header: {why}"),
            Self::InvalidToken(why) => why.to_string(),
            Self::KeysUnavailable => "the issuer's keys are unavailable".to_owned(),
        }
    }
}
