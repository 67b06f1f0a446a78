//! A real `redis-server` for tests: started on 127.0.0.1 on a free port,
//! without persistence, stopped and restarted on the same port at will, and
//! killed when dropped.
//!
//! [`RedisServer::start_tls`] starts one that also serves TLS on a second
//! port, with a certificate for `127.0.0.1` signed by a [`TestCa`] made at
//! test time, and optionally an ACL user with a password (the default user
//! then disabled), as a managed Redis is set up.
//!
//! Missing `redis-server` fails the test with how to install it, unless
//! `TOOLGATE_SKIP_REDIS=1` says to skip the tests that need it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// The executable: `TOOLGATE_REDIS_SERVER`, or `redis-server` on the `PATH`.
fn executable() -> String {
    std::env::var("TOOLGATE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// A certificate authority made for one test: its certificate (PEM, for
/// a client's `ca_file`) and the key that signs server certificates.
pub struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    /// A new CA named `name`, with a fresh key.
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("a CA needs no names");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        let pem = params.self_signed(&key).expect("the CA certificate").pem();
        Self { pem, issuer: Issuer::new(params, key) }
    }

    /// Its certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Writes its certificate to `path` (for a client's `ca_file`).
    pub fn write(&self, path: &Path) {
        std::fs::write(path, &self.pem).expect("write the CA certificate");
    }

    /// A server certificate for 127.0.0.1 and `localhost`, signed by this
    /// CA: the certificate and its key, PEM.
    fn server_certificate(&self) -> (String, String) {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).expect("valid server names");
        params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("a server key");
        let certificate = params.signed_by(&key, &self.issuer).expect("the server certificate");
        (certificate.pem(), key.serialize_pem())
    }
}

/// What a TLS server was started with: its TLS port and the files
/// `redis-server` reads.
struct Tls {
    port: u16,
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

/// One `redis-server` process (or none, while stopped) on a fixed port.
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
    /// TLS on a second port, for [`start_tls`](Self::start_tls).
    tls: Option<Tls>,
    /// The ACL user and its password; the default user is off then.
    user: Option<(String, String)>,
}

impl RedisServer {
    /// Starts one, or `None` when `TOOLGATE_SKIP_REDIS=1` and there is no
    /// `redis-server`. Panics, saying how to install it, otherwise.
    pub fn start() -> Option<Self> {
        if !Self::present() {
            return None;
        }
        let mut server = Self { port: free_port(), child: None, tls: None, user: None };
        server.resume();
        Some(server)
    }

