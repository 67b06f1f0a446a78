//! Build script: names the commit toolgate was built from, for
//! `toolgate --version` (`toolgate 0.1.0 (commit 1a2b3c4)`).
//!
//! The commit comes from `TOOLGATE_BUILD_COMMIT` when a packager sets it,
//! else from `git rev-parse --short HEAD`. Outside a git checkout (the
//! Docker build's context leaves `.git` out) and without git, the version is
//! the crate's alone: a build never fails for want of a commit.

use std::path::PathBuf;
use std::process::Command;

/// Set by whoever builds outside a git checkout and knows the commit.
const COMMIT_VAR: &str = "TOOLGATE_BUILD_COMMIT";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed={COMMIT_VAR}");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = std::env::var(COMMIT_VAR).ok().filter(|c| !c.trim().is_empty()).or_else(git_commit);
    let full = match commit {
        Some(commit) => format!("{version} (commit {})", commit.trim()),
        None => version,
    };
    println!("cargo:rustc-env=TOOLGATE_VERSION={full}");
}

/// The short hash of HEAD, and a rerun whenever HEAD moves; `None` outside git.
fn git_commit() -> Option<String> {
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    // HEAD names the branch; the branch's ref file (or packed-refs, once
    // git packs it) changes with every commit. Watching them keeps the
    // version current without rerunning on every source change.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["rev-parse", "--symbolic-full-name", "HEAD"]).filter(|b| b.starts_with("refs/")) {
        watched.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.into_iter().map(PathBuf::from).filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    Some(commit)
}

/// One line of `git ARGS` run in the package's directory.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.trim();
    (!line.is_empty()).then(|| line.to_owned())
}
