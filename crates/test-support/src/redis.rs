//! A real `redis-server` for tests: started on 127.0.0.1 on a free port,
//! without persistence, stopped and restarted on the same port at will, and
//! killed when dropped.
//!
//! Missing `redis-server` fails the test with how to install it, unless
//! `TOOLGATE_SKIP_REDIS=1` says to skip the tests that need it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The executable: `TOOLGATE_REDIS_SERVER`, or `redis-server` on the `PATH`.
fn executable() -> String {
    std::env::var("TOOLGATE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// One `redis-server` process (or none, while stopped) on a fixed port.
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts one, or `None` when `TOOLGATE_SKIP_REDIS=1` and there is no
    /// `redis-server`. Panics, saying how to install it, otherwise.
    pub fn start() -> Option<Self> {
        let exe = executable();
        let present = Command::new(&exe).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !present.is_ok_and(|s| s.success()) {
            if std::env::var("TOOLGATE_SKIP_REDIS").as_deref() == Ok("1") {
                eprintln!("skipped: `{exe}` not found and TOOLGATE_SKIP_REDIS=1");
                return None;
            }
            panic!(
                "this test needs a real Redis server, and `{exe}` was not found: install it with \
                 `apt-get install redis-server` (tests/run.sh does), point TOOLGATE_REDIS_SERVER at one, \
                 or set TOOLGATE_SKIP_REDIS=1 to skip the Redis tests"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let mut server = Self { port, child: None };
        server.resume();
        Some(server)
    }

    /// The URL of its database 0.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts the process again on the same port (after [`stop`](Self::stop)),
    /// and waits until it answers.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let child = Command::new(executable())
                .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes"])
                .args(["--loglevel", "warning"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("redis-server starts");
            self.child = Some(child);
            while Instant::now() < deadline {
                if self.ping() {
                    return;
                }
                if let Some(c) = self.child.as_mut()
                    && c.try_wait().ok().flatten().is_some()
                {
                    // It exited (the port not yet free after a stop): try again.
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            self.child = None;
            assert!(Instant::now() < deadline, "redis-server did not start on port {} within 30 s", self.port);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the process (SIGKILL: as abrupt as a crash) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the process (SIGSTOP): connections stay open, nothing is
    /// answered, as with a hung server or a network that drops packets.
    pub fn freeze(&self) {
        self.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// Lets a frozen process go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let child = self.child.as_ref().expect("redis-server is running");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
        nix::sys::signal::kill(pid, signal).expect("signal redis-server");
    }

    /// Runs one command in Redis's inline protocol (`PTTL key`) and returns
    /// the first line of the answer, e.g. `:3599000`.
    pub fn command(&self, line: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis-server");
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        stream.write_all(format!("{line}\r\n").as_bytes()).expect("write to redis-server");
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            answer.push(byte[0]);
        }
        String::from_utf8_lossy(&answer).trim_end().to_owned()
    }

    fn ping(&self) -> bool {
        let Ok(mut stream) =
            TcpStream::connect_timeout(&([127, 0, 0, 1], self.port).into(), Duration::from_millis(200))
        else {
            return false;
        };
        stream.set_read_timeout(Some(Duration::from_millis(500))).ok();
        let mut buf = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A frozen process ignores nothing but SIGKILL, which `stop` sends.
        self.stop();
    }
}
