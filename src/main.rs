//! The `toolgate` command line.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use toolgate::config::Config;
use toolgate::gateway::Gateway;
use toolgate::server::http::{Guard, HttpOptions, ListenOptions, Server, TrustedProxies};
use toolgate::server::{Engine, Limits, SessionStore};

/// Every proxied message allocates (and frees, often on another worker
/// thread) dozens of small buffers; mimalloc does that in a fraction of the
/// instructions glibc's malloc needs (benches/HISTORY.md). toolgate-alloc
/// enters it by the alignment each allocation needs.
#[global_allocator]
static ALLOCATOR: toolgate_alloc::Allocator = toolgate_alloc::Allocator;

/// A transparent MCP gateway with progressive disclosure.
///
/// toolgate sits in front of unmodified MCP servers: `tools/list` answers
/// with a minimal form of each tool, the full definitions come from the
/// resource `resource:///tool_descriptions?tools=…` (or the `describe_tools`
/// tool), and a tool can be called only once its description was fetched.
/// Everything else in MCP passes through.
#[derive(Parser)]
#[command(
    name = "toolgate",
    version = env!("TOOLGATE_VERSION"),
    after_long_help = "Logs go to stderr; TOOLGATE_LOG sets their filter (e.g. debug, or toolgate=debug,info; \
                       default info).\n\nDocumentation: the book in docs/ (mdbook build docs), and \
                       config/example.toml for every configuration key."
)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, env = "TOOLGATE_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway over Streamable HTTP.
    ///
    /// Serves MCP clients on `[server] listen` (Streamable HTTP, and legacy
    /// HTTP+SSE unless `[server] legacy_sse = false`), with `/healthz`,
    /// `/readyz` and `/metrics` beside the endpoint, until SIGTERM or SIGINT
    /// (then requests in progress get `[server] shutdown_grace` to finish).
    /// The configuration reloads on SIGHUP and when the file changes.
    Serve {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Run the gateway over stdio, for clients that launch their servers.
    ///
    /// Newline-delimited JSON-RPC on standard input and output; logs go to
    /// stderr. It serves the local user who launched it: `[auth]`
    /// (credentials, policy, limits) does not apply. `[metrics] listen` still
    /// serves `/metrics` on an address of its own.
    Stdio {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Validate a configuration file and print it with defaults filled in.
    ///
    /// Loads the file as `serve` would (environment overrides, `${VAR}`
    /// expansion, validation) and prints it as JSON with every default filled
    /// in and secrets redacted, or every problem with its TOML path and a
    /// non-zero exit status.
    CheckConfig {
        /// Configuration file (TOML).
        #[arg(short, long, env = "TOOLGATE_CONFIG")]
        config: PathBuf,
    },
    /// Print the JSON Schema of the configuration file.
    ///
    /// Every key's type, default and meaning, for editors with a TOML
    /// language server (a `#:schema` line at the top of the file points at
    /// it) and for CI; config/toolgate.schema.json is this output.
    ConfigSchema,
    /// Run the demo MCP server (used by config/demo.toml).
    ///
    /// A project tracker with 12 documented tools, over stdio unless
    /// `--http` is given. Builds without the `demo` cargo feature refuse it.
    DemoUpstream {
        /// Serve Streamable HTTP on this address instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// Count the tokens of tool catalogs, full and as toolgate serves them.
    ///
    /// Per upstream and per tool: the tokens (encoding o200k_base) of the
    /// upstreams' full definitions against the minimal forms toolgate
    /// serves, what toolgate adds, and typical sessions. An upstream that
    /// cannot be listed makes the exit status non-zero.
    Tokens(TokensArgs),
    /// Print what a model reads of each tool of a catalog, as JSON.
    ///
    /// The catalog is built from stored catalog files; each tool gets its
    /// full definition and the form toolgate lists (the input of the
    /// selection-fidelity evaluation, benches/fidelity).
    Forms(FormsArgs),
    /// Print a toolgate configuration made from another client's MCP server
    /// list.
    ///
    /// Reads Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Cline or
    /// Gemini CLI server lists (JSON with comments accepted); secrets become
    /// ${VAR} references, listed at the top of the output.
    Import(toolgate::import::cli::ImportArgs),
    /// Write, check or update the lockfile of approved tool definitions.
    ///
    /// Lists every configured upstream's tools and writes them, with their
    /// digests, to the lockfile (`[disclosure] lock`, else toolgate.lock
    /// beside the configuration). --diff shows drift from it, --check also
    /// exits 1 on drift (for CI), --approve takes drift into it.
    Lock(toolgate::lock::cli::LockArgs),
    /// List or revoke users' authorizations of OAuth upstreams.
    ///
    /// Works on the tokens kept in `[state] redis_url` (sealed with
    /// `encryption_keys`): `list` names who authorized which upstream,
    /// `revoke` drops a client's tokens and revokes them at the
    /// authorization server.
    Oauth(toolgate::oauth::cli::OAuthArgs),
}

#[derive(clap::Args)]
struct FormsArgs {
    /// Stored catalog files (as written by `tokens --save-dir`): the
    /// upstreams of one catalog, in order (several: names get prefixes).
    #[arg(long = "catalog", value_name = "FILE", num_args = 1.., required = true)]
    catalogs: Vec<PathBuf>,
    /// Use this configuration's [disclosure], and the [[upstream]] settings
    /// (mode, prefix, tool overrides) of upstreams named like a file's server.
    #[arg(short, long)]
    config: Option<PathBuf>,
}

#[derive(clap::Args)]
struct TokensArgs {
    /// Connect to this configuration's upstreams and measure their catalogs
    /// as toolgate would serve them.
    #[arg(short, long, required_unless_present = "catalogs")]
    config: Option<PathBuf>,
    /// A stored catalog file (as written by --save-dir) to measure without
    /// connecting, as the only upstream of a default configuration (or with
    /// --config's [disclosure]). Repeatable; each file is its own catalog.
    #[arg(long = "catalog", visible_alias = "corpus-file", value_name = "FILE", num_args = 1..)]
    catalogs: Vec<PathBuf>,
    /// Store each upstream's complete tool list as DIR/<upstream>.json (with
    /// the package and version parsed from its npx/uvx command line).
    #[arg(long, value_name = "DIR", requires = "config")]
    save_dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Leave out the row per tool.
    #[arg(long)]
    summary: bool,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The gateway's configuration is read before logging starts: its
    // [tracing] section says where spans go (loading logs nothing), and
    // before the runtime, whose size it may set.
    let gateway_config = match &cli.command {
        Command::Serve { config } | Command::Stdio { config } => Some(load(config)?),
        _ => None,
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = gateway_config.as_ref().map(|c| c.server.worker_threads).filter(|&n| n > 0) {
        runtime.worker_threads(threads);
    }
    let runtime = runtime.enable_all().build().context("starting the runtime")?;
    let telemetry = {
        // The exporters send on the runtime.
        let _entered = runtime.enter();
        let json = matches!(cli.log_format, LogFormat::Json);
        let audit = gateway_config.as_ref().is_some_and(|c| c.audit.enabled);
        toolgate::telemetry::init(json, gateway_config.as_ref().map(|c| &c.tracing), audit)?
    };
    let result = run(&runtime, cli.command, gateway_config);
    telemetry.shutdown();
    result
}

fn run(runtime: &tokio::runtime::Runtime, command: Command, gateway_config: Option<Config>) -> anyhow::Result<()> {
    match command {
        Command::Serve { config: path } => {
            let config = gateway_config.context("the configuration was not loaded")?;
            runtime.block_on(serve(config, path))
        }
        Command::Stdio { config: path } => {
            let config = gateway_config.context("the configuration was not loaded")?;
            runtime.block_on(stdio(config, path))
        }
        Command::CheckConfig { config } => {
            let config = load(&config)?;
            let text = normalized(&config)?;
            // `check-config | head` closes the pipe early; that is not an error.
            match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
        Command::ConfigSchema => {
            match std::io::Write::write_all(&mut std::io::stdout(), toolgate::config::schema_json().as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
        #[cfg(feature = "demo")]
        Command::DemoUpstream { http: None } => Ok(runtime.block_on(toolgate_demo::run_stdio())?),
        #[cfg(feature = "demo")]
        Command::DemoUpstream { http: Some(addr) } => Ok(runtime.block_on(toolgate_demo::run_http(addr))?),
        #[cfg(not(feature = "demo"))]
        Command::DemoUpstream { .. } => {
            anyhow::bail!(
                "this toolgate was built without the demo (cargo feature `demo`); configure your own upstreams"
            )
        }
        Command::Tokens(args) => runtime.block_on(tokens(args)),
        Command::Forms(args) => {
            let config = args.config.as_deref().map(load).transpose()?;
            let forms = toolgate::tokens::forms_of_files(&args.catalogs, config.as_ref())?;
            let text = serde_json::to_string_pretty(&forms)? + "\n";
            std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()).context("writing the forms")
        }
        Command::Import(args) => Ok(toolgate::import::cli::run(&args)?),
        Command::Oauth(args) => Ok(runtime.block_on(toolgate::oauth::cli::run(&args))?),
        Command::Lock(args) => {
            if !runtime.block_on(toolgate::lock::cli::run(&args))? {
                std::process::exit(1);
            }
            Ok(())
        }
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
    if let Some(map) = value.pointer_mut("/tracing/headers").and_then(|m| m.as_object_mut()) {
        map.values_mut().for_each(|v| *v = serde_json::json!("<redacted>"));
    }
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// The gateway and the server engine in front of it.
fn start(config: Config) -> anyhow::Result<(Arc<Gateway>, Arc<Engine<Gateway>>)> {
    let limits = Limits {
        max_sessions: config.server.max_sessions,
        max_requests_per_session: config.server.max_requests_per_session,
        stream_buffer: config.server.stream_buffer,
    };
    let (store, ended) = SessionStore::with_limits(config.server.session_idle_timeout, limits);
    let store = Arc::new(store);
    let gateway = Gateway::start(config, store.clone())?;
    let engine = Engine::start(gateway.clone(), store, ended);
    Ok((gateway, engine))
}

/// How long connections may take to close once their sessions ended.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

async fn serve(config: Config, path: PathBuf) -> anyhow::Result<()> {
    let server = config.server.clone();
    // Bound before the upstreams start: an upstream that checks toolgate's
    // identity assertions fetches its JWK Set from this listener while
    // toolgate's first connection to it waits (the request waits in the
    // backlog until the server below takes it).
    let listener =
        tokio::net::TcpListener::bind(server.listen).await.with_context(|| format!("binding {}", server.listen))?;
    let (gateway, engine) = start(config)?;
    toolgate::gateway::watch_config(&gateway, path, |_| {});
    let guard = Guard::new(&server.allowed_hosts, &server.allowed_origins);
    let options = HttpOptions {
        path: server.path.clone(),
        guard: guard.clone(),
        max_body_bytes: server.max_body_bytes,
        body_read_timeout: server.body_read_timeout,
        keep_alive: server.sse_keep_alive,
        legacy_sse: server.legacy_sse,
        // `[auth]`: every request is authenticated before its body is read.
        admit: gateway.admission(),
    };
    let readiness = gateway.readiness();
    let mut app =
        toolgate::server::http::app(engine.clone(), options).merge(toolgate::server::http::health::routes(readiness));
    if let Some(metadata) = gateway.metadata_routes() {
        app = app.merge(metadata);
    }
    if let Some(jwks) = gateway.jwks_routes(guard.clone()) {
        app = app.merge(jwks);
    }
    let addr = listener.local_addr()?;
    app = app.merge(gateway.oauth_routes(guard.clone(), addr));
    let metrics = gateway.config().metrics.clone();
    if metrics.enabled && metrics.listen.is_none() {
        // Behind the MCP endpoint's own checks (see `metrics::serve`).
        let access = toolgate::metrics::Access { guard, admit: gateway.admission() };
        app = app.merge(toolgate::metrics::guarded_routes(gateway.metrics().clone(), access));
    }
    let _metrics_listener = match metrics.listen.filter(|_| metrics.enabled) {
        Some(listen) => Some(serve_metrics(listen, gateway.metrics().clone(), &server).await?),
        None => None,
    };
    let listen = ListenOptions {
        max_connections: server.max_connections,
        max_connections_per_peer: server.max_connections_per_peer,
        // Checked with the configuration.
        trusted_proxies: TrustedProxies::parse(&server.trusted_proxies)?,
        header_read_timeout: server.header_read_timeout,
        keep_alive_timeout: server.keep_alive_timeout,
    };
    let http = Server::start(listener, app, listen);
    tracing::info!("listening on http://{addr}{}", server.path);

    shutdown_signal().await;
    tracing::info!(grace = ?server.shutdown_grace, "shutting down: no new connections or sessions; letting requests in progress finish");
    // New connections, sessions and requests are refused from here on;
    // requests already running go on, and their answers are delivered.
    engine.begin_shutdown();
    http.shutdown();
    drain(&engine, server.shutdown_grace).await;
    // Ending the sessions ends their open streams, which lets the
    // connections close; then the upstreams stop.
    engine.shutdown().await;
    if !http.wait(CLOSE_GRACE).await {
        tracing::debug!(open = http.connections(), "connections still open at exit");
    }
    gateway.shutdown().await;
    Ok(())
}

/// Most connections the separate metrics listener holds at once: a scraper
/// needs one or two, and each costs a file descriptor the MCP listener
/// could use.
const METRICS_MAX_CONNECTIONS: usize = 32;

/// Serves `/metrics` on an address of its own, until the process ends (the
/// returned listener stops with it), with the protections of the main
/// listener: a connection cap, and the header and keep-alive timeouts of
/// `server`.
async fn serve_metrics(
    listen: std::net::SocketAddr,
    metrics: Arc<toolgate::metrics::Metrics>,
    server: &toolgate::config::ServerConfig,
) -> anyhow::Result<Server> {
    let listener =
        tokio::net::TcpListener::bind(listen).await.with_context(|| format!("binding metrics.listen {listen}"))?;
    let addr = listener.local_addr()?;
    tracing::info!("serving metrics on http://{addr}{}", toolgate::metrics::METRICS_PATH);
    let options = ListenOptions {
        max_connections: METRICS_MAX_CONNECTIONS,
        header_read_timeout: server.header_read_timeout,
        keep_alive_timeout: server.keep_alive_timeout,
        ..ListenOptions::default()
    };
    Ok(Server::start(listener, toolgate::metrics::routes(metrics), options))
}

/// Waits (at most `grace`) for the requests in progress to finish.
async fn drain(engine: &Engine<Gateway>, grace: Duration) {
    let running = engine.running();
    if running == 0 {
        return;
    }
    tracing::info!(running, "waiting for requests in progress");
    if !engine.drain(grace).await {
        tracing::warn!(running = engine.running(), "requests still running after the shutdown grace; ending them");
    }
}

async fn stdio(mut config: Config, path: PathBuf) -> anyhow::Result<()> {
    // stdio serves the local user who launched toolgate, through a pipe no
    // one else can reach: `[auth]` (credentials, tool policy, limits) is for
    // HTTP clients only.
    if config.auth.is_enabled() || !config.auth.clients.is_empty() {
        tracing::info!("[auth] applies to HTTP clients only; on stdio toolgate serves the user who launched it");
    }
    config.auth = Default::default();
    let grace = config.server.shutdown_grace;
    let (gateway, engine) = start(config)?;
    toolgate::gateway::watch_config(&gateway, path, |config| config.auth = Default::default());
    let metrics = gateway.config().metrics.clone();
    let server = gateway.config().server.clone();
    let _metrics_listener = match metrics.listen.filter(|_| metrics.enabled) {
        Some(listen) => Some(serve_metrics(listen, gateway.metrics().clone(), &server).await?),
        None => None,
    };
    tracing::info!("serving MCP on stdio");
    let served = toolgate::server::stdio::serve_standard(engine.clone());
    tokio::pin!(served);
    tokio::select! {
        r = &mut served => r.context("serving stdio")?,
        _ = shutdown_signal() => {
            tracing::info!(?grace, "shutting down: letting requests in progress finish");
            engine.begin_shutdown();
            // The connection keeps being served (answers go out) while it drains.
            tokio::select! {
                r = &mut served => r.context("serving stdio")?,
                () = drain(&engine, grace) => {
                    // Ending the session ends the connection, which then
                    // writes what is queued and returns.
                    engine.shutdown().await;
                    if let Ok(r) = tokio::time::timeout(CLOSE_GRACE, &mut served).await {
                        r.context("serving stdio")?;
                    }
                }
            }
        }
    }
    gateway.shutdown().await;
    Ok(())
}

/// Upstreams listed at once by `toolgate tokens` (each may be a child process
/// that takes seconds to start).
const TOKENS_CONCURRENCY: usize = 4;

/// `toolgate tokens`: measure the configured upstreams (and/or stored
/// catalogs) and print the report. An upstream that cannot be listed is
/// reported and makes the exit status non-zero, after the report.
async fn tokens(args: TokensArgs) -> anyhow::Result<()> {
    use futures::StreamExt as _;
    use toolgate::tokens::capture::{CatalogFile, list_tools, package_ref, today};
    use toolgate::tokens::{Report, UpstreamInput, measure};

    let mut sections = Vec::new();
    let mut disclosure = toolgate::config::DisclosureConfig::default();
    let mut failed = 0;
    if let Some(path) = &args.config {
        let config = load(path)?;
        disclosure = config.disclosure.clone();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .context("building the HTTP client")?;
        if let Some(dir) = &args.save_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let date = today();
        let listed: Vec<_> = futures::stream::iter(config.upstreams.iter())
            .map(|up| {
                let http = &http;
                async move { (up, list_tools(up, http).await) }
            })
            .buffered(TOKENS_CONCURRENCY)
            .collect()
            .await;
        let mut inputs = Vec::new();
        for (up, result) in listed {
            let package = package_ref(up);
            let extras = match &up.descriptions_dir {
                Some(dir) => {
                    let (extras, warnings) = toolgate::catalog::load_extras_dir(dir);
                    warnings.iter().for_each(|w| tracing::warn!(upstream = %up.name, "{w}"));
                    extras
                }
                None => Default::default(),
            };
            let (tools, server_info) = match result {
                Ok(listed) => {
                    if let Some(dir) = &args.save_dir {
                        let file = CatalogFile::new(up, listed.clone(), date.clone());
                        let target = dir.join(format!("{}.json", up.name));
                        let text = file.to_pretty();
                        if text.len() > 1 << 20 {
                            tracing::warn!(upstream = %up.name, bytes = text.len(), "catalog is larger than 1 MiB");
                        }
                        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
                        eprintln!("saved {} ({} tools)", target.display(), file.tools.len());
                    }
                    (Ok(listed.tools), Some(listed.server_info))
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("upstream `{}`: {}", up.name, e.report());
                    (Err(e.report().to_string()), None)
                }
            };
            inputs.push(UpstreamInput {
                config: up.clone(),
                tools,
                server_info,
                package: package.as_ref().map(|p| p.package.clone()),
                version: package.and_then(|p| p.version),
                extras,
            });
        }
        sections.push(measure(&path.display().to_string(), &config.disclosure, &inputs));
    }
    for path in &args.catalogs {
        let file = CatalogFile::read(path)?;
        sections.push(measure(&path.display().to_string(), &disclosure, &[file.to_input()]));
    }
    let report = Report::new(sections);
    let text = if args.json { serde_json::to_string_pretty(&report)? + "\n" } else { report.render(!args.summary) };
    match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    anyhow::ensure!(failed == 0, "{failed} upstream(s) could not be listed");
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
