//! The workspace's built binaries. Cargo tells a package's tests where that
//! package's own binaries are (`CARGO_BIN_EXE_<name>`), but not another
//! package's: those are found beside the running test executable, in the
//! same target directory, which is where `cargo build --workspace --bins`
//! (or `cargo test --workspace`) puts them.

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::{Context as _, Result, bail};

/// The path of workspace binary `name`, built into the same target
/// directory (and profile) as the running executable.
pub fn workspace_exe(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("the running executable's path")?;
    let mut dir = exe.parent().context("the running executable's directory")?.to_path_buf();
    // Tests and benches run from `<target>/<profile>/deps`, examples from
    // `<target>/<profile>/examples`; binaries are in `<target>/<profile>`.
    if matches!(dir.file_name().and_then(|n| n.to_str()), Some("deps" | "examples")) {
        dir.pop();
    }
    let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        bail!(
            "{} is not built: build the workspace's binaries first (`cargo build --workspace --bins`, with \
             --release for a release run; tests/run.sh does it)",
            path.display()
        );
    }
    Ok(path)
}

/// The conformance and test fixture server (`toolgate-fixture`). Panics with
/// what to do if it is not built.
pub fn fixture_exe() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| match workspace_exe("toolgate-fixture") {
        Ok(path) => path.display().to_string(),
        Err(e) => panic!("{e:#}"),
    })
}
