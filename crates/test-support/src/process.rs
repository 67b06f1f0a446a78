//! Child processes under test: stderr collected (and echoed with
//! `TOOLGATE_TEST_ECHO`), stopped when dropped, and servers that announce
//! their URL with a `LISTENING <url>` line on stdout.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long to wait for a process to come up.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A process whose stderr is collected (and whose stdout may be read).
pub struct Proc {
    /// The process (killed on drop).
    pub child: Child,
    /// Its stderr so far.
    pub logs: Arc<Mutex<String>>,
}

impl Proc {
    /// Its stderr so far.
    pub fn logs(&self) -> String {
        self.logs.lock().clone()
    }

    /// Its process id (0 once it exited).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
        }
        let _ = self.child.start_kill();
    }
}

/// Appends a child's stderr lines to `logs` (echoed with
/// `TOOLGATE_TEST_ECHO`) and, if given, sends each line to `notify`.
pub fn collect_stderr(
    child: &mut Child,
    logs: Arc<Mutex<String>>,
    notify: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) {
    let stderr = child.stderr.take().expect("stderr piped");
    toolgate_mcp::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if std::env::var_os("TOOLGATE_TEST_ECHO").is_some() {
                eprintln!("[proc] {line}");
            }
            logs.lock().push_str(&line);
            logs.lock().push('\n');
            if let Some(tx) = &notify {
                let _ = tx.send(line);
            }
        }
    });
}

/// Starts `program` with `args`, its stderr collected, and returns it with
/// the lines of its stdout (where it reports that it is ready).
pub fn start_reporting(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Result<(Proc, StdoutLines)> {
    let shown = program.as_ref().to_string_lossy().into_owned();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {shown}"))?;
    let logs = Arc::new(Mutex::new(String::new()));
    collect_stderr(&mut child, logs.clone(), None);
    let stdout = child.stdout.take().expect("stdout piped");
    Ok((Proc { child, logs }, BufReader::new(stdout).lines()))
}

/// The lines a started process writes on stdout.
pub type StdoutLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// Starts a Streamable HTTP server process that prints `LISTENING <url>` on
/// stdout, and returns it with that URL.
pub async fn start_http_server(program: &str, args: &[&str]) -> Result<(Proc, String)> {
    let (proc, mut lines) = start_reporting(program, args)?;
    let url = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("LISTENING ") {
                return Some(url.trim().to_owned());
            }
        }
        None
    })
    .await
    .map_err(|_| anyhow!("{program} did not report LISTENING; logs:\n{}", proc.logs()))?
    .ok_or_else(|| anyhow!("{program} exited early; logs:\n{}", proc.logs()))?;
    Ok((proc, url))
}
