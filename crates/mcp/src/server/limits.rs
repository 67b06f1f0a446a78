//! The limits the engine holds every client to, whatever its transport:
//! how many sessions may live at once, how many requests one session may
//! have in flight, and how many messages may wait for a client that reads
//! slowly. The HTTP listener's own limits (connections, timeouts) are in
//! [`http::ListenOptions`](super::http::ListenOptions).

use crate::jsonrpc::{ErrorObject, codes};

/// Default most live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default most requests one session may have in flight.
pub const DEFAULT_MAX_REQUESTS_PER_SESSION: usize = 64;
/// Default most messages queued on one response stream.
pub const DEFAULT_STREAM_BUFFER: usize = 256;

/// Largest `clientInfo`, and largest `capabilities`, a client may describe
/// itself with in `initialize`, as JSON: a session keeps both for its whole
/// life (and a shared one in its record), so they are bounded well below
/// the body size. Real clients send a few hundred bytes.
pub const MAX_CLIENT_DESCRIPTION_BYTES: usize = 16 * 1024;

/// The refusal of an `initialize` whose `field` (`clientInfo` or
/// `capabilities`) is larger than [`MAX_CLIENT_DESCRIPTION_BYTES`], if it is.
pub fn oversized_client_description(params: &serde_json::Value) -> Option<ErrorObject> {
    ["clientInfo", "capabilities"].into_iter().find_map(|field| {
        let value = params.get(field)?;
        (!fits(value, MAX_CLIENT_DESCRIPTION_BYTES)).then(|| {
            ErrorObject::invalid_params(format!(
                "initialize params.{field} is larger than {MAX_CLIENT_DESCRIPTION_BYTES} bytes as JSON; send less"
            ))
        })
    })
}

/// Whether `value` serializes to at most `limit` bytes (stops counting past it).
fn fits(value: &serde_json::Value, limit: usize) -> bool {
    struct Counter {
        left: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self.left.checked_sub(buf.len()).ok_or(std::io::ErrorKind::FileTooLarge)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter { left: limit }, value).is_ok()
}

/// Per-server limits on sessions and the work they queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most sessions alive at once; the next `initialize` is refused
    /// ([`Refusal::TooManySessions`](super::Refusal::TooManySessions), HTTP 429).
    pub max_sessions: usize,
    /// Most requests one session may have in flight (the elements of a
    /// batch count one by one); a request over it is answered at once with
    /// [`too_many_requests`].
    pub max_requests_per_session: usize,
    /// Most notifications (progress, log messages) queued on one response
    /// stream for a client that reads slowly; past it, further ones are
    /// dropped. Responses and server-to-client requests are never dropped.
    pub stream_buffer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_requests_per_session: DEFAULT_MAX_REQUESTS_PER_SESSION,
            stream_buffer: DEFAULT_STREAM_BUFFER,
        }
    }
}

/// The error answering `initialize` when [`Limits::max_sessions`] sessions live.
pub fn too_many_sessions(limit: usize) -> ErrorObject {
    ErrorObject::new(
        codes::LIMIT_EXCEEDED,
        format!("Too many sessions: this server holds at most {limit} at once; try again later"),
    )
}

/// The error answering a request over [`Limits::max_requests_per_session`].
pub fn too_many_requests(limit: usize) -> ErrorObject {
    ErrorObject::new(
        codes::LIMIT_EXCEEDED,
        format!(
            "Too many requests in flight: a session may have at most {limit} at once; wait for some to be answered"
        ),
    )
}

/// The error answering a request that arrives while the server shuts down.
pub fn shutting_down() -> ErrorObject {
    ErrorObject::new(codes::SERVER_ERROR, "The server is shutting down")
}
