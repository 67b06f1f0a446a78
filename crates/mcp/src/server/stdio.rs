//! The stdio transport, server side: one client (the process that launched
//! the server) speaking newline-delimited JSON-RPC on stdin/stdout. stdout
//! carries nothing but MCP messages; logs go to stderr.

use std::io;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::engine::Engine;
use super::handler::Handler;
use super::single;
use crate::jsonrpc::{Body, DecodeError};

/// Longest line accepted from the client.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How long queued output may take to be written once the client is done.
const FLUSH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves one client over `reader`/`writer` until the reader ends, then ends
/// the engine's sessions (releasing their upstream sessions) and writes what
/// is still queued before returning.
pub async fn serve<H, R, W>(engine: Arc<Engine<H>>, reader: R, writer: W) -> io::Result<()>
where
    H: Handler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, lines_out) = mpsc::unbounded_channel();
    let writer = crate::spawn(write_lines(writer, lines_out));
    let mut failed = None;
    let bodies = read_bodies(reader).filter_map(|item| {
        let body = match item {
            Ok(body) => Some(body),
            Err(e) => {
                failed = Some(e);
                None
            }
        };
        std::future::ready(body)
    });
    single::drive(&engine, bodies, &outbox).await;
    engine.shutdown().await;
    drop(outbox);
    if let Some(e) = failed {
        return Err(e);
    }
    // Everything queued is written before returning (bounded, in case a
    // late message still holds the channel open).
    match tokio::time::timeout(FLUSH_GRACE, writer).await {
        Ok(Ok(result)) => result,
        _ => Ok(()),
    }
}

/// The bodies on `reader`, one per line (blank lines skipped). A line over
/// [`MAX_LINE`] is an invalid message; reading goes on after it. The stream
/// ends at EOF, or after yielding a read error.
pub fn read_bodies<R: AsyncRead + Unpin>(reader: R) -> impl Stream<Item = io::Result<Result<Body, DecodeError>>> {
    let lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE));
    stream::unfold(Some(lines), |lines| async move {
        let mut lines = lines?;
        loop {
            return match lines.next().await {
                None => None,
                Some(Ok(line)) if line.trim().is_empty() => continue,
                Some(Ok(line)) => Some((Ok(Body::decode(line.as_bytes())), Some(lines))),
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    // The codec stops after an error; go on with a fresh one
                    // (the rest of the long line then fails to parse and is
                    // answered too).
                    let lines = FramedRead::new(lines.into_inner(), LinesCodec::new_with_max_length(MAX_LINE));
                    let e = DecodeError::Invalid { id: None, reason: format!("message longer than {MAX_LINE} bytes") };
                    Some((Ok(Err(e)), Some(lines)))
                }
                Some(Err(LinesCodecError::Io(e))) => Some((Err(e), None)),
            };
        }
    })
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::UnboundedReceiver<Arc<str>>,
) -> io::Result<()> {
    while let Some(line) = lines.recv().await {
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        // Flush only when nothing else is queued: one syscall per burst.
        if lines.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await
}
