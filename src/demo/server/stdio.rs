//! The stdio transport: one JSON-RPC message per line on the reader, one per
//! line on the writer. Blank lines are skipped; a line that is not a message
//! gets a JSON-RPC error; nothing a peer sends can end the loop but EOF.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::registry::Registry;
use super::session::{Outgoing, Session};
use crate::jsonrpc::{ErrorObject, Message, codes};

/// Limits of the stdio transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// Lines longer than this are refused (and skipped) without buffering them.
    pub max_line_bytes: usize,
    /// After EOF, how long running tool calls may take to finish.
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self { max_line_bytes: 16 * 1024 * 1024, shutdown_grace: Duration::from_secs(2) }
    }
}

/// Serves `registry` on stdin/stdout until stdin closes.
pub async fn serve_stdio(registry: Arc<Registry>) -> io::Result<()> {
    serve(registry, tokio::io::stdin(), tokio::io::stdout(), ServeOptions::default()).await
}

/// Serves `registry` on any byte streams until `reader` reaches EOF. Returns
/// the first read or write error, after the session has shut down.
pub async fn serve<R, W>(registry: Arc<Registry>, reader: R, writer: W, options: ServeOptions) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (session, rx) = Session::new(registry);
    let done = CancellationToken::new();
    let read = async {
        let result = read_loop(&session, BufReader::new(reader), options.max_line_bytes).await;
        session.shutdown(options.shutdown_grace).await;
        done.cancel();
        result
    };
    let (read_result, write_result) = tokio::join!(read, write_loop(rx, BufWriter::new(writer), &done));
    read_result.and(write_result)
}

async fn read_loop<R: AsyncBufRead + Unpin>(session: &Session, mut reader: R, max: usize) -> io::Result<()> {
    let mut line = Vec::new();
    loop {
        match read_line(&mut reader, &mut line, max).await? {
            Line::Eof => return Ok(()),
            Line::TooLong => session.send_error(ErrorObject::new(
                codes::INVALID_REQUEST,
                format!("Message too large: lines are limited to {max} bytes"),
            )),
            Line::Complete => {
                let text = line.trim_ascii();
                if text.is_empty() {
                    continue;
                }
                if text.first() == Some(&b'[') {
                    // JSON-RPC batches (2025-03-26 only) are not supported here.
                    session.send_error(ErrorObject::new(codes::INVALID_REQUEST, "JSON-RPC batches are not supported"));
                    continue;
                }
                match Message::decode(text) {
                    Ok(message) => session.handle(message),
                    Err(e) => session.handle_decode_error(&e),
                }
            }
        }
    }
}

enum Line {
    Complete,
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line into `buf` (without the newline). A last
/// line without a newline still counts. Never holds more than `max` bytes.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (seen_any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Complete,
            });
        }
        seen_any = true;
        let (chunk, used, ends) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if ends {
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

/// Writes each outgoing message as one line, flushing whenever the queue runs
/// dry (so bursts share a flush). Ends when `done` fires or every sender is
/// gone, after writing what is already queued.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut writer: W,
    done: &CancellationToken,
) -> io::Result<()> {
    let mut failed: Option<io::Error> = None;
    let mut line = Vec::with_capacity(1024);
    loop {
        let first = tokio::select! {
            biased;
            m = rx.recv() => m,
            () = done.cancelled() => None,
        };
        let Some(first) = first else { break };
        let mut next = Some(first);
        while let Some(out) = next {
            if failed.is_none()
                && let Err(e) = write_message(&mut writer, &mut line, &out.message).await
            {
                // The reader decides when we stop; keep draining so handlers never block.
                tracing::warn!(error = %e, "cannot write to the client");
                failed = Some(e);
            }
            next = rx.try_recv().ok();
        }
        if failed.is_none()
            && let Err(e) = writer.flush().await
        {
            failed = Some(e);
        }
    }
    // Whatever was queued before the end still goes out.
    while let Ok(out) = rx.try_recv() {
        if failed.is_none()
            && let Err(e) = write_message(&mut writer, &mut line, &out.message).await
        {
            failed = Some(e);
        }
    }
    if failed.is_none()
        && let Err(e) = writer.flush().await
    {
        failed = Some(e);
    }
    failed.map_or(Ok(()), Err)
}

async fn write_message<W: AsyncWrite + Unpin>(writer: &mut W, line: &mut Vec<u8>, message: &Message) -> io::Result<()> {
    line.clear();
    serde_json::to_writer(&mut *line, message).map_err(io::Error::other)?;
    line.push(b'\n');
    writer.write_all(line).await
}
