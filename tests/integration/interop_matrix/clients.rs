//! The client stacks that drive toolgate, over each downstream transport, all
//! reporting in the format of tests/python/client_probe.py so one checker
//! judges them:
//!
//! - the Python SDK (`mcp` 2.3.0) through tests/python/client_probe.py;
//! - the TypeScript SDK (`@modelcontextprotocol/sdk`) through
//!   tests/node/client_probe.mjs;
//! - the MCP Inspector (its v2 client): `mcpdo`, its connection CLI, holds one
//!   session in a private daemon across commands, so the whole workflow runs
//!   in one session; `inspector --cli` makes one-shot calls;
//! - in the 2026-07-28 era: the Python SDK in its explicit `2026-07-28` mode
//!   (no `server/discover` probe) and the TypeScript SDK v2
//!   (`@modelcontextprotocol/client`) pinned to 2026-07-28, through the same
//!   two scripts.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::process::Command;

use super::peers::{node_modules, node22};
use crate::common::{Toolgate, python, repo_path, toolgate_exe};

/// How long one client process may take (a whole probe script, or one
/// Inspector command).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(45);

/// A downstream transport of toolgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `/mcp`.
    Http,
    /// Legacy HTTP+SSE: `GET /sse`, then `POST /messages?sessionId=`.
    Sse,
    /// `toolgate stdio`, launched by the client.
    Stdio,
}

impl Transport {
    /// The name the clients' `--transport` flags use.
    pub fn flag(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Stdio => "stdio",
        }
    }
}

/// Where a client finds toolgate.
pub enum Endpoint {
    Url(String),
    /// Program and arguments to launch.
    Command(Vec<String>),
}

/// toolgate as a client reaches it over one transport.
pub enum Gateway {
    /// `toolgate serve`, for Streamable HTTP and legacy SSE clients.
    Served(Box<Toolgate>),
    /// A configuration for `toolgate stdio`, which the client launches.
    Stdio { config: PathBuf, _dir: tempfile::TempDir },
}

impl Gateway {
    /// Starts `toolgate serve` (HTTP, SSE) or writes the configuration the
    /// client will launch `toolgate stdio` with.
    pub async fn start(transport: Transport, upstreams: &str) -> Result<Gateway> {
        if transport != Transport::Stdio {
            return Ok(Gateway::Served(Box::new(Toolgate::start(upstreams).await?)));
        }
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("toolgate.toml");
        std::fs::write(&config, upstreams)?;
        Ok(Gateway::Stdio { config, _dir: dir })
    }

    pub fn endpoint(&self, transport: Transport) -> Endpoint {
        match (self, transport) {
            (Gateway::Served(gw), Transport::Sse) => Endpoint::Url(format!("{}/sse", gw.url.trim_end_matches("/mcp"))),
            (Gateway::Served(gw), _) => Endpoint::Url(gw.url.clone()),
            (Gateway::Stdio { config, .. }, _) => Endpoint::Command(vec![
                toolgate_exe().to_owned(),
                "stdio".into(),
                "--config".into(),
                config.display().to_string(),
            ]),
        }
    }

    /// toolgate's log (over stdio it went to the client's stderr, which is
    /// in that client's error instead).
    pub fn logs(&self) -> String {
        match self {
            Gateway::Served(gw) => gw.logs(),
            Gateway::Stdio { .. } => String::new(),
        }
    }
}

/// A client stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    Python,
    TypeScript,
    Inspector,
    /// The Python SDK told its era: `mcp.Client(..., mode="2026-07-28")`.
    Python2026,
    /// The Python SDK told to use the `initialize` handshake and a session
    /// (`mode="legacy"`), which `auto` skips when the server answers
    /// `server/discover`.
    PythonLegacy,
    /// The TypeScript SDK v2 pinned: `versionNegotiation: {mode: {pin: "2026-07-28"}}`.
    TypeScript2026,
}

