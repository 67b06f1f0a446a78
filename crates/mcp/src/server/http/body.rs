//! Reading a request body under the limits: at most `max_body_bytes`
//! (declared or streamed, so a chunked body cannot slip past), within
//! `body_read_timeout` in total (a body trickled a byte at a time cannot
//! hold a connection). A refused body is answered, and the connection
//! closed: what is left of the body is never read.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;

use super::reply;
use crate::jsonrpc::codes;

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Larger than the limit (by its `Content-Length`, or as it streamed in).
    #[error("Payload Too Large: the limit is {limit} bytes")]
    TooLarge { limit: usize },
    /// Not all there within the body read timeout.
    #[error("Request Timeout: the body did not arrive within {after:?}")]
    TimedOut { after: Duration },
    /// The client broke the body off (or sent a malformed chunk).
    #[error("Bad Request: the body could not be read")]
    Broken,
}

impl BodyError {
    /// The HTTP answer: 413, 408 or 400, with a JSON-RPC error body and
    /// `Connection: close`.
    pub fn into_response(self) -> Response {
        let status = match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TimedOut { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken => StatusCode::BAD_REQUEST,
        };
        let code = match self {
            BodyError::TooLarge { .. } | BodyError::Broken => codes::INVALID_REQUEST,
            BodyError::TimedOut { .. } => codes::SERVER_ERROR,
        };
        let mut response = reply::error(status, code, &self.to_string());
        // The rest of the body was not read: the connection cannot be reused.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// Reads a whole body of at most `limit` bytes within `within`.
pub async fn read(body: Body, headers: &HeaderMap, limit: usize, within: Duration) -> Result<Bytes, BodyError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    let collect = http_body_util::Limited::new(body, limit).collect();
    match tokio::time::timeout(within, collect).await {
        Err(_) => Err(BodyError::TimedOut { after: within }),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge { limit }),
        Ok(Err(_)) => Err(BodyError::Broken),
    }
}
