//! `toolgate oauth`: the users' authorizations kept in the shared store
//! (`[state] redis_url`): `list` shows who authorized which upstream (never
//! a token); `login` prints a consent link for a client ahead of any call
//! (the running toolgate serves it from the store); `revoke` drops a user's
//! tokens, for one upstream or all, and revokes them at the authorization
//! server when it has a revocation endpoint. Without Redis the tokens live only in the running process,
//! which a restart clears.

use std::path::PathBuf;
use std::sync::Arc;

use super::{OAuth, OAuthError};
use crate::config::{ConfigError, UpstreamAuth};

/// `toolgate oauth`'s arguments.
#[derive(Debug, clap::Args)]
pub struct OAuthArgs {
    #[command(subcommand)]
    pub command: OAuthCommand,
}

/// What `toolgate oauth` does.
#[derive(Debug, clap::Subcommand)]
pub enum OAuthCommand {
    /// List the kept authorizations: client, upstream, issuer, when.
    List {
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Print a consent link for a client, ahead of any call (the running
    /// toolgate serves it from the shared store).
    Login {
        #[arg(short, long)]
        config: PathBuf,
        /// The client, as toolgate names it in logs: the API-key client's
        /// name, or `jwt:<claim value>`.
        #[arg(long)]
        client: String,
        /// The upstream.
        #[arg(long)]
        upstream: String,
    },
    /// Drop a client's tokens (for one upstream, or every OAuth upstream)
    /// and revoke them at the authorization server.
    Revoke {
        #[arg(short, long)]
        config: PathBuf,
        /// The client, as toolgate names it in logs: the API-key client's
        /// name, or `jwt:<claim value>`.
        #[arg(long)]
        client: String,
        /// Only this upstream.
        #[arg(long)]
        upstream: Option<String>,
    },
}

/// Why `toolgate oauth` failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no [state] redis_url: users' tokens live only in the running toolgate's memory (a restart drops them all)"
    )]
    NoStore,
    #[error("cannot open the shared store: {0}")]
    Store(String),
    #[error("`{0}` is not an upstream with auth = \"oauth\"")]
    NotOAuth(String),
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Runs it, printing to stdout.
pub async fn run(args: &OAuthArgs) -> Result<(), CliError> {
    let path = match &args.command {
        OAuthCommand::List { config } | OAuthCommand::Revoke { config, .. } | OAuthCommand::Login { config, .. } => {
            config
        }
    };
    let config = crate::config::load(path)?;
    let Some(url) = &config.state.redis_url else { return Err(CliError::NoStore) };
    let connection =
        crate::shared::Connection::open(url.expose(), &config.state).map_err(|e| CliError::Store(e.to_string()))?;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build()?;
    let oauth = OAuth::new(&config, http, Some(Arc::new(connection)), config.server.listen)
        .map_err(|e| CliError::Store(e.to_string()))?;
    match &args.command {
        OAuthCommand::List { .. } => {
            let kept = oauth.list().await?;
            if kept.is_empty() {
                println!("no authorizations kept");
            }
            for k in kept {
                let when = humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(k.obtained_at),
                );
                println!("{}\t{}\t{}\t{when}", k.principal, k.upstream, k.issuer);
            }
        }
        OAuthCommand::Login { client, upstream, .. } => {
            let up = config
                .upstreams
                .iter()
                .find(|u| &u.name == upstream && u.auth == UpstreamAuth::Oauth)
                .ok_or_else(|| CliError::NotOAuth(upstream.clone()))?;
            let consent = oauth.login(up, client).await?;
            println!("{}", consent.url);
        }
        OAuthCommand::Revoke { client, upstream, .. } => {
            let targets: Vec<_> = config
                .upstreams
                .iter()
                .filter(|u| u.auth == UpstreamAuth::Oauth)
                .filter(|u| upstream.as_ref().is_none_or(|name| &u.name == name))
                .collect();
            if let Some(name) = upstream
                && targets.is_empty()
            {
                return Err(CliError::NotOAuth(name.clone()));
            }
            for up in targets {
                let dropped = oauth.revoke(up, client).await?;
                println!("{client}\t{}\t{}", up.name, if dropped { "revoked" } else { "none kept" });
            }
        }
    }
    Ok(())
}