impl Stack {
    /// Runs the `steps` (client_probe's script format) on one connection and
    /// returns the report.
    pub async fn run(self, endpoint: &Endpoint, transport: Transport, steps: &Value) -> Result<Value> {
        match self {
            Stack::Python => {
                let script = repo_path("tests/python/client_probe.py").display().to_string();
                probe(&python(), &script, &[], endpoint, transport, steps).await
            }
            Stack::TypeScript => {
                // Its imports resolve from tests/node/node_modules, beside the script.
                let script = repo_path("tests/node/client_probe.mjs").display().to_string();
                probe("node", &script, &[], endpoint, transport, steps).await
            }
            Stack::Python2026 => {
                let script = repo_path("tests/python/client_probe.py").display().to_string();
                probe(&python(), &script, &["--mode", "2026-07-28"], endpoint, transport, steps).await
            }
            Stack::PythonLegacy => {
                let script = repo_path("tests/python/client_probe.py").display().to_string();
                probe(&python(), &script, &["--mode", "legacy"], endpoint, transport, steps).await
            }
            Stack::TypeScript2026 => {
                // SDK v2 needs Node >= 20: the pinned Node 22.
                let script = repo_path("tests/node/client_probe.mjs").display().to_string();
                let node = node22().display().to_string();
                probe(&node, &script, &["--sdk", "2", "--mode", "2026-07-28"], endpoint, transport, steps).await
            }
            Stack::Inspector => {
                let mcpdo = Mcpdo::new()?;
                let connection = mcpdo.connect(endpoint, transport).await?;
                let shown = mcpdo.show(&connection).await?;
                let mut report = json!({
                    "negotiated_version": shown["protocolVersion"],
                    "server_info": shown["serverInfo"],
                    "mode_used": "legacy",
                    "steps": [],
                });
                for step in steps.as_array().into_iter().flatten() {
                    let done = mcpdo.step(&connection, step).await?;
                    report["steps"].as_array_mut().context("steps")?.push(done);
                }
                Ok(report)
            }
        }
    }
}

/// Runs one of the probe scripts (Python or TypeScript, same flags), with
/// `options` (`--mode`, `--sdk`) before the rest.
pub async fn probe(
    program: &str,
    script: &str,
    options: &[&str],
    endpoint: &Endpoint,
    transport: Transport,
    steps: &Value,
) -> Result<Value> {
    let mut command = Command::new(program);
    command.arg(script).args(options).args(["--transport", transport.flag()]);
    match endpoint {
        Endpoint::Url(url) => command.args(["--url", url]),
        Endpoint::Command(argv) => command.args(["--command", &serde_json::to_string(argv)?]),
    };
    command.arg(steps.to_string()).stdin(Stdio::null()).kill_on_drop(true);
    let output = tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .map_err(|_| anyhow!("{script} did not finish within {CLIENT_TIMEOUT:?}"))??;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!("{script} failed ({}): {stderr}", output.status);
    }
    serde_json::from_slice(&output.stdout).with_context(|| format!("{script} printed no report; stderr:\n{stderr}"))
}

/// What one Inspector process did.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// stdout as JSON.
    pub fn json(&self) -> Result<Value> {
        serde_json::from_str(&self.stdout).with_context(|| {
            format!("not JSON on stdout (exit {}): {:?}; stderr:\n{}", self.code, self.stdout, self.stderr)
        })
    }
}

/// Runs the Inspector's launcher (`inspector --cli ...`, one-shot) on Node 22.
pub async fn inspector_cli(home: &std::path::Path, args: &[&str]) -> Result<Outcome> {
    let launcher = node_modules().join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let mut command = Command::new(node22());
    command.arg(launcher).args(["--cli", "--format", "json"]).args(args);
    run_inspector(command, home, &[]).await
}