    /// Starts one that also serves TLS (on [`tls_url`](Self::tls_url)) with
    /// a certificate for 127.0.0.1 signed by `ca`, not asking clients for
    /// theirs; with `user`, the only user Redis accepts is that one, with
    /// that password. `None` as for [`start`](Self::start).
    pub fn start_tls(ca: &TestCa, user: Option<(&str, &str)>) -> Option<Self> {
        if !Self::present() {
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (cert_pem, key_pem) = ca.server_certificate();
        let tls = Tls {
            port: free_port(),
            cert: dir.path().join("server.pem"),
            key: dir.path().join("server-key.pem"),
            ca: dir.path().join("ca.pem"),
            _dir: dir,
        };
        std::fs::write(&tls.cert, cert_pem).expect("write the server certificate");
        std::fs::write(&tls.key, key_pem).expect("write the server key");
        ca.write(&tls.ca);
        let user = user.map(|(name, password)| (name.to_owned(), password.to_owned()));
        let mut server = Self { port: free_port(), child: None, tls: Some(tls), user };
        server.resume();
        Some(server)
    }

    /// Whether `redis-server` is there; panics, saying how to install it,
    /// unless `TOOLGATE_SKIP_REDIS=1`.
    fn present() -> bool {
        let exe = executable();
        let present = Command::new(&exe).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !present.is_ok_and(|s| s.success()) {
            if std::env::var("TOOLGATE_SKIP_REDIS").as_deref() == Ok("1") {
                eprintln!("skipped: `{exe}` not found and TOOLGATE_SKIP_REDIS=1");
                return false;
            }
            panic!(
                "this test needs a real Redis server, and `{exe}` was not found: install it with \
                 `apt-get install redis-server` (tests/run.sh does), point TOOLGATE_REDIS_SERVER at one, \
                 or set TOOLGATE_SKIP_REDIS=1 to skip the Redis tests"
            );
        }
        true
    }

    /// The URL of its database 0 (plain TCP; with an ACL user, a client
    /// must authenticate as it).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The `rediss://` URL of its database 0, without credentials, for a
    /// server started with [`start_tls`](Self::start_tls).
    pub fn tls_url(&self) -> String {
        let tls = self.tls.as_ref().expect("started with start_tls");
        format!("rediss://127.0.0.1:{}/0", tls.port)
    }

    /// Starts the process again on the same port (after [`stop`](Self::stop)),
    /// and waits until it answers.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut command = Command::new(executable());
            command
                .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes"])
                .args(["--loglevel", "warning"]);
            if let Some(tls) = &self.tls {
                command
                    .args(["--tls-port", &tls.port.to_string()])
                    .arg("--tls-cert-file")
                    .arg(&tls.cert)
                    .arg("--tls-key-file")
                    .arg(&tls.key)
                    .arg("--tls-ca-cert-file")
                    .arg(&tls.ca)
                    .args(["--tls-auth-clients", "no"]);
            }
            if let Some((name, password)) = &self.user {
                // The user may do everything; nobody else may connect.
                command
                    .args(["--user", name, "on", &format!(">{password}"), "~*", "&*", "+@all"])
                    .args(["--user", "default", "off"]);
            }
            let child = command
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
        if !self.authenticate(&mut stream) {
            return "-the test's own AUTH failed".into();
        }
        stream.write_all(format!("{line}\r\n").as_bytes()).expect("write to redis-server");
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            answer.push(byte[0]);
        }
        String::from_utf8_lossy(&answer).trim_end().to_owned()
    }

    /// Runs one command in Redis's inline protocol whose answer is a bulk
    /// string (`HGET key field`, `INFO stats`) and returns it; `None` for a
    /// nil answer or any other kind.
    pub fn bulk(&self, line: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis-server");
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        if !self.authenticate(&mut stream) {
            return None;
        }
        stream.write_all(format!("{line}\r\n").as_bytes()).expect("write to redis-server");
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            head.push(byte[0]);
        }
        let len: usize = String::from_utf8_lossy(&head).trim_end().strip_prefix('$')?.parse().ok()?;
        let mut value = vec![0u8; len];
        stream.read_exact(&mut value).ok()?;
        Some(String::from_utf8_lossy(&value).into_owned())
    }

    /// A field of `INFO` (`total_net_input_bytes`), as a number.
    pub fn info_number(&self, field: &str) -> u64 {
        let info = self.bulk("INFO").unwrap_or_default();
        info.lines()
            .find_map(|l| l.strip_prefix(field).and_then(|rest| rest.strip_prefix(':')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    fn ping(&self) -> bool {
        let Ok(mut stream) =
            TcpStream::connect_timeout(&([127, 0, 0, 1], self.port).into(), Duration::from_millis(200))
        else {
            return false;
        };
        stream.set_read_timeout(Some(Duration::from_millis(500))).ok();
        let mut buf = [0u8; 7];
        self.authenticate(&mut stream)
            && stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut buf).is_ok()
            && &buf == b"+PONG\r\n"
    }

    /// Authenticates `stream` as the ACL user, if there is one (the test
    /// chooses the name and password: no spaces, nothing to quote).
    fn authenticate(&self, stream: &mut TcpStream) -> bool {
        let Some((name, password)) = &self.user else { return true };
        let mut buf = [0u8; 5];
        stream.write_all(format!("AUTH {name} {password}\r\n").as_bytes()).is_ok()
            && stream.read_exact(&mut buf).is_ok()
            && &buf == b"+OK\r\n"
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A frozen process ignores nothing but SIGKILL, which `stop` sends.
        self.stop();
    }
}
