//! A registry on the engine's transports: stdio (one client, the process
//! that launched the server) and Streamable HTTP with legacy HTTP+SSE beside
//! it (any number of sessions sharing the registry).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use toolgate_mcp::server::http::{self, Guard, HttpOptions};
use toolgate_mcp::server::{Engine, SessionStore, stdio};

use super::handler::RegistryHandler;
use super::registry::Registry;

/// How long an HTTP session may stay idle before it ends.
const HTTP_IDLE: Duration = Duration::from_secs(3600);

/// A stdio session lasts as long as its pipe; it never expires on its own.
const STDIO_IDLE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The engine serving `registry`, whose sessions end after `idle` without
/// traffic.
pub fn engine(registry: Arc<Registry>, idle: Duration) -> Arc<Engine<RegistryHandler>> {
    let (store, ended) = SessionStore::new(idle);
    Engine::start(Arc::new(RegistryHandler::new(registry)), Arc::new(store), ended)
}

/// Serves `registry` on stdin/stdout until stdin closes.
pub async fn serve_stdio(registry: Arc<Registry>) -> std::io::Result<()> {
    let (reader, writer) = stdio::standard_streams();
    serve(registry, reader, writer).await
}

/// Serves `registry` to one client on any byte streams until `reader` ends.
pub async fn serve<R, W>(registry: Arc<Registry>, reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    stdio::serve(engine(registry, STDIO_IDLE), reader, writer).await
}

/// Serves `registry` over Streamable HTTP at `http://<listen>/mcp` (and the
/// legacy HTTP+SSE transport at `/sse`) until the process ends.
/// `on_listening` gets the bound address.
pub async fn serve_http(
    registry: Arc<Registry>,
    listen: SocketAddr,
    on_listening: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let options = HttpOptions {
        path: "/mcp".into(),
        guard: Guard::new(&[], &[]),
        max_body_bytes: 4 * 1024 * 1024,
        body_read_timeout: http::DEFAULT_BODY_READ_TIMEOUT,
        keep_alive: Duration::from_secs(15),
        legacy_sse: true,
        admit: None,
    };
    let app = http::router(engine(registry, HTTP_IDLE), options);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    on_listening(listener.local_addr()?);
    axum::serve(http::no_delay(listener), app).await
}

/// Prints the line test harnesses wait for: `LISTENING http://<addr>/mcp`.
pub fn print_listening(addr: SocketAddr) {
    use std::io::Write as _;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "LISTENING http://{addr}/mcp");
    let _ = out.flush();
}
