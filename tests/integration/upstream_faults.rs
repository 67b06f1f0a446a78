//! Upstreams that misbehave under a call, against the real binary: one that
//! never answers and never takes the cancellation toolgate sends it, a stdio
//! child that stops reading its stdin, an HTTP upstream whose URL and headers
//! carry secrets while it fails, and an HTTP upstream killed mid-call. Each
//! fails its own calls with a clear JSON-RPC error, holds neither the client
//! nor shutdown beyond a bound, and leaks no secret.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::common::*;

/// The JSON-RPC error codes toolgate gives upstream failures.
const UPSTREAM_UNAVAILABLE: i64 = -32010;
const UPSTREAM_TIMEOUT: i64 = -32011;
const UPSTREAM_CLOSED: i64 = -32012;

/// Sends SIGTERM to toolgate.
fn terminate(gw: &Toolgate) -> Result<()> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).context("SIGTERM")
}

/// Whether process `pid` still runs (a zombie does not count).
fn runs(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_owned));
    state.is_some_and(|s| s != "Z" && s != "X")
}

/// How a [`scripted_upstream`] answers `tools/call` (everything else is a
/// normal Streamable HTTP MCP server with one tool, `work`).
mod script {
    /// Answers with a text result.
    pub const ANSWER: u8 = 0;
    /// Never answers, and never answers the POST of `notifications/cancelled`
    /// either (a server that takes no more input).
    pub const HANG: u8 = 1;
    /// HTTP 500 with a plain-text body.
    pub const FAIL_500: u8 = 2;
    /// HTTP 200, `application/json`, a body that is no JSON.
    pub const BAD_BODY: u8 = 3;
}

/// A minimal Streamable HTTP MCP server whose `tools/call` answers follow
/// `mode` (see [`script`]); it records the methods it received. It stops
/// (closing its port and its idle connections) when the returned sender is
/// used or dropped.
async fn scripted_upstream(
    mode: Arc<AtomicU8>,
) -> Result<(String, Arc<Mutex<Vec<String>>>, tokio::sync::oneshot::Sender<()>)> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let app = Router::new().route(
        "/mcp",
        axum::routing::any(move |method: Method, _headers: HeaderMap, body: Bytes| {
            let (record, mode) = (record.clone(), mode.clone());
            async move {
                if method == Method::GET {
                    return StatusCode::METHOD_NOT_ALLOWED.into_response();
                }
                if method == Method::DELETE {
                    return StatusCode::OK.into_response();
                }
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    return StatusCode::BAD_REQUEST.into_response();
                };
                let name = message["method"].as_str().unwrap_or("").to_owned();
                record.lock().push(name.clone());
                let mode = mode.load(Ordering::SeqCst);
                if mode == script::HANG && matches!(name.as_str(), "tools/call" | "notifications/cancelled") {
                    std::future::pending::<()>().await;
                }
                let Some(id) = message.get("id").cloned() else { return StatusCode::ACCEPTED.into_response() };
                let result = match name.as_str() {
                    "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                           "serverInfo": {"name": "scripted", "version": "1"}}),
                    "tools/list" => json!({"tools": [{"name": "work", "description": "Does some work.",
                                                      "inputSchema": {"type": "object"}}]}),
                    "tools/call" => match mode {
                        script::FAIL_500 => {
                            return (StatusCode::INTERNAL_SERVER_ERROR, "internal failure").into_response();
                        }
                        script::BAD_BODY => {
                            return ([("content-type", "application/json")], "this is not JSON").into_response();
                        }
                        _ => json!({"content": [{"type": "text", "text": "worked"}]}),
                    },
                    _ => json!({}),
                };
                let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                let mut r: Response = ([("content-type", "application/json")], body).into_response();
                r.headers_mut().insert("mcp-session-id", "scripted-session".parse().unwrap());
                r
            }
        }),
    );
    let (url, stop) = serve_mcp_app(app).await?;
    Ok((url, seen, stop))
}

/// Waits until `seen` holds `method`.
async fn wait_seen(seen: &Mutex<Vec<String>>, method: &str, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if seen.lock().iter().any(|m| m == method) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!("the upstream never received {method}: {:?}", seen.lock())
}

