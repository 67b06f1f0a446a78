//! The `toolgate import` command: reads a file (or standard input), prints
//! the TOML on standard output and a summary on standard error, and can
//! write the secrets it moved out into an env file.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use super::{ImportError, import};

/// Arguments of `toolgate import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The client configuration: claude_desktop_config.json, .mcp.json,
    /// .cursor/mcp.json, .vscode/mcp.json, settings.json, … (`-` for
    /// standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Also write the secrets moved out of the file as NAME=value lines to
    /// this new file (created with mode 0600; an existing file is not
    /// overwritten), for `docker run --env-file` or Compose's `env_file`.
    #[arg(long, value_name = "ENV_FILE")]
    pub secrets: Option<PathBuf>,
}

/// Why `toolgate import` failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{0}: {1}")]
    Import(String, ImportError),
    #[error("cannot write {0}: {1}")]
    Write(String, std::io::Error),
    #[error("the secret for {0} spans several lines and cannot go into an env file")]
    Multiline(String),
}

/// Runs `toolgate import`.
pub fn run(args: &ImportArgs) -> Result<(), CliError> {
    let stdin = args.file == Path::new("-");
    let (text, label) = if stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| CliError::Read("standard input".into(), e))?;
        (text, "standard input".to_owned())
    } else {
        let text =
            std::fs::read_to_string(&args.file).map_err(|e| CliError::Read(args.file.display().to_string(), e))?;
        let label =
            args.file.file_name().map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into());
        (text, label)
    };
    let imported = import(&text, &label).map_err(|e| CliError::Import(label.clone(), e))?;
    if let Some(path) = &args.secrets {
        write_secrets(path, imported.secrets())?;
    }
    match std::io::stdout().write_all(imported.toml.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(CliError::Write("standard output".into(), e));
        }
        _ => {}
    }
    let mut summary = format!("imported {} server(s) from {label}", imported.upstreams);
    if !imported.skipped.is_empty() {
        summary += &format!("; left out {}: {}", imported.skipped.len(), imported.skipped.join("; "));
    }
    let needed: Vec<&str> = imported.variables.iter().filter(|v| !v.optional).map(|v| v.name.as_str()).collect();
    if !needed.is_empty() {
        summary += &format!("\nset before starting toolgate: {}", needed.join(" "));
    }
    if let Some(path) = &args.secrets {
        summary += &format!("\nsecrets written to {}", path.display());
    }
    eprintln!("{summary}");
    Ok(())
}

fn write_secrets<'a>(path: &Path, secrets: impl Iterator<Item = (&'a str, &'a str)>) -> Result<(), CliError> {
    let mut text = String::new();
    for (name, value) in secrets {
        if value.contains(['\n', '\r']) {
            return Err(CliError::Multiline(name.to_owned()));
        }
        text += &format!("{name}={value}\n");
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let write = |mut f: std::fs::File| f.write_all(text.as_bytes());
    options.open(path).and_then(write).map_err(|e| CliError::Write(path.display().to_string(), e))
}
