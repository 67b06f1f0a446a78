//! What the soak reads about toolgate from `/proc` while it runs: resident
//! memory every second, open file descriptors, and its process tree.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::procs::rss_bytes;

/// One sample: seconds since the start, calls done by then, resident
/// bytes, open file descriptors.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub secs: f64,
    pub calls: u64,
    pub rss: u64,
    pub fds: usize,
}

/// Samples `pid`'s RSS and file descriptors every second into `series` until `stop` is set;
/// `calls` says how many calls are done.
pub async fn sample_rss(
    pid: u32,
    epoch: tokio::time::Instant,
    calls: Arc<std::sync::atomic::AtomicU64>,
    series: Arc<Mutex<Vec<Sample>>>,
    stop: tokio_util::sync::CancellationToken,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Some(rss) = rss_bytes(pid) {
            let calls = calls.load(std::sync::atomic::Ordering::Relaxed);
            let fds = fd_count(pid).unwrap_or(0);
            series.lock().push(Sample { secs: epoch.elapsed().as_secs_f64(), calls, rss, fds });
        }
    }
}

/// Open file descriptors of `pid`.
pub fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// Every live process's parent, from `/proc/<pid>/stat`.
fn parents() -> BTreeMap<u32, u32> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the command name (which may hold spaces): state, ppid, …
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 2..]) else { continue };
        if let Some(ppid) = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            out.insert(pid, ppid);
        }
    }
    out
}

/// The processes descended from `root` (not `root` itself), with their
/// command lines.
pub fn descendants(root: u32) -> Vec<(u32, String)> {
    let parents = parents();
    let mut tree = BTreeSet::from([root]);
    // Parents are not always numbered below their children: repeat until stable.
    loop {
        let before = tree.len();
        for (&pid, ppid) in &parents {
            if tree.contains(ppid) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    tree.remove(&root);
    tree.into_iter().map(|pid| (pid, cmdline(pid))).collect()
}

/// Whether `pid` still exists (a zombie counts: nobody reaped it).
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// A process's command line, for the report.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " ").trim().to_owned())
        .unwrap_or_default()
}

/// MiB, for printing.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
