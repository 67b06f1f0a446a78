//! `toolgate lock`: writes the lockfile from what the configured upstreams
//! list now, shows how they drifted from it (`--diff`), fails on drift
//! (`--check`, for a scheduled CI job), or approves drift (`--approve`,
//! all of it or some upstreams and tools).

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::Value;

use super::{DriftKind, LockError, LockedTool, LockedUpstream, Lockfile, compare, diff};
use crate::config::{Config, ConfigError};
use crate::tokens::capture::list_tools;

/// Upstreams listed at once.
const CONCURRENCY: usize = 4;

/// `toolgate lock`'s arguments.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// The configuration whose upstreams are listed. The lockfile is its
    /// `[disclosure] lock`, else `toolgate.lock` beside it.
    #[arg(short, long)]
    pub config: PathBuf,
    /// Print every drift from the lockfile as a diff of the definitions; change nothing.
    #[arg(long, conflicts_with_all = ["check", "approve"])]
    pub diff: bool,
    /// Like --diff, and exit with status 1 on any drift (for CI).
    #[arg(long, conflicts_with = "approve")]
    pub check: bool,
    /// Approve drift into the lockfile: all of it, or that of the upstreams
    /// and tools named with --upstream and --tool.
    #[arg(long)]
    pub approve: bool,
    /// With --approve: only this upstream's drift (repeatable).
    #[arg(long, value_name = "NAME", requires = "approve")]
    pub upstream: Vec<String>,
    /// With --approve: only this tool's drift, by the upstream's own name (repeatable).
    #[arg(long, value_name = "NAME", requires = "approve")]
    pub tool: Vec<String>,
}

/// Why `toolgate lock` failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("upstream `{upstream}` could not be listed: {reason}; the lockfile is left as it is")]
    Upstream { upstream: String, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Runs it; `Ok(false)` when `--check` found drift.
pub async fn run(args: &LockArgs) -> Result<bool, CliError> {
    let config = crate::config::load(&args.config)?;
    let path = lock_path(&config, &args.config);
    let listed = list_all(&config).await?;
    let existing = match path.exists() {
        true => Some(Lockfile::read(&path)?),
        false => None,
    };
    if args.diff || args.check {
        let lock = existing.unwrap_or_default();
        let mut drifted = 0;
        let mut out = String::new();
        for (name, tools) in &listed {
            let drift = compare(lock.upstreams.get(name), tools);
            drifted += drift.len();
            out.push_str(&diff::render(name, &drift));
        }
        // Upstreams the lock knows that are no longer configured.
        for (name, up) in lock.upstreams.iter().filter(|(n, _)| !listed.iter().any(|(l, _)| l == *n)) {
            let drift = compare(Some(up), &[]);
            drifted += drift.len();
            out.push_str(&diff::render(name, &drift));
        }
        print!("{out}");
        eprintln!("{}: {drifted} drifted tool(s)", path.display());
        return Ok(!(args.check && drifted > 0));
    }
    let everything = existing.is_none() || (!args.approve || (args.upstream.is_empty() && args.tool.is_empty()));
    let mut lock = existing.unwrap_or_else(Lockfile::new);
    let mut approved = 0;
    for (name, tools) in &listed {
        if !everything && !args.upstream.is_empty() && !args.upstream.contains(name) {
            continue;
        }
        let up = lock.upstreams.entry(name.clone()).or_insert_with(LockedUpstream::default);
        for drift in compare(Some(up), tools) {
            let chosen = |tool: &str| everything || args.tool.is_empty() || args.tool.iter().any(|t| t == tool);
            if !chosen(&drift.tool) && !drift.from.as_deref().is_some_and(chosen) {
                continue;
            }
            approved += 1;
            eprintln!("approved: {} {name}/{}", drift.kind.as_str(), drift.tool);
            match (drift.kind, &drift.current) {
                (DriftKind::Removed, _) | (_, None) => drop(up.tools.remove(&drift.tool)),
                (kind, Some(current)) => {
                    if let (DriftKind::Renamed, Some(from)) = (kind, &drift.from) {
                        up.tools.remove(from);
                    }
                    up.tools.insert(drift.tool.clone(), LockedTool::of(current));
                }
            }
        }
    }
    if everything {
        lock.upstreams.retain(|name, _| listed.iter().any(|(l, _)| l == name));
    }
    lock.write(&path)?;
    let tools: usize = lock.upstreams.values().map(|u| u.tools.len()).sum();
    eprintln!(
        "{}: {tools} tool(s) of {} upstream(s); {approved} change(s) approved",
        path.display(),
        lock.upstreams.len()
    );
    Ok(true)
}

/// Where the lockfile of `config` (loaded from `config_path`) is.
pub fn lock_path(config: &Config, config_path: &Path) -> PathBuf {
    config
        .disclosure
        .lock
        .clone()
        .unwrap_or_else(|| config_path.parent().unwrap_or_else(|| Path::new(".")).join("toolgate.lock"))
}

/// Every upstream's tools now, in configuration order.
async fn list_all(config: &Config) -> Result<Vec<(String, Vec<Value>)>, CliError> {
    let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build()?;
    let listed: Vec<_> = futures::stream::iter(config.upstreams.iter())
        .map(|up| {
            let http = &http;
            async move { (up, list_tools(up, http).await) }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await;
    listed
        .into_iter()
        .map(|(up, result)| match result {
            Ok(listed) => Ok((up.name.clone(), listed.tools)),
            Err(e) => Err(CliError::Upstream { upstream: up.name.clone(), reason: e.report().to_string() }),
        })
        .collect()
}
