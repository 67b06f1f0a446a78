//! What triggers a reload: SIGHUP, and a change of the configuration file.
//!
//! The watcher (notify, debounced) watches the file's directory rather than
//! the file: editors save by writing a new file and renaming it over the old
//! one, and Kubernetes updates a mounted ConfigMap by swapping the `..data`
//! symlink the file points through; a watch on the file itself would follow
//! the old inode and miss both. Any event in the directory makes the file
//! be read again; only a content change reloads. SIGHUP always reloads.
//!
//! The file is loaded exactly as at start (TOML, `TOOLGATE_*` overrides,
//! `${VAR}` expansion, validation). An invalid file changes nothing: every
//! problem is logged with its TOML path, and the running configuration stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use tokio::sync::mpsc;

use super::super::Gateway;
use crate::config::{Config, ConfigError};

/// How long the directory must be quiet before a change is read (an editor's
/// write-and-rename, a ConfigMap's symlink swap, come as bursts of events).
const DEBOUNCE: Duration = Duration::from_millis(400);

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Signal,
    File,
}

impl Trigger {
    fn name(self) -> &'static str {
        match self {
            Trigger::Signal => "SIGHUP",
            Trigger::File => "file change",
        }
    }
}

/// Reloads `gateway` from `path` on SIGHUP and whenever the file's content
/// changes, until the gateway shuts down. `prepare` adjusts each loaded
/// configuration as the start did (stdio drops `[auth]`).
pub fn watch(gateway: &Arc<Gateway>, path: PathBuf, prepare: fn(&mut Config)) {
    // What is in effect, read now rather than when the task first runs: a
    // change made in between would otherwise be taken for the start's
    // content and never applied.
    let last = std::fs::read(&path).ok();
    let (tx, rx) = mpsc::channel(4);
    signals(tx.clone());
    let watcher = file_watcher(&path, tx);
    let gateway = Arc::downgrade(gateway);
    crate::spawn(run(gateway, path, prepare, rx, watcher, last));
}

/// Reloads on each trigger, one at a time.
async fn run(
    gateway: Weak<Gateway>,
    path: PathBuf,
    prepare: fn(&mut Config),
    mut triggers: mpsc::Receiver<Trigger>,
    watcher: Option<Debouncer<RecommendedWatcher>>,
    mut last: Option<Vec<u8>>,
) {
    // The watcher stops when dropped: it lives as long as this task.
    let _watcher = watcher;
    while let Some(trigger) = triggers.recv().await {
        let Some(gw) = gateway.upgrade() else { return };
        if gw.is_shutting_down() {
            return;
        }
        let now = std::fs::read(&path).ok();
        if trigger == Trigger::File && (now.is_none() || now == last) {
            // Another file of the directory, or the file is being replaced.
            continue;
        }
        last = now;
        reload_from(&gw, &path, prepare, trigger).await;
    }
}

/// Loads `path` and puts it in effect, or logs why not.
async fn reload_from(gateway: &Arc<Gateway>, path: &Path, prepare: fn(&mut Config), trigger: Trigger) {
    // SIGHUP also reopens the audit file (an external rotation moved it).
    if let (Trigger::Signal, Some(audit)) = (trigger, gateway.views.audit()) {
        audit.reopen();
    }
    let file = path.display();
    let mut config = match crate::config::load(path) {
        Ok(config) => config,
        Err(ConfigError::Invalid(problems)) => {
            for p in &problems {
                tracing::error!(config = %file, toml_path = %p.path, "invalid configuration: {p}");
            }
            tracing::warn!(config = %file, trigger = trigger.name(), problems = problems.len(), "reload refused; the running configuration stays");
            return;
        }
        Err(e) => {
            tracing::error!(config = %file, "invalid configuration: {e}");
            tracing::warn!(config = %file, trigger = trigger.name(), "reload refused; the running configuration stays");
            return;
        }
    };
    prepare(&mut config);
    match gateway.reload(config).await {
        Ok(changes) => {
            tracing::info!(config = %file, trigger = trigger.name(), "configuration reloaded: {changes}");
            for section in &changes.needs_restart {
                tracing::warn!(section, "[{section}] changed; it takes effect after a restart");
            }
        }
        Err(e) => tracing::error!(config = %file, error = %e, "reload refused; the running configuration stays"),
    }
}

/// Sends a trigger on each SIGHUP.
fn signals(tx: mpsc::Sender<Trigger>) {
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => return tracing::warn!(error = %e, "cannot listen for SIGHUP; reload on file change only"),
    };
    crate::spawn(async move {
        while hangup.recv().await.is_some() {
            if tx.send(Trigger::Signal).await.is_err() {
                return;
            }
        }
    });
}

/// Watches the directory of `path`; a trigger on each (debounced) change.
fn file_watcher(path: &Path, tx: mpsc::Sender<Trigger>) -> Option<Debouncer<RecommendedWatcher>> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let handler = move |events: DebounceEventResult| match events {
        // A full queue already holds a trigger, which reads the newest file.
        Ok(events) if !events.is_empty() => drop(tx.try_send(Trigger::File)),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "config file watcher error"),
    };
    let mut debouncer = match new_debouncer(DEBOUNCE, handler) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the configuration file; reload on SIGHUP only");
            return None;
        }
    };
    if let Err(e) = debouncer.watcher().watch(dir, RecursiveMode::NonRecursive) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the configuration's directory; reload on SIGHUP only");
        return None;
    }
    tracing::info!(config = %path.display(), "reloading the configuration on SIGHUP and when the file changes");
    Some(debouncer)
}
