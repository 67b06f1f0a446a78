//! The stdio transport, server side: one client (the process that launched
//! the server) speaking newline-delimited JSON-RPC on stdin/stdout. stdout
//! carries nothing but MCP messages; logs go to stderr.

use std::io;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio_util::codec::{AnyDelimiterCodec, AnyDelimiterCodecError, Decoder, FramedRead};

use super::engine::Engine;
use super::handler::Handler;
use super::single;
use crate::jsonrpc::{Body, DecodeError};

mod standard;

pub use standard::{Reader, Writer, streams as standard_streams};

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
    let (outbox, lines_out) = mpsc::channel(engine.store().limits().stream_buffer.max(1));
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
    // The session is the pipe's: it never expires while the client is there.
    single::drive(&engine, bodies, &outbox, single::Lifetime::Connection, crate::server::Caller::anonymous(), None)
        .await;
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

/// Serves one client on the process's own stdin and stdout (see
/// [`standard_streams`]), as [`serve`] does.
pub async fn serve_standard<H: Handler>(engine: Arc<Engine<H>>) -> io::Result<()> {
    let (reader, writer) = standard_streams();
    serve(engine, reader, writer).await
}

/// The bodies on `reader`, one per line (blank lines skipped). A line that
/// is not UTF-8 is a parse error; one over [`MAX_LINE`] is an invalid
/// message and is skipped to its end without being held. Reading goes on
/// after either. The stream ends at EOF, or after yielding a read error.
pub fn read_bodies<R: AsyncRead + Unpin>(reader: R) -> impl Stream<Item = io::Result<Result<Body, DecodeError>>> {
    FramedRead::new(reader, LineCodec::default()).filter_map(|line| {
        std::future::ready(match line {
            Ok(Line::Text(bytes)) if bytes.trim_ascii().is_empty() => None,
            Ok(Line::Text(bytes)) => Some(Ok(Body::decode(&bytes))),
            Ok(Line::TooLong) => {
                let reason = format!("message longer than {MAX_LINE} bytes");
                Some(Ok(Err(DecodeError::Invalid { id: None, reason })))
            }
            Err(e) => Some(Err(e)),
        })
    })
}

/// One line off the reader.
enum Line {
    /// The line's bytes, without the newline (UTF-8 is checked by the decoder).
    Text(Bytes),
    /// A line over [`MAX_LINE`]; the codec discards the rest of it.
    TooLong,
}

/// Newline-delimited frames as bytes, a long line reported as an item rather
/// than an error (an error would end the stream).
struct LineCodec(AnyDelimiterCodec);

impl Default for LineCodec {
    fn default() -> Self {
        Self(AnyDelimiterCodec::new_with_max_length(b"\n".to_vec(), Vec::new(), MAX_LINE))
    }
}

impl Decoder for LineCodec {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        lift(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        lift(self.0.decode_eof(buf))
    }
}

fn lift(frame: Result<Option<Bytes>, AnyDelimiterCodecError>) -> io::Result<Option<Line>> {
    match frame {
        Ok(frame) => Ok(frame.map(Line::Text)),
        Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(Line::TooLong)),
        Err(AnyDelimiterCodecError::Io(e)) => Err(e),
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(writer: W, mut lines: mpsc::Receiver<Arc<str>>) -> io::Result<()> {
    // A line and its newline leave in one write, and a burst of queued lines
    // in as few as the buffer allows.
    let mut writer = BufWriter::new(writer);
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

#[cfg(test)]
mod tests;
