//! Whether an HTTP exchange failed because the upstream's connection went
//! away under it (the server process was killed or restarted mid-call): that
//! is the upstream closing the connection (`-32012`, like a stdio child that
//! exits), not a malformed exchange (`-32603`).

use std::error::Error;
use std::io::ErrorKind;

/// Whether `e`, or any error in its chain of sources, says the connection
/// was closed or reset before the exchange completed.
pub(super) fn connection_lost(e: &(dyn Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled() || h.is_closed())
        {
            return true;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        next = e.source();
    }
    false
}

#[cfg(test)]
mod tests;
