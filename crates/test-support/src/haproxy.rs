//! A real HAProxy (Debian's `haproxy`) in front of servers on loopback
//! ports: round-robin per request, no stickiness, health checks every 200
//! ms on `/healthz`, a refused connection retried on another server. Killed
//! when dropped. [`Balancer::start_sticky`] pins each MCP session to the
//! server that created it instead, as replicas that keep sessions locally
//! need.
//!
//! Missing `haproxy` fails the test with how to install it, unless
//! `TOOLGATE_SKIP_REDIS=1` says to skip the tests that need Redis: every
//! test that needs a balancer needs Redis too (replicas share through it),
//! so one switch skips them all.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// The executable: `TOOLGATE_HAPROXY`, or `haproxy` on the `PATH`.
fn executable() -> String {
    std::env::var("TOOLGATE_HAPROXY").unwrap_or_else(|_| "haproxy".into())
}

/// One `haproxy` process balancing over `servers`.
pub struct Balancer {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Balancer {
    /// Starts one in front of the servers on these loopback ports, or
    /// `None` when `TOOLGATE_SKIP_REDIS=1` and there is no `haproxy`.
    /// Panics, saying how to install it, otherwise.
    pub fn start(servers: &[u16]) -> Option<Self> {
        Self::start_with(servers, false)
    }

    /// The same, but sticky: a request naming an `Mcp-Session-Id` goes to
    /// the server whose response carried that id (the `initialize` that
    /// created the session), as for replicas with `sessions = "local"`.
    pub fn start_sticky(servers: &[u16]) -> Option<Self> {
        Self::start_with(servers, true)
    }

    fn start_with(servers: &[u16], sticky: bool) -> Option<Self> {
        let exe = executable();
        let present = Command::new(&exe).arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !present.is_ok_and(|s| s.success()) {
            if std::env::var("TOOLGATE_SKIP_REDIS").as_deref() == Ok("1") {
                eprintln!("skipped: `{exe}` (HAProxy) not found and TOOLGATE_SKIP_REDIS=1");
                return None;
            }
            panic!(
                "this test needs HAProxy, and `{exe}` was not found: install it with `apt-get install haproxy` \
                 (.ci/run and tests/run.sh do), point TOOLGATE_HAPROXY at one, or set TOOLGATE_SKIP_REDIS=1 to skip \
                 the tests that need Redis and HAProxy"
            );
        }
        let port = free_port();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, config_text(port, servers, sticky)).expect("write haproxy.cfg");
        let child = Command::new(exe)
            .arg("-f")
            .arg(&config)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("haproxy starts");
        let mut balancer = Self { port, child, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            // Its reason is on stderr (inherited): a configuration it refuses,
            // a limit it cannot raise.
            if let Ok(Some(status)) = balancer.child.try_wait() {
                panic!("haproxy exited with {status} before listening (see its messages above)");
            }
            assert!(Instant::now() < deadline, "haproxy did not listen on port {port} within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(balancer)
    }

    /// The MCP endpoint through it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// The configuration: HTTP mode, each request balanced on its own (no
/// stickiness) unless `sticky`, long timeouts for SSE streams. A request
/// that meets a replica just killed, before the health check notices (its
/// connection refused, or closed with no response), is retried on the other
/// replica rather than answered 502; no idle server connection is reused,
/// since one to a dead replica fails that way.
fn config_text(port: u16, servers: &[u16], sticky: bool) -> String {
    let mut text = format!(
        "global\n  maxconn 1000\n\
         defaults\n  mode http\n  timeout connect 2s\n  timeout client 1h\n  timeout server 1h\n  \
         timeout http-request 30s\n  retries 3\n  option redispatch 1\n  http-reuse never\n  \
         retry-on conn-failure empty-response\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend toolgate\n\
         backend toolgate\n  balance roundrobin\n  option httpchk GET /healthz\n  \
         default-server inter 200ms fall 1 rise 1\n"
    );
    if sticky {
        // The session id is learnt from the response that creates it, and
        // every request naming it goes where it was created.
        text.push_str(
            "  stick-table type string len 64 size 1m expire 1h\n  \
             stick match req.hdr(mcp-session-id)\n  stick store-response res.hdr(mcp-session-id)\n",
        );
    }
    for (i, server) in servers.iter().enumerate() {
        text.push_str(&format!("  server replica{i} 127.0.0.1:{server} check\n"));
    }
    text
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
