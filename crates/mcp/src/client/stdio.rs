//! The stdio transport: an upstream MCP server as a child process speaking
//! newline-delimited JSON-RPC on stdin/stdout.
//!
//! The child runs in its own process group, so `npx`/`uvx` wrappers and
//! their grandchildren are signalled together. Its stderr is drained into the
//! log line by line (a full pipe would block it). Shutdown follows the spec:
//! close stdin, wait, SIGTERM, wait, SIGKILL.

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use http::HeaderMap;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use parking_lot::Mutex;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, watch};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::error::{Cause, UpstreamError};
use super::target::StdioTarget;
use super::transport::{Inbox, Transport};
use crate::jsonrpc::{Body, Message, Response};

/// Longest stderr line logged (the rest is cut).
const MAX_STDERR_LINE: usize = 8 * 1024;
/// Grace periods of the shutdown sequence.
const EXIT_GRACE: Duration = Duration::from_secs(2);
const TERM_GRACE: Duration = Duration::from_secs(2);
/// Lines queued for the child's stdin. A child that stops reading fills the
/// queue, and senders then wait (inside their call's deadline) instead of
/// growing memory.
const QUEUE: usize = 64;
/// Queued lines taken at once by the writer, and the most bytes of them
/// joined into one write (a pipe's default capacity).
const BURST: usize = QUEUE;
const JOIN: usize = 64 * 1024;
/// The longest write a pipe takes whole or not at all (POSIX `PIPE_BUF`,
/// 4096 on Linux): a line this short is written by its caller at once when
/// the pipe has room ([`Pipe::try_write`]).
const PIPE_BUF: usize = 4096;

/// The environment children get unless `inherit_env` is set.
mod env;
mod orphan;

/// A child process as a transport: lines to its stdin, lines from its stdout.
pub(crate) struct StdioTransport {
    label: Arc<str>,
    /// Lines for the writer task; taken on shutdown, which closes stdin once
    /// the queue is written.
    lines: Mutex<Option<mpsc::Sender<Bytes>>>,
    /// The child's stdin, written by the writer task and, for a short line
    /// when nothing is queued, by the caller itself.
    pipe: Arc<Pipe<ChildStdin>>,
    pgid: Option<Pid>,
    /// `Some(description)` once the child has exited.
    exit: watch::Receiver<Option<String>>,
}

/// A started child, before the peer that reads it exists.
pub(crate) struct Spawned {
    transport: StdioTransport,
    stdout: ChildStdout,
    stderr: ChildStderr,
    /// Longest stdout line accepted (`max_message_bytes`); a longer one ends
    /// the connection rather than growing memory without bound.
    max_line: usize,
}

/// Why a child could not be started.
#[derive(Debug, thiserror::Error)]
enum SpawnError {
    #[error("cannot run {program:?}")]
    Run {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the child's pipes are unavailable")]
    Pipes,
}

/// Starts the child process of a stdio upstream.
pub(crate) fn spawn(target: &StdioTarget, label: &Arc<str>) -> Result<Spawned, UpstreamError> {
    let start_error = |e: SpawnError| UpstreamError::Start { upstream: label.clone(), source: Cause::new(e) };
    let program = target.program.as_str();
    let mut cmd = Command::new(program);
    cmd.args(&target.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    orphan::die_with_parent(&mut cmd);
    if !target.inherit_env {
        cmd.env_clear();
        cmd.envs(env::inherited());
    }
    cmd.envs(&target.env);
    if let Some(cwd) = &target.cwd {
        cmd.current_dir(cwd);
    }
    let mut child =
        cmd.spawn().map_err(|source| start_error(SpawnError::Run { program: program.to_owned(), source }))?;
    let pid = child.id();
    tracing::info!(upstream = %label, pid, command = %program, "started upstream process");
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(start_error(SpawnError::Pipes));
    };
    let (exit_tx, exit) = watch::channel(None);
    // The waiter owns the child: it reaps it and publishes how it ended.
    crate::spawn(async move {
        let status = match child.wait().await {
            Ok(s) => s.to_string(),
            Err(e) => format!("wait failed: {e}"),
        };
        let _ = exit_tx.send(Some(status));
    });
    let pgid = pid.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw);
    let pipe = Arc::new(Pipe::new(stdin));
    let transport = StdioTransport { label: label.clone(), lines: Mutex::new(None), pipe, pgid, exit };
    Ok(Spawned { transport, stdout, stderr, max_line: target.max_message_bytes })
}