async fn run_inspector(mut command: Command, home: &std::path::Path, env: &[(&str, String)]) -> Result<Outcome> {
    // Its own HOME: the Inspector keeps a catalog and a secret store there.
    command
        .env("HOME", home)
        .env("MCP_INSPECTOR_SECRET_STORE", "file")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .map_err(|_| anyhow!("the Inspector did not finish within {CLIENT_TIMEOUT:?}"))??;
    Ok(Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// `mcpdo`, the Inspector's connection CLI, with a private daemon (its own
/// directory and token) that is stopped when this is dropped.
struct Mcpdo {
    dir: tempfile::TempDir,
    token: String,
}

impl Mcpdo {
    fn new() -> Result<Mcpdo> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("home"))?;
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        Ok(Mcpdo { dir, token })
    }

    fn program() -> PathBuf {
        node_modules().join("@modelcontextprotocol/inspector/clients/mcpdo/build/mcp-bin.js")
    }

    fn daemon_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MCP_INSPECTOR_DAEMON_DIR", self.dir.path().join("daemon").display().to_string()),
            ("MCP_INSPECTOR_DAEMON_TOKEN", self.token.clone()),
        ]
    }

    async fn run(&self, args: &[&str]) -> Result<Outcome> {
        let mut command = Command::new(node22());
        command.arg(Self::program()).args(["--format", "json"]).args(args);
        run_inspector(command, &self.dir.path().join("home"), &self.daemon_env()).await
    }

    /// Opens the connection; returns its name.
    async fn connect(&self, endpoint: &Endpoint, transport: Transport) -> Result<String> {
        let mut args = vec!["connect", "--transport", transport.flag()];
        match endpoint {
            Endpoint::Url(url) => args.push(url),
            Endpoint::Command(argv) => {
                args.push("--");
                args.extend(argv.iter().map(String::as_str));
            }
        }
        let out = self.run(&args).await?;
        if out.code != 0 {
            bail!("mcpdo connect failed (exit {}): {}{}", out.code, out.stdout, out.stderr);
        }
        let name = out.json()?["name"].as_str().map(str::to_owned);
        name.ok_or_else(|| anyhow!("mcpdo connect named no connection: {}", out.stdout))
    }

    /// What the connection negotiated (`serverInfo`, `protocolVersion`, ...).
    async fn show(&self, connection: &str) -> Result<Value> {
        let out = self.run(&["--connection", connection, "connections/show"]).await?;
        if out.code != 0 {
            bail!("mcpdo connections/show failed (exit {}): {}", out.code, out.stderr);
        }
        out.json()
    }

    /// Runs one probe step as an mcpdo command; returns it in the probe's
    /// report format. A tool result with `isError` exits 5 with the result on
    /// stdout; other failures exit non-zero with `{"error": ...}` on stderr.
    async fn step(&self, connection: &str, step: &Value) -> Result<Value> {
        let op = step["op"].as_str().unwrap_or("");
        let arguments;
        let mut args = vec!["--connection", connection];
        match op {
            "list_tools" => args.push("tools/list"),
            "list_resources" => args.push("resources/list"),
            "list_resource_templates" => args.push("resources/templates/list"),
            "read_resource" => args.extend(["resources/read", step["uri"].as_str().context("uri")?]),
            "call_tool" => {
                arguments = step.get("arguments").cloned().unwrap_or(json!({})).to_string();
                args.extend(["tools/call", "--tool-args-json", &arguments, step["name"].as_str().context("name")?]);
            }
            _ => bail!("the Inspector runner has no {op:?} step"),
        }
        let out = self.run(&args).await?;
        Ok(match out.code {
            0 | 5 => json!({"op": op, "ok": true, "result": out.json()?}),
            _ => {
                let error = serde_json::from_str::<Value>(&out.stderr)
                    .ok()
                    .and_then(|e| e.get("error").cloned())
                    .unwrap_or_else(|| json!({"code": null, "message": out.stderr}));
                json!({"op": op, "ok": false, "error": error, "exit": out.code})
            }
        })
    }
}

impl Drop for Mcpdo {
    fn drop(&mut self) {
        // Stop the private daemon (and the connections and stdio children it
        // holds); it outlives the commands that started it.
        let stop = std::process::Command::new(node22())
            .arg(Self::program())
            .args(["daemon", "stop"])
            .env("HOME", self.dir.path().join("home"))
            .envs(self.daemon_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Ok(mut child) = stop {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