#[tokio::test]
async fn a_cancellation_the_upstream_never_takes_holds_neither_the_client_nor_shutdown() -> Result<()> {
    let mode = Arc::new(AtomicU8::new(script::HANG));
    let (url, seen, _stop) = scripted_upstream(mode.clone()).await?;
    let upstreams = [
        http_upstream(
            "stuck",
            &url,
            "mode = \"passthrough\"\nsharing = \"shared\"\ntimeout = \"1s\"\ncancel_timeout = \"3s\"",
        ),
        fixture_upstream("fx", &[], "mode = \"passthrough\""),
    ]
    .concat();
    let mut gw =
        Toolgate::start_with(&upstreams, "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_grace = \"2s\"\n").await?;
    let c = Client::connected(&gw.url, json!({})).await?;

    // The call times out; toolgate tells the upstream, which never takes it.
    // The client has its answer at the call's timeout, not after the
    // cancellation's own (`cancel_timeout`, 3 s here).
    let started = Instant::now();
    let timed_out = c.request("tools/call", json!({"name": "stuck__work", "arguments": {}})).await?;
    let waited = started.elapsed();
    assert_eq!(timed_out["error"]["code"], UPSTREAM_TIMEOUT, "{timed_out}");
    assert!(timed_out["error"]["message"].as_str().unwrap_or("").contains("within 1s"), "{timed_out}");
    assert!(waited < Duration::from_millis(4500), "the client waited {waited:?} for a 1 s timeout");
    wait_seen(&seen, "notifications/cancelled", Duration::from_secs(5)).await?;
    // The cancellation gives up at its own bound.
    let cancelled_at = Instant::now();
    gw.wait_log("telling the upstream of a cancellation timed out", Duration::from_secs(15)).await?;
    assert!(cancelled_at.elapsed() < Duration::from_millis(4500), "gave up after {:?}", cancelled_at.elapsed());
    // Meanwhile, and after, the other upstream answers.
    let fast = c.call_tool("fx__test_tool_fast", json!({})).await?;
    assert_eq!(text_of(&fast), "Fast tool completed", "{fast}");

    // Again, and SIGTERM while that cancellation hangs: toolgate still exits
    // within the grace, the cancellation's bound and the stop sequence.
    let again = c.request("tools/call", json!({"name": "stuck__work", "arguments": {}})).await?;
    assert_eq!(again["error"]["code"], UPSTREAM_TIMEOUT, "{again}");
    let started = Instant::now();
    terminate(&gw)?;
    let status = tokio::time::timeout(Duration::from_secs(30), gw.proc.child.wait())
        .await
        .with_context(|| format!("toolgate did not exit; logs:\n{}", gw.logs()))??;
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(12), "exit took {:?}", started.elapsed());
    Ok(())
}

/// A stdio MCP server (Python, standard library only) that answers the
/// handshake and `tools/list`, and at its first `tools/call` stops reading
/// its stdin for good (it writes its pid to the file named by its argument,
/// and ignores SIGTERM, so only SIGKILL ends it).
const DEAF_SERVER: &str = r#"
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "deaf", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "listen",
              "description": "Stops listening.", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        while True:
            time.sleep(3600)
    elif id is not None:
        send({"jsonrpc": "2.0", "id": id, "result": {}})
"#;