impl Spawned {
    /// Starts the tasks that write the child's stdin, read its stdout (into
    /// `inbox`) and its stderr (into the log), and returns the transport.
    pub(crate) fn start(self, inbox: Weak<dyn Inbox>) -> StdioTransport {
        let Spawned { transport, stdout, stderr, max_line } = self;
        let label = transport.label.clone();
        let (lines, queue) = mpsc::channel(QUEUE);
        *transport.lines.lock() = Some(lines);
        crate::spawn(write_stdin(transport.pipe.clone(), queue, label.clone()));
        crate::spawn(drain_stderr(stderr, label.clone()));
        crate::spawn(read_stdout(stdout, inbox, label, transport.exit.clone(), max_line));
        transport
    }
}

impl StdioTransport {
    /// Sends one encoded message as a line: written at once when it can be
    /// ([`Pipe::try_write`]), else queued for the writer task (waits while
    /// the queue is full).
    async fn queue(&self, text: Vec<u8>) -> Result<(), UpstreamError> {
        let mut line = text;
        line.push(b'\n');
        if self.lines.lock().is_none() {
            return Err(self.closed("stdin is closed"));
        }
        let line = match self.pipe.try_write(line) {
            Ok(()) => return Ok(()),
            Err(line) => line,
        };
        let Some(lines) = self.lines.lock().clone() else {
            return Err(self.closed("stdin is closed"));
        };
        let queued = Queued::new(&self.pipe);
        lines.send(Bytes::from(line)).await.map_err(|_| self.closed("writing to stdin failed"))?;
        queued.sent();
        Ok(())
    }

    fn closed(&self, reason: &str) -> UpstreamError {
        UpstreamError::Closed { upstream: self.label.clone(), source: Cause::msg(reason) }
    }

    async fn wait_exit(&self, grace: Duration) -> bool {
        let mut exit = self.exit.clone();
        tokio::time::timeout(grace, exit.wait_for(Option::is_some)).await.is_ok()
    }

    fn has_exited(&self) -> bool {
        self.exit.borrow().is_some()
    }

    fn signal(&self, signal: Signal) {
        // Only while the child is unreaped: its pid could be reused after.
        if let (Some(pgid), false) = (self.pgid, self.has_exited()) {
            let _ = killpg(pgid, signal);
        }
    }
}

impl Transport for StdioTransport {
    // A request is a line like any other; sent here rather than through the
    // default (a future awaiting `send_text`'s), it costs one box, not two.
    fn request<'a>(
        &'a self,
        _call: u64,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        Box::pin(async move { self.queue(message.encode().into_bytes()).await.map(|()| None) })
    }

    fn request_modern<'a>(
        &'a self,
        _call: u64,
        _message: &'a Message,
        text: Vec<u8>,
        _headers: HeaderMap,
    ) -> BoxFuture<'a, Result<Option<Response>, UpstreamError>> {
        Box::pin(async move { self.queue(text).await.map(|()| None) })
    }

    fn send_text<'a>(&'a self, _message: &'a Message, text: Vec<u8>) -> BoxFuture<'a, Result<(), UpstreamError>> {
        Box::pin(self.queue(text))
    }

    /// Stops the child: close stdin, wait; SIGTERM the group, wait; SIGKILL.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // The writer closes stdin once it has written what is queued.
            self.lines.lock().take();
            if self.wait_exit(EXIT_GRACE).await {
                return;
            }
            self.signal(Signal::SIGTERM);
            if self.wait_exit(TERM_GRACE).await {
                return;
            }
            tracing::warn!(upstream = %self.label, "upstream ignored SIGTERM; killing it");
            self.signal(Signal::SIGKILL);
            self.wait_exit(TERM_GRACE).await;
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Dropped without a shutdown (e.g. the session vanished): make sure
        // the whole group goes, not just the direct child.
        self.signal(Signal::SIGKILL);
    }
}

