//! The stdio transport, server side: one client (the process that launched
//! toolgate) speaking newline-delimited JSON-RPC on stdin/stdout. stdout
//! carries nothing but MCP messages; logs go to stderr.

use std::io;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::engine::Engine;
use super::handler::Handler;
use super::session::Session;
use super::single::{self, Outbox};
use crate::jsonrpc::{DecodeError, ErrorObject, Message, Response, codes};
use crate::protocol::method;

/// Longest line accepted from the client.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Serves one client over `reader`/`writer` until the reader ends, then ends
/// the session (releasing its upstream sessions) before returning.
pub async fn serve<H, R, W>(engine: Arc<Engine<H>>, reader: R, writer: W) -> io::Result<()>
where
    H: Handler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, lines_out) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(writer, lines_out));
    let downlink = single::downlink_to(outbox.clone());
    let mut session: Option<Arc<Session<H::State>>> = None;
    let mut lines = FramedRead::new(reader, LinesCodec::new_with_max_length(MAX_LINE));
    loop {
        let line = match lines.next().await {
            None => break,
            Some(Ok(line)) => line,
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                let e = ErrorObject::new(codes::INVALID_REQUEST, format!("message longer than {MAX_LINE} bytes"));
                send(&outbox, &Message::Response(Response::error(None, e)));
                // The codec stops after an error; go on with a fresh one (the
                // rest of the long line then fails to parse and is answered).
                lines = FramedRead::new(lines.into_inner(), LinesCodec::new_with_max_length(MAX_LINE));
                continue;
            }
            Some(Err(LinesCodecError::Io(e))) => return Err(e),
        };
        for message in decode_line(&line, &outbox) {
            match &session {
                Some(s) => match message {
                    Message::Request(_) => single::dispatch(&engine, s, message, &downlink),
                    // Notifications and responses are handled in order.
                    other => {
                        engine.handle(s, other, downlink.clone()).await;
                    }
                },
                None => {
                    if let Some(s) = before_initialize(&engine, message, &outbox).await {
                        single::attach_standalone(&s, outbox.clone());
                        session = Some(s);
                    }
                }
            }
        }
    }
    engine.shutdown().await;
    drop((outbox, downlink));
    // Everything queued is written before returning (bounded, in case a
    // late message still holds the channel open).
    match tokio::time::timeout(std::time::Duration::from_secs(2), writer).await {
        Ok(Ok(result)) => result,
        _ => Ok(()),
    }
}

/// Before `initialize`, only `initialize` and `ping` are answered; anything
/// else gets an error (the 2026-era `server/discover` probe gets "method not
/// found", which makes dual-era clients fall back to `initialize`).
async fn before_initialize<H: Handler>(
    engine: &Arc<Engine<H>>,
    message: Message,
    outbox: &Outbox,
) -> Option<Arc<Session<H::State>>> {
    let Message::Request(request) = message else { return None };
    match request.method.as_str() {
        method::INITIALIZE => {
            let (session, response) = engine.initialize(request).await;
            send(outbox, &Message::Response(response));
            session
        }
        method::PING => {
            send(outbox, &Message::Response(Response::result(request.id, serde_json::json!({}))));
            None
        }
        method::SERVER_DISCOVER => {
            let e = ErrorObject::method_not_found(&request.method);
            send(outbox, &Message::Response(Response::error(Some(request.id), e)));
            None
        }
        _ => {
            let e = ErrorObject::new(codes::INVALID_REQUEST, "Invalid request: send initialize first");
            send(outbox, &Message::Response(Response::error(Some(request.id), e)));
            None
        }
    }
}

/// Decodes a line: a message, or a batch. Undecodable input is answered.
fn decode_line(line: &str, outbox: &Outbox) -> Vec<Message> {
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    let decoded: Vec<Result<Message, DecodeError>> = if line.starts_with('[') {
        match serde_json::from_str::<Vec<Value>>(line) {
            Ok(items) => items.into_iter().map(Message::from_value).collect(),
            Err(e) => vec![Err(DecodeError::Parse(e))],
        }
    } else {
        vec![Message::decode(line.as_bytes())]
    };
    decoded
        .into_iter()
        .filter_map(|m| m.inspect_err(|e| send(outbox, &Message::Response(e.to_response()))).ok())
        .collect()
}

fn send(outbox: &Outbox, message: &Message) {
    let _ = outbox.send(Arc::from(message.encode()));
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
