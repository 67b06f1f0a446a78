//! The `toolgate` command line.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "toolgate", version, about = "A transparent MCP gateway with progressive disclosure")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway over Streamable HTTP.
    Serve {
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
    DemoUpstream,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            let _cfg = toolgate::config::load(&config).with_context(|| format!("loading {}", config.display()))?;
            Ok(())
        }
        Command::CheckConfig { config } => {
            let cfg = toolgate::config::load(&config).with_context(|| format!("loading {}", config.display()))?;
            println!("{cfg:#?}");
            Ok(())
        }
        Command::DemoUpstream => Ok(toolgate::demo::run_stdio().await?),
    }
}