/// The child's stdin, shared by the writer task and the callers.
///
/// A caller's line would otherwise cost a hand-off: a queue send and a
/// wake-up of the writer task, on every call. So a line of at most
/// [`PIPE_BUF`] bytes is written by its caller when nothing is queued and no
/// one is writing, in one non-blocking write, which a pipe takes whole or
/// not at all: a call given up meanwhile cannot leave half a line behind.
/// Anything else goes through the queue, whose writer joins the lines that
/// come together. Lines leave in the order they were sent: a caller writes
/// itself only while no line is queued or being written.
struct Pipe<W> {
    /// `None` once closed (the queue ended, or a write failed).
    stdin: Arc<tokio::sync::Mutex<Option<W>>>,
    /// Lines queued and not yet written (counted before they are sent).
    queued: AtomicUsize,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Pipe<W> {
    fn new(stdin: W) -> Self {
        Pipe { stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))), queued: AtomicUsize::new(0) }
    }

    /// Writes `line` now if it can: it is short, nothing is queued, no one
    /// is writing, and the pipe has room. Otherwise hands it back, unwritten,
    /// for the queue.
    fn try_write(&self, line: Vec<u8>) -> Result<(), Vec<u8>> {
        if line.len() > PIPE_BUF || self.queued.load(Ordering::Acquire) != 0 {
            return Err(line);
        }
        let Ok(mut stdin) = self.stdin.clone().try_lock_owned() else { return Err(line) };
        // Checked again under the lock: the writer counts a burst as written
        // only once it has written it, holding the lock.
        if self.queued.load(Ordering::Acquire) != 0 {
            return Err(line);
        }
        let Some(pipe) = stdin.as_mut() else { return Err(line) };
        // One attempt, never waited on: `Pending` (a full pipe) leaves the
        // line to the writer, which waits for room.
        let mut cx = Context::from_waker(Waker::noop());
        match std::pin::Pin::new(pipe).poll_write(&mut cx, &line) {
            Poll::Ready(Ok(n)) if n == line.len() => Ok(()),
            Poll::Ready(Ok(n)) if n > 0 => {
                // A pipe does not split a write this short; should something
                // else, the rest is written by a task of its own holding the
                // lock, which no caller can give up half way.
                let rest = line[n..].to_vec();
                crate::spawn(async move {
                    if let Some(pipe) = stdin.as_mut()
                        && pipe.write_all(&rest).await.is_err()
                    {
                        stdin.take();
                    }
                });
                Ok(())
            }
            // Nothing written: a full pipe, or an error the writer will meet.
            _ => Err(line),
        }
    }
}

/// A line counted as queued ([`Pipe::queued`]) until it is sent: a send
/// given up (its call was cancelled while the queue was full) uncounts it.
struct Queued<'a> {
    queued: Option<&'a AtomicUsize>,
}

impl<'a> Queued<'a> {
    fn new<W>(pipe: &'a Pipe<W>) -> Self {
        pipe.queued.fetch_add(1, Ordering::AcqRel);
        Queued { queued: Some(&pipe.queued) }
    }