#[tokio::test]
async fn a_stdio_child_that_stops_reading_fails_its_calls_and_not_toolgate() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("deaf_server.py");
    std::fs::write(&script, DEAF_SERVER)?;
    let pid_file = dir.path().join("deaf.pid");
    let python = python();
    let upstreams = [
        stdio_upstream(
            "deaf",
            &python,
            &[&script.display().to_string(), &pid_file.display().to_string()],
            "mode = \"passthrough\"\nsharing = \"shared\"\ntimeout = \"1s\"",
        ),
        fixture_upstream("fx", &[], "mode = \"passthrough\""),
    ]
    .concat();
    let mut gw =
        Toolgate::start_with(&upstreams, "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_grace = \"2s\"\n").await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let child: u32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
    assert!(runs(child));

    // The first call makes the child stop reading; the next one is larger
    // than a pipe holds, so its write blocks; the third queues behind it.
    // Each fails at the call timeout with a clear error.
    let large = "x".repeat(1024 * 1024);
    for (what, arguments) in
        [("first", json!({})), ("large", json!({"pad": large})), ("queued", json!({"pad": "small"}))]
    {
        let started = Instant::now();
        let failed = c.request("tools/call", json!({"name": "deaf__listen", "arguments": arguments})).await?;
        let message = failed["error"]["message"].as_str().unwrap_or("");
        assert_eq!(failed["error"]["code"], UPSTREAM_TIMEOUT, "{what}: {failed}");
        assert!(message.contains("'deaf'") && message.contains("within 1s"), "{what}: {failed}");
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: answered after {:?}", started.elapsed());
        // The other upstream still answers.
        let fast = c.call_tool("fx__test_tool_fast", json!({})).await?;
        assert_eq!(text_of(&fast), "Fast tool completed", "after the {what} call: {fast}");
    }

    // SIGTERM: the grace (nothing in flight), then the child's stop sequence
    // (close stdin, TERM, KILL), bounded; the child is gone after.
    let started = Instant::now();
    terminate(&gw)?;
    let status = tokio::time::timeout(Duration::from_secs(30), gw.proc.child.wait())
        .await
        .with_context(|| format!("toolgate did not exit; logs:\n{}", gw.logs()))??;
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(15), "exit took {:?}", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(5);
    while runs(child) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!runs(child), "the child still runs after toolgate exited");
    Ok(())
}

#[tokio::test]
async fn upstream_errors_never_carry_the_url_query_or_header_values() -> Result<()> {
    const QUERY_SECRET: &str = "QUERYSECRET7f3a";
    const HEADER_SECRET: &str = "HEADERSECRET9c1d";
    const USER_SECRET: &str = "USERSECRET2b8e";
    let mode = Arc::new(AtomicU8::new(script::ANSWER));
    let (url, _, stop) = scripted_upstream(mode.clone()).await?;
    let headers =
        format!("headers = {{ X-Api-Key = \"{HEADER_SECRET}\", Authorization = \"Bearer {HEADER_SECRET}\" }}");
    let extra = format!("mode = \"passthrough\"\n{headers}");
    // The same server twice: a plain URL (toolgate's lean HTTP client) and
    // one with credentials in it (reqwest).
    let plain = format!("{url}?api_key={QUERY_SECRET}");
    let with_user = plain.replacen("http://", &format!("http://key:{USER_SECRET}@"), 1);
    let upstreams = [http_upstream("lean", &plain, &extra), http_upstream("full", &with_user, &extra)].concat();
    let gw = Toolgate::start(&upstreams).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    for name in ["lean__work", "full__work"] {
        assert_eq!(text_of(&c.call_tool(name, json!({})).await?), "worked");
    }
    let leaks = |text: &str| [QUERY_SECRET, HEADER_SECRET, USER_SECRET].into_iter().find(|s| text.contains(s));

    let mut errors = Vec::new();
    for (what, how) in [("HTTP 500", script::FAIL_500), ("a bad body", script::BAD_BODY)] {
        mode.store(how, Ordering::SeqCst);
        for name in ["lean__work", "full__work"] {
            let failed = c.request("tools/call", json!({"name": name, "arguments": {}})).await?;
            assert!(failed["error"]["message"].is_string(), "{what}, {name}: {failed}");
            errors.push(failed);
        }
    }
    // Nothing listens any more: connections are refused.
    let _ = stop.send(());
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in ["lean__work", "full__work"] {
        let failed = c.request("tools/call", json!({"name": name, "arguments": {}})).await?;
        assert!(failed["error"]["message"].is_string(), "refused, {name}: {failed}");
        errors.push(failed);
    }
    // A toolgate that starts while its upstreams refuse connections (the
    // failures are in its log).
    let down = [http_upstream("lean", &plain, &extra), http_upstream("full", &with_user, &extra)].concat();
    let gw_down = Toolgate::start_with(&down, "[server]\nlisten = \"127.0.0.1:0\"\nstartup_timeout = \"1s\"\n").await?;
    let d = Client::connected(&gw_down.url, json!({})).await?;
    errors.push(d.request("tools/list", json!({})).await?);
    // Time for the supervisor to log a failed restart too.
    tokio::time::sleep(Duration::from_secs(2)).await;

    for error in &errors {
        assert!(leaks(&error.to_string()).is_none(), "a secret in an error to the client: {error}");
    }
    let (logs, logs_down) = (gw.logs(), gw_down.logs());
    assert!(logs.contains("HTTP 500") || errors.iter().any(|e| e.to_string().contains("500")), "{errors:?}");
    assert!(leaks(&logs).is_none(), "a secret in toolgate's log:\n{logs}");
    assert!(leaks(&logs_down).is_none(), "a secret in toolgate's log:\n{logs_down}");
    Ok(())
}

