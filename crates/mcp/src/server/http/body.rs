//! Reading a request body under the limits: at most `max_body_bytes`
//! (declared or streamed, so a chunked body cannot slip past), within
//! `body_read_timeout` in total (a body trickled a byte at a time cannot
//! hold a connection). A refused body is answered, and the connection
//! closed: what is left of the body is never read.

use std::time::Duration;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt as _;

use super::reply;
use crate::chunks::Chunks;
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

/// Most bytes of a refused body read and discarded before answering, and
/// for how long at most: a client that sends a large body before reading
/// the answer gets the 413 instead of a reset connection.
const DISCARD_BYTES: usize = 16 * 1024 * 1024;
const DISCARD_TIME: Duration = Duration::from_secs(2);

/// A request body [`read`] takes: hyper's own (the endpoint's, as the
/// listener hands it over, not boxed) or axum's.
pub trait ReadBody: http_body::Body<Data = Bytes> + Send + Unpin + 'static {}

impl<B: http_body::Body<Data = Bytes> + Send + Unpin + 'static> ReadBody for B {}

/// Reads a whole body of at most `limit` bytes within `within`.
/// `content_length`: the request's `Content-Length` header, if it has one.
pub async fn read<B: ReadBody>(
    body: B,
    content_length: Option<&HeaderValue>,
    limit: usize,
    within: Duration,
) -> Result<Bytes, BodyError> {
    let declared = content_length.and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let mut body = body;
    if declared.is_some_and(|n| n > limit as u64) {
        discard(&mut body, within).await;
        return Err(BodyError::TooLarge { limit });
    }
    let started = tokio::time::Instant::now();
    let mut collected = Chunks::default();
    loop {
        let frame = match tokio::time::timeout_at(started + within, body.frame()).await {
            Err(_) => return Err(BodyError::TimedOut { after: within }),
            Ok(None) => return Ok(collected.into_bytes()),
            Ok(Some(Err(_))) => return Err(BodyError::Broken),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else { continue };
        if collected.len() + data.len() > limit {
            discard(&mut body, within.saturating_sub(started.elapsed())).await;
            return Err(BodyError::TooLarge { limit });
        }
        collected.push(data);
    }
}

/// Reads and drops what is left of a refused body (bounded in bytes and time).
async fn discard<B: ReadBody>(body: &mut B, within: Duration) {
    let drain = async {
        let mut seen = 0;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, Bytes::len);
            if seen > DISCARD_BYTES {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(within.min(DISCARD_TIME), drain).await;
}
