//! The gateway's test harness: the real `toolgate` binary on a free
//! loopback port, configuration snippets for its upstreams, and the Python
//! SDK peers. The raw Streamable HTTP client, process helpers and the
//! workspace's other binaries come from `toolgate-test-support`, re-exported
//! here.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::process::Command;
pub use toolgate_test_support::*;

pub fn toolgate_exe() -> &'static str {
    env!("CARGO_BIN_EXE_toolgate")
}

pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The Python interpreter with the `mcp` SDK (set by tests/run.sh).
pub fn python() -> String {
    std::env::var("TOOLGATE_TEST_PYTHON").unwrap_or_else(|_| {
        let venv = repo_path("target/test-venv/bin/python");
        assert!(
            venv.exists(),
            "the Python test peers are not installed: run tests/run.sh (or set TOOLGATE_TEST_PYTHON)"
        );
        venv.display().to_string()
    })
}

/// TOML for a stdio upstream.
pub fn stdio_upstream(name: &str, command: &str, args: &[&str], extra: &str) -> String {
    let args = args.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(", ");
    format!("[[upstream]]\nname = {name:?}\ncommand = {command:?}\nargs = [{args}]\n{extra}\n")
}

/// TOML for the project's fixture server as a stdio upstream.
pub fn fixture_upstream(name: &str, args: &[&str], extra: &str) -> String {
    stdio_upstream(name, fixture_exe(), args, extra)
}

/// TOML for a Streamable HTTP upstream.
pub fn http_upstream(name: &str, url: &str, extra: &str) -> String {
    format!("[[upstream]]\nname = {name:?}\nurl = {url:?}\n{extra}\n")
}

/// Serves `app` on a free loopback port until the returned sender fires or
/// is dropped; returns the URL of its `/mcp` path (a scripted upstream's).
pub async fn serve_mcp_app(app: axum::Router) -> Result<(String, tokio::sync::oneshot::Sender<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    Ok((url, stop))
}

/// TOML for an `[[auth.clients]]` entry: `name`, its API key, and `policy`
/// (more keys of the entry, one per line, or nothing).
pub fn client_entry(name: &str, key: &str, policy: &str) -> String {
    format!("[[auth.clients]]\nname = \"{name}\"\napi_key = \"{key}\"\n{policy}\n")
}

/// A running toolgate.
pub struct Toolgate {
    pub proc: Proc,
    pub url: String,
    pub config_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Toolgate {
    /// Starts toolgate with `upstreams` (TOML `[[upstream]]` blocks) and any
    /// extra top-level TOML (e.g. a `[disclosure]` table), on a free port.
    pub async fn start(upstreams: &str) -> Result<Toolgate> {
        Self::start_with(upstreams, "").await
    }

    pub async fn start_with(upstreams: &str, sections: &str) -> Result<Toolgate> {
        let server =
            if sections.contains("[server]") { String::new() } else { "[server]\nlisten = \"127.0.0.1:0\"\n".into() };
        let config = format!("{server}{sections}\n{upstreams}");
        Self::start_raw(&config).await
    }

    /// Starts toolgate with exactly this configuration text.
    pub async fn start_raw(config: &str) -> Result<Toolgate> {
        Self::start_raw_env(config, &[]).await
    }

    /// As [`Toolgate::start_raw`], with these environment variables set.
    pub async fn start_raw_env(config: &str, env: &[(&str, &str)]) -> Result<Toolgate> {
        let dir = tempfile::tempdir()?;
        let config_path = dir.path().join("toolgate.toml");
        std::fs::write(&config_path, config)?;
        let mut child = Command::new(toolgate_exe())
            .args(["serve", "--config"])
            .arg(&config_path)
            .envs(env.iter().copied())
            .env("TOOLGATE_LOG", std::env::var("TOOLGATE_TEST_LOG").unwrap_or_else(|_| "info,toolgate=debug".into()))
            .env_remove("TOOLGATE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting toolgate")?;
        let logs = Arc::new(Mutex::new(String::new()));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        collect_stderr(&mut child, logs.clone(), Some(tx));
        let proc = Proc { child, logs };
        let url = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = rx.recv().await {
                if let Some(at) = line.find("listening on ") {
                    return Some(line[at + "listening on ".len()..].trim().to_owned());
                }
            }
            None
        })
        .await
        .map_err(|_| anyhow!("toolgate did not start listening; logs:\n{}", proc.logs()))?
        .ok_or_else(|| anyhow!("toolgate exited before listening; logs:\n{}", proc.logs()))?;
        Ok(Toolgate { proc, url, config_path, _dir: dir })
    }

    pub fn client(&self) -> Client {
        Client::new(&self.url)
    }

    pub fn logs(&self) -> String {
        self.proc.logs()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        url::Url::parse(&self.url).ok().and_then(|u| u.port()).unwrap_or(0)
    }

    /// Kills the process and waits until it is gone (its port is free again).
    pub async fn kill(&mut self) -> Result<()> {
        self.proc.child.kill().await.context("killing toolgate")
    }

    /// Waits until the logs contain `needle`.
    pub async fn wait_log(&self, needle: &str, within: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if self.logs().contains(needle) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("log line {needle:?} did not appear; logs:\n{}", self.logs())
    }
}

/// The Python SDK upstream over Streamable HTTP.
pub async fn python_http_upstream() -> Result<(Proc, String)> {
    let script = repo_path("tests/python/upstream_server.py").display().to_string();
    start_http_server(&python(), &[&script, "http", "--port", "0"]).await
}

/// Runs the Python SDK client (`tests/python/client_probe.py`) against `url`
/// with `args` (e.g. `["--mode", "legacy"]`) and the JSON list of `steps`;
/// returns its report (see the script's docstring).
pub async fn client_probe(url: &str, args: &[&str], steps: &Value) -> Result<Value> {
    let script = repo_path("tests/python/client_probe.py");
    let run = Command::new(python())
        .arg(&script)
        .args(["--url", url])
        .args(args)
        .arg(steps.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(START_TIMEOUT, run).await.map_err(|_| anyhow!("client_probe.py hung"))??;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!("client_probe.py failed ({}): {stderr}", output.status);
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("client_probe.py printed no report; stderr:\n{stderr}"))
}

/// What a client of the gateway reads besides plain MCP.
pub trait GatewayClient {
    /// Reads the descriptions resource; returns the parsed JSON body.
    async fn read_descriptions(&self, tools: &str) -> Result<Value>;
}

impl GatewayClient for Client {
    async fn read_descriptions(&self, tools: &str) -> Result<Value> {
        let uri = if tools.is_empty() {
            "resource:///tool_descriptions".to_owned()
        } else {
            format!("resource:///tool_descriptions?tools={tools}")
        };
        let result = self.result("resources/read", json!({"uri": uri})).await?;
        let text = result["contents"][0]["text"].as_str().ok_or_else(|| anyhow!("no text content: {result}"))?;
        Ok(serde_json::from_str(text)?)
    }
}
