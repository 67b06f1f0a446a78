//! The `toolgate` command line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use toolgate::config::Config;
use toolgate::gateway::Gateway;
use toolgate::server::http::{Guard, HttpOptions};
use toolgate::server::{Engine, SessionStore};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(name = "toolgate", version, about = "A transparent MCP gateway with progressive disclosure")]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, env = "TOOLGATE_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway over Streamable HTTP.
    Serve {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Run the gateway over stdio, for clients that launch their servers as
    /// child processes (logs go to stderr).
    Stdio {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Validate a configuration file and print it with defaults filled in.
    CheckConfig {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Run the demo MCP server over stdio (used by config/demo.toml).
    DemoUpstream {
        /// Serve Streamable HTTP on this address instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    match cli.command {
        Command::Serve { config } => runtime.block_on(serve(load(&config)?)),
        Command::Stdio { config } => runtime.block_on(stdio(load(&config)?)),
        Command::CheckConfig { config } => {
            let config = load(&config)?;
            let text = normalized(&config)?;
            // `check-config | head` closes the pipe early; that is not an error.
            match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
        Command::DemoUpstream { http: None } => Ok(runtime.block_on(toolgate::demo::run_stdio())?),
        Command::DemoUpstream { http: Some(addr) } => Ok(runtime.block_on(toolgate::demo::run_http(addr))?),
    }
}

fn load(path: &Path) -> anyhow::Result<Config> {
    toolgate::config::load(path).with_context(|| format!("loading configuration {}", path.display()))
}

/// The configuration with defaults filled in, as JSON. Header and `env`
/// values are redacted: they usually hold credentials from `${VAR}`.
fn normalized(config: &Config) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(config)?;
    if let Some(upstreams) = value.get_mut("upstream").and_then(|u| u.as_array_mut()) {
        for up in upstreams {
            for key in ["headers", "env"] {
                if let Some(map) = up.get_mut(key).and_then(|m| m.as_object_mut()) {
                    map.values_mut().for_each(|v| *v = serde_json::json!("<redacted>"));
                }
            }
        }
    }
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// Logs go to stderr only: stdout may carry MCP (the demo upstream speaks
/// stdio). `TOOLGATE_LOG` (or `RUST_LOG`) sets the filter; default `info`.
fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_env("TOOLGATE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// The gateway and the server engine in front of it.
fn start(config: Config) -> anyhow::Result<(Arc<Gateway>, Arc<Engine<Gateway>>)> {
    let (store, ended) = SessionStore::new(config.server.session_idle_timeout);
    let store = Arc::new(store);
    let gateway = Gateway::start(config, store.clone())?;
    let engine = Engine::start(gateway.clone(), store, ended);
    Ok((gateway, engine))
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let server = config.server.clone();
    let (gateway, engine) = start(config)?;
    let options = HttpOptions {
        path: server.path.clone(),
        guard: Guard::new(&server.allowed_hosts, &server.allowed_origins),
        max_body_bytes: server.max_body_bytes,
        keep_alive: server.sse_keep_alive,
        legacy_sse: server.legacy_sse,
    };
    let app = toolgate::server::http::router(engine.clone(), options);
    let listener =
        tokio::net::TcpListener::bind(server.listen).await.with_context(|| format!("binding {}", server.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!("listening on http://{addr}{}", server.path);

    let store = engine.store().clone();
    let stopping = async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        // Ending the sessions ends their open streams, which lets the server drain.
        store.clear();
    };
    let served = axum::serve(listener, app).with_graceful_shutdown(stopping).into_future();
    tokio::pin!(served);
    tokio::select! {
        r = &mut served => r.context("serving")?,
        _ = async { shutdown_signal().await; tokio::time::sleep(Duration::from_secs(10)).await } => {
            tracing::warn!("connections did not drain in time");
        }
    }
    engine.shutdown().await;
    gateway.shutdown().await;
    Ok(())
}

async fn stdio(config: Config) -> anyhow::Result<()> {
    let (gateway, engine) = start(config)?;
    tracing::info!("serving MCP on stdio");
    let served = toolgate::server::stdio::serve(engine.clone(), tokio::io::stdin(), tokio::io::stdout());
    tokio::select! {
        r = served => r.context("serving stdio")?,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            engine.shutdown().await;
        }
    }
    gateway.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
