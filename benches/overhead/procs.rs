//! The processes under test: the fixture upstream, toolgate and the floor's
//! bare forwarders, started on loopback ports, and what the benchmark reads
//! about them from `/proc` (CPU time, resident memory) or does to them (CPU
//! pinning).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Stderr lines kept for error reports.
const LOG_LINES: usize = 40;

/// Where the binaries under test are.
#[derive(Debug, Clone)]
pub struct Bins {
    pub toolgate: PathBuf,
    pub fixture: PathBuf,
    /// The floor's bare forwarders (crates/bench-floor): HTTP leg, stdio leg.
    pub floor_http: PathBuf,
    pub floor_stdio: PathBuf,
    /// Start every process pinned to this CPU list (`taskset -c`), so it
    /// sizes its thread pool for what it may use.
    pub pin: Option<String>,
}

impl Bins {
    /// `TOOLGATE_BENCH_BIN_DIR` (set by `benches/run.sh` to the plain
    /// `cargo build --profile optimized` binaries), else the ones cargo built for
    /// this bench. The floor's forwarders are taken from
    /// `TOOLGATE_BENCH_FLOOR_DIR` if set (e.g. to run an older toolgate
    /// against today's floor), else from the same place.
    pub fn locate() -> Result<Bins> {
        let floor_dir = std::env::var_os("TOOLGATE_BENCH_FLOOR_DIR").map(PathBuf::from);
        let bins = match std::env::var_os("TOOLGATE_BENCH_BIN_DIR") {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                let floor_dir = floor_dir.unwrap_or_else(|| dir.clone());
                Bins {
                    toolgate: dir.join("toolgate"),
                    fixture: dir.join("toolgate-fixture"),
                    floor_http: floor_dir.join("toolgate-floor-http"),
                    floor_stdio: floor_dir.join("toolgate-floor-stdio"),
                    pin: None,
                }
            }
            // The fixture and the floor are other packages' binaries: they sit
            // beside this bench's own, once the workspace's binaries are built.
            None => {
                let floor = |name: &str| match &floor_dir {
                    Some(dir) => Ok(dir.join(name)),
                    None => toolgate_test_support::workspace_exe(name),
                };
                Bins {
                    toolgate: PathBuf::from(env!("CARGO_BIN_EXE_toolgate")),
                    fixture: toolgate_test_support::workspace_exe("toolgate-fixture")?,
                    floor_http: floor("toolgate-floor-http")?,
                    floor_stdio: floor("toolgate-floor-stdio")?,
                    pin: None,
                }
            }
        };
        for exe in [&bins.toolgate, &bins.fixture, &bins.floor_http, &bins.floor_stdio] {
            if !exe.is_file() {
                bail!("{} not found (build with `cargo build --release --workspace --bins`)", exe.display());
            }
        }
        Ok(bins)
    }
}

/// A child process with its stderr drained (a full pipe would block it).
pub struct Proc {
    child: Child,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// The last lines it wrote on stderr.
    pub fn log_tail(&self) -> String {
        self.log.lock().iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// SIGTERM, then SIGKILL if it lingers (toolgate stops its stdio
    /// children on SIGTERM; a SIGKILL would orphan them).
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// Spawns `program` and returns it once a line of `stream` contains
/// `marker`, with the text after the marker and the time since the spawn.
#[allow(clippy::too_many_arguments)]
async fn spawn_until(
    name: &str,
    pin: Option<&str>,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    marker: &str,
    on_stdout: bool,
) -> Result<(Proc, String, Duration)> {
    let started = Instant::now();
    let mut command = match pin {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(program);
            c
        }
        None => Command::new(program),
    };
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
        .env_remove("TOOLGATE_CONFIG")
        .stdin(Stdio::null())
        .stdout(if on_stdout { Stdio::piped() } else { Stdio::null() })
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let log: Arc<Mutex<VecDeque<String>>> = Arc::default();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stderr = child.stderr.take().context("stderr")?;
    {
        let (log, tx) = (log.clone(), tx.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if !on_stdout {
                    let _ = tx.send(line.clone());
                }
                let mut log = log.lock();
                if log.len() == LOG_LINES {
                    log.pop_front();
                }
                log.push_back(line);
            }
        });
    }
    if on_stdout {
        let stdout = child.stdout.take().context("stdout")?;
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send(line);
            }
        });
    } else {
        drop(tx);
    }
    let proc = Proc { child, log };
    let found = tokio::time::timeout(START_TIMEOUT, async {
        while let Some(line) = rx.recv().await {
            if let Some(at) = line.find(marker) {
                return Some(line[at + marker.len()..].trim().to_owned());
            }
        }
        None
    })
    .await;
    let elapsed = started.elapsed();
    match found {
        Ok(Some(rest)) => Ok((proc, rest, elapsed)),
        Ok(None) => Err(anyhow!("{name} exited before {marker:?}; stderr:\n{}", proc.log_tail())),
        Err(_) => Err(anyhow!("{name} did not print {marker:?} in time; stderr:\n{}", proc.log_tail())),
    }
}