/// A Streamable HTTP MCP server (Python, standard library only) that
/// answers every request with one JSON body, after `seconds` for its tool
/// `wait`; it prints `LISTENING <url>`.
const JSON_SERVER: &str = r#"
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer(405)
    def do_DELETE(self):
        self.answer(200)
    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in message:
            return self.answer(202)
        method = message.get("method")
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "json", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "wait", "description": "Waits.",
                                 "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            time.sleep(message["params"]["arguments"].get("seconds", 0))
            result = {"content": [{"type": "text", "text": "waited"}]}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.answer(200, body, [("Content-Type", "application/json"), ("Mcp-Session-Id", "json-session")])

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"LISTENING http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
"#;

/// Kills `server` while a slow call to each of `tools` is in flight; each
/// call must fail as the upstream closing the connection.
async fn kill_mid_call(c: &Client, server: &mut Proc, tools: &[(&'static str, Value)]) -> Result<()> {
    let calls: Vec<_> = tools
        .iter()
        .map(|(name, arguments)| {
            let (c, name, arguments) = (c.clone(), *name, arguments.clone());
            tokio::spawn(async move { c.request("tools/call", json!({"name": name, "arguments": arguments})).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    server.child.kill().await?;
    for ((name, _), call) in tools.iter().zip(calls) {
        let failed = tokio::time::timeout(Duration::from_secs(20), call).await.context("the call hung")???;
        assert_eq!(failed["error"]["code"], UPSTREAM_CLOSED, "{name}: {failed}");
        let message = failed["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("closed the connection"), "{name}: {failed}");
    }
    Ok(())
}

#[tokio::test]
async fn an_http_upstream_killed_mid_call_is_an_upstream_closed_error() -> Result<()> {
    // Two servers: one that answers a slow call with one JSON body (the
    // connection breaks before any answer), and the fixture, which streams
    // it (the stream breaks). Each through toolgate's lean client (a plain
    // URL) and through reqwest (a URL with credentials never takes the lean
    // client).
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("json_server.py");
    std::fs::write(&script, JSON_SERVER)?;
    let (mut json_server, json_url) = start_http_server(&python(), &[&script.display().to_string()]).await?;
    let (mut fixture, fixture_url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    let with_user = |url: &str| url.replacen("http://", "http://u:p@", 1);
    let extra = "mode = \"passthrough\"\nsharing = \"shared\"";
    let upstreams = [
        http_upstream("js", &json_url, extra),
        http_upstream("jr", &with_user(&json_url), extra),
        http_upstream("ss", &fixture_url, extra),
        http_upstream("sr", &with_user(&fixture_url), extra),
        fixture_upstream("fx", &[], "mode = \"passthrough\""),
    ]
    .concat();
    let gw = Toolgate::start(&upstreams).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    for name in ["js__wait", "jr__wait"] {
        assert_eq!(text_of(&c.call_tool(name, json!({})).await?), "waited");
    }
    for name in ["ss__test_tool_fast", "sr__test_tool_fast"] {
        assert_eq!(text_of(&c.call_tool(name, json!({})).await?), "Fast tool completed");
    }
    let wait = json!({"seconds": 60});
    kill_mid_call(&c, &mut json_server, &[("js__wait", wait.clone()), ("jr__wait", wait)]).await?;
    let slow = json!({"durationMs": 60_000});
    kill_mid_call(&c, &mut fixture, &[("ss__test_tool_slow", slow.clone()), ("sr__test_tool_slow", slow)]).await?;
    // The next call finds the upstream down; the other upstream still serves.
    let down = c.request("tools/call", json!({"name": "js__wait", "arguments": {}})).await?;
    let code = down["error"]["code"].as_i64().unwrap_or(0);
    assert!([UPSTREAM_UNAVAILABLE, UPSTREAM_CLOSED].contains(&code), "{down}");
    assert_eq!(text_of(&c.call_tool("fx__test_tool_fast", json!({})).await?), "Fast tool completed");
    Ok(())
}
