//! The stdio transport: an upstream MCP server as a child process speaking
//! newline-delimited JSON-RPC on stdin/stdout.
//!
//! The child runs in its own process group, so `npx`/`uvx` wrappers and
//! their grandchildren are signalled together. Its stderr is drained into the
//! log line by line (a full pipe would block it). Shutdown follows the spec:
//! close stdin, wait, SIGTERM, wait, SIGKILL.

use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::error::UpstreamError;
use super::peer::Peer;
use crate::config::UpstreamConfig;
use crate::jsonrpc::Message;

/// Longest line accepted from a child; a longer one ends the connection
/// rather than growing memory without bound.
const MAX_LINE: usize = 16 * 1024 * 1024;
/// Longest stderr line logged (the rest is cut).
const MAX_STDERR_LINE: usize = 8 * 1024;
/// Grace periods of the shutdown sequence.
const EXIT_GRACE: Duration = Duration::from_secs(2);
const TERM_GRACE: Duration = Duration::from_secs(2);

/// The environment children get unless `inherit_env` is set.
mod env;

/// The writing half of a child and the means to stop it.
pub(crate) struct StdioLink {
    label: Arc<str>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pgid: Option<Pid>,
    /// `Some(description)` once the child has exited.
    exit: watch::Receiver<Option<String>>,
}

/// A started child, before the peer that reads it exists.
pub(crate) struct Spawned {
    pub link: StdioLink,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

/// Starts the child process of a stdio upstream.
pub(crate) fn spawn(config: &UpstreamConfig, label: &Arc<str>) -> Result<Spawned, UpstreamError> {
    let program = config.command.as_deref().unwrap_or_default();
    let mut cmd = Command::new(program);
    cmd.args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if !config.inherit_env {
        cmd.env_clear();
        cmd.envs(env::inherited());
    }
    cmd.envs(&config.env);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|e| UpstreamError::Start {
        upstream: label.clone(),
        reason: format!("cannot run {program:?}: {e}"),
    })?;
    let pid = child.id();
    tracing::info!(upstream = %label, pid, command = %program, "started upstream process");
    let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => {
            return Err(UpstreamError::Start { upstream: label.clone(), reason: "child pipes unavailable".into() });
        }
    };
    let (exit_tx, exit) = watch::channel(None);
    // The waiter owns the child: it reaps it and publishes how it ended.
    tokio::spawn(async move {
        let status = match child.wait().await {
            Ok(s) => s.to_string(),
            Err(e) => format!("wait failed: {e}"),
        };
        let _ = exit_tx.send(Some(status));
    });
    let pgid = pid.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw);
    let link = StdioLink { label: label.clone(), stdin: tokio::sync::Mutex::new(Some(stdin)), pgid, exit };
    Ok(Spawned { link, stdout, stderr })
}

impl Spawned {
    /// Splits off the link and starts the tasks that read the child's stdout
    /// (into `peer`) and stderr (into the log).
    pub(crate) fn start(self, peer: Weak<Peer>) -> StdioLink {
        let label = self.link.label.clone();
        tokio::spawn(drain_stderr(self.stderr, label.clone()));
        tokio::spawn(read_stdout(self.stdout, peer, label, self.link.exit.clone()));
        self.link
    }
}

impl StdioLink {
    /// Writes one message as a line.
    pub(crate) async fn send(&self, message: &Message) -> Result<(), UpstreamError> {
        let mut line = message.encode().into_bytes();
        line.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(self.closed("stdin is closed"));
        };
        let written = async {
            pipe.write_all(&line).await?;
            pipe.flush().await
        };
        written.await.map_err(|e| self.closed(&format!("writing to stdin failed: {e}")))
    }

    fn closed(&self, reason: &str) -> UpstreamError {
        UpstreamError::Closed { upstream: self.label.clone(), reason: reason.into() }
    }

    /// Stops the child: close stdin, wait; SIGTERM the group, wait; SIGKILL.
    pub(crate) async fn shutdown(&self) {
        self.stdin.lock().await.take();
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

impl Drop for StdioLink {
    fn drop(&mut self) {
        // Dropped without a shutdown (e.g. the session vanished): make sure
        // the whole group goes, not just the direct child.
        self.signal(Signal::SIGKILL);
    }
}

async fn read_stdout(
    stdout: ChildStdout,
    peer: Weak<Peer>,
    label: Arc<str>,
    mut exit: watch::Receiver<Option<String>>,
) {
    let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE));
    let mut reason = None;
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                reason = Some(format!("sent a line longer than {MAX_LINE} bytes"));
                break;
            }
            Err(LinesCodecError::Io(e)) => {
                reason = Some(format!("reading stdout failed: {e}"));
                break;
            }
        };
        let Some(peer) = peer.upgrade() else { return };
        for message in decode_line(&line, &label) {
            peer.dispatch(message, None);
        }
    }
    // Stdout is done; give the child a moment to exit so the log says how.
    let status = match tokio::time::timeout(EXIT_GRACE, exit.wait_for(Option::is_some)).await {
        Ok(Ok(status)) => status.clone().map(|s| format!("exited ({s})")),
        _ => None,
    };
    let reason = reason.or(status).unwrap_or_else(|| "closed its stdout".into());
    if let Some(peer) = peer.upgrade() {
        peer.close(&reason);
    }
}

/// Decodes one stdout line: a message, or a 2025-03-26 batch. Lines that are
/// not JSON-RPC (hot-reload banners and the like) are logged and skipped,
/// as the official SDKs do.
fn decode_line(line: &str, label: &str) -> Vec<Message> {
    let line = line.trim();
    if line.is_empty() {
        return Vec::new();
    }
    if line.starts_with('[') {
        return match serde_json::from_str::<Vec<Value>>(line) {
            Ok(items) => items
                .into_iter()
                .filter_map(|v| Message::from_value(v).inspect_err(|e| skipped(label, line, e)).ok())
                .collect(),
            Err(e) => {
                skipped(label, line, &e);
                Vec::new()
            }
        };
    }
    match Message::decode(line.as_bytes()) {
        Ok(m) => vec![m],
        Err(e) => {
            skipped(label, line, &e);
            Vec::new()
        }
    }
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
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_not_json_rpc_are_skipped() {
        assert!(decode_line("", "t").is_empty());
        assert!(decode_line("Server started on stdio", "t").is_empty());
        assert_eq!(decode_line(r#"{"jsonrpc":"2.0","method":"x"}"#, "t").len(), 1);
        let batch = r#"[{"jsonrpc":"2.0","method":"a"},{"bad":1},{"jsonrpc":"2.0","id":1,"result":{}}]"#;
        assert_eq!(decode_line(batch, "t").len(), 2);
    }
}