/// The fixture serving Streamable HTTP on a free loopback port.
pub async fn fixture_http(bins: &Bins, extra_args: &[&str]) -> Result<(Proc, String)> {
    let mut args = vec!["--http", "127.0.0.1:0"];
    args.extend_from_slice(extra_args);
    let (proc, url, _) =
        spawn_until("fixture", bins.pin.as_deref(), &bins.fixture, &args, &[], "LISTENING ", true).await?;
    Ok((proc, url))
}

/// One of the floor's bare forwarders (crates/bench-floor) on a free
/// loopback port, in front of `upstream` (the fixture's URL for the HTTP
/// leg; the fixture's command for the stdio leg, which it starts itself).
pub async fn floor(bins: &Bins, name: &str, program: &Path, upstream: &[&str]) -> Result<(Proc, String)> {
    let (proc, url, _) = spawn_until(name, bins.pin.as_deref(), program, upstream, &[], "LISTENING ", true).await?;
    Ok((proc, url))
}

/// A running toolgate and its configuration directory.
pub struct Toolgate {
    pub proc: Proc,
    pub url: String,
    /// Spawn to the `listening on` log line.
    pub startup: Duration,
    _dir: tempfile::TempDir,
}

impl Toolgate {
    /// Starts toolgate on a free loopback port with these `[[upstream]]` blocks.
    pub async fn start(bins: &Bins, name: &str, upstreams: &str) -> Result<Toolgate> {
        Self::start_on(bins, name, "127.0.0.1:0", upstreams).await
    }

    /// Starts toolgate listening on `listen` with this configuration after
    /// `[server] listen` (so it may begin with more `[server]` keys).
    pub async fn start_on(bins: &Bins, name: &str, listen: &str, upstreams: &str) -> Result<Toolgate> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("toolgate.toml");
        std::fs::write(&config, format!("[server]\nlisten = {listen:?}\n\n{upstreams}"))?;
        let config = config.display().to_string();
        // Info for the `listening on` line; nothing logs at info per request.
        let env = [("TOOLGATE_LOG", "warn,toolgate=info")];
        let args = ["serve", "--config", &config];
        let (proc, url, startup) =
            spawn_until(name, bins.pin.as_deref(), &bins.toolgate, &args, &env, "listening on ", false).await?;
        Ok(Toolgate { proc, url, startup, _dir: dir })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    pub async fn stop(self) {
        self.proc.stop().await;
    }
}

/// TOML for a stdio upstream.
pub fn stdio_upstream(command: &Path, args: &[&str], sharing: &str) -> String {
    let args = args.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "[[upstream]]\nname = \"fx\"\ncommand = {:?}\nargs = [{args}]\nsharing = {sharing:?}\n{}",
        command.display().to_string(),
        protocol_line()
    )
}

/// TOML for a Streamable HTTP upstream.
pub fn http_upstream(url: &str, sharing: &str) -> String {
    format!("[[upstream]]\nname = \"fx\"\nurl = {url:?}\nsharing = {sharing:?}\n{}", protocol_line())
}

/// The upstream's `protocol` from `TOOLGATE_BENCH_UPSTREAM_PROTOCOL` (default:
/// toolgate's own default, `auto`, which finds the fixture's 2026-07-28 era).
fn protocol_line() -> String {
    std::env::var("TOOLGATE_BENCH_UPSTREAM_PROTOCOL").map(|p| format!("protocol = {p:?}\n")).unwrap_or_default()
}

// === /proc ===

/// Clock ticks per second of `/proc/<pid>/stat` times.
pub fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// utime + stime of a process (all its threads, live or ended), in ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces or parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the whole line are 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Resident memory (VmRSS) in bytes.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Pins the calling thread to `cpus` (with `taskset`, by thread id).
pub fn pin_this_thread(cpus: &str) -> Result<()> {
    let link = std::fs::read_link("/proc/thread-self").context("reading /proc/thread-self")?;
    let tid = link.file_name().and_then(|n| n.to_str()).context("no thread id")?.to_owned();
    let out = std::process::Command::new("taskset")
        .args(["-p", "-c", cpus, &tid])
        .output()
        .context("running taskset (util-linux)")?;
    if !out.status.success() {
        bail!("taskset -p -c {cpus} {tid} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}