    /// The line is in the queue: the writer uncounts it once written.
    fn sent(mut self) {
        self.queued = None;
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let Some(queued) = self.queued {
            queued.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Writes queued lines to the child's stdin until the queue closes (then
/// stdin closes) or a write fails (the child stopped reading).
async fn write_stdin(pipe: Arc<Pipe<ChildStdin>>, queue: mpsc::Receiver<Bytes>, label: Arc<str>) {
    if let Err(e) = write_lines(&pipe, queue).await {
        tracing::debug!(upstream = %label, error = %e, "writing to stdin failed");
    }
}

/// Writes each burst of queued lines with as few writes as it can: the pipe
/// is unbuffered, so each write is a syscall and a wake-up of the child.
/// Lines queued together (calls in flight at once) are joined into one write
/// of up to `JOIN` bytes; a longer line is written on its own, uncopied.
/// tokio's `BufWriter` joins the same way, but holds its whole buffer from
/// the start, for every child (one per session with `sharing =
/// "per_session"`), and copies even a lone line; this buffer grows only
/// when lines come together. When the queue ends, or a write fails, stdin
/// is closed.
async fn write_lines<W: AsyncWrite + Unpin>(pipe: &Pipe<W>, mut queue: mpsc::Receiver<Bytes>) -> std::io::Result<()> {
    let mut burst = Vec::with_capacity(BURST);
    let mut joined = Vec::new();
    while queue.recv_many(&mut burst, BURST).await > 0 {
        let mut stdin = pipe.stdin.lock().await;
        let Some(out) = stdin.as_mut() else { return Ok(()) };
        if let Err(e) = write_burst(out, &burst, &mut joined).await {
            stdin.take();
            return Err(e);
        }
        pipe.queued.fetch_sub(burst.len(), Ordering::AcqRel);
        burst.clear();
    }
    pipe.stdin.lock().await.take();
    Ok(())
}

/// One burst of [`write_lines`].
async fn write_burst<W: AsyncWrite + Unpin>(out: &mut W, burst: &[Bytes], joined: &mut Vec<u8>) -> std::io::Result<()> {
    if let [line] = burst {
        return out.write_all(line).await;
    }
    for line in burst {
        if joined.len() + line.len() > JOIN && !joined.is_empty() {
            out.write_all(joined).await?;
            joined.clear();
        }
        if line.len() > JOIN {
            out.write_all(line).await?;
        } else {
            joined.extend_from_slice(line);
        }
    }
    if !joined.is_empty() {
        out.write_all(joined).await?;
        joined.clear();
    }
    joined.shrink_to(JOIN);
    Ok(())
}

async fn read_stdout(
    stdout: ChildStdout,
    inbox: Weak<dyn Inbox>,
    label: Arc<str>,
    mut exit: watch::Receiver<Option<String>>,
    max_line: usize,
) {
    let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(max_line));
    let mut reason = None;
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                reason = Some(format!("sent a line longer than {max_line} bytes (max_message_bytes)"));
                break;
            }
            Err(LinesCodecError::Io(e)) => {
                reason = Some(format!("reading stdout failed: {e}"));
                break;
            }
        };
        let Some(inbox) = inbox.upgrade() else { return };
        for message in decode_line(&line, &label) {
            inbox.deliver(message, None);
        }
    }
    // Stdout is done; give the child a moment to exit so the log says how.
    let status = match tokio::time::timeout(EXIT_GRACE, exit.wait_for(Option::is_some)).await {
        Ok(Ok(status)) => status.clone().map(|s| format!("exited ({s})")),
        _ => None,
    };
    let reason = reason.or(status).unwrap_or_else(|| "closed its stdout".into());
    if let Some(inbox) = inbox.upgrade() {
        inbox.close(&reason);
    }
}

/// Decodes one stdout line: a message, or a 2025-03-26 batch. Lines (and
/// batch elements) that are not JSON-RPC, such as hot-reload banners, are
/// logged and skipped, as the official SDKs do.
fn decode_line<'a>(line: &'a str, label: &'a str) -> impl Iterator<Item = Message> + 'a {
    let line = line.trim();
    let body = match line.is_empty() {
        true => None,
        false => Body::decode(line.as_bytes()).map_err(|e| skipped(label, line, &e)).ok(),
    };
    body.into_iter().flat_map(move |body| body.into_messages(move |e| skipped(label, line, &e)))
}

fn skipped(label: &str, line: &str, error: &dyn std::fmt::Display) {
    let shown: String = line.chars().take(200).collect();
    tracing::warn!(upstream = %label, %error, line = %shown, "ignoring a stdout line that is not JSON-RPC");
}

async fn drain_stderr(stderr: ChildStderr, label: Arc<str>) {
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(MAX_STDERR_LINE));
    loop {
        match lines.next().await {
            Some(Ok(line)) => {
                if !line.trim().is_empty() {
                    tracing::info!(target: "toolgate::upstream::stderr", upstream = %label, "{line}");
                }
            }
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                tracing::info!(target: "toolgate::upstream::stderr", upstream = %label, "(stderr line longer than {MAX_STDERR_LINE} bytes; no longer logging this upstream's stderr)");
                // The codec stops after an error, but the pipe must keep
                // draining or the child blocks on a full pipe.
                let mut rest = lines.into_inner();
                let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
                return;
            }
            Some(Err(LinesCodecError::Io(_))) | None => return,
        }
    }
}

#[cfg(test)]
mod tests;
