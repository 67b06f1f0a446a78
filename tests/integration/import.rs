//! `toolgate import` as a user runs it: the real binary on sample client
//! configurations, from a file and from standard input, with `--secrets`;
//! its output checked by `toolgate check-config` and served by `toolgate
//! serve`.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use anyhow::{Context as _, Result, ensure};
use serde_json::{Value, json};

use crate::common::*;

fn run(args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Result<Output> {
    let mut child = Command::new(toolgate_exe())
        .args(args)
        .envs(env.iter().copied())
        .env_remove("TOOLGATE_CONFIG")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting toolgate")?;
    if let Some(text) = stdin {
        child.stdin.take().context("stdin")?.write_all(text.as_bytes())?;
    }
    Ok(child.wait_with_output()?)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn import_from_a_file_and_from_stdin_loads_with_check_config() -> Result<()> {
    let sample = repo_path("tests/import/claude-desktop.json");
    let from_file = run(&["import", sample.to_str().unwrap()], None, &[])?;
    ensure!(from_file.status.success(), "import failed: {}", text(&from_file.stderr));
    let toml = text(&from_file.stdout);
    assert!(toml.starts_with("# toolgate configuration imported by `toolgate import` from claude-desktop.json,"));
    let summary = text(&from_file.stderr);
    assert!(summary.contains("imported 7 server(s) from claude-desktop.json"), "{summary}");
    assert!(
        summary.contains(
            "set before starting toolgate: GITHUB_PERSONAL_ACCESS_TOKEN BRAVE_API_KEY POSTGRES_PASSWORD AUTH_HEADER"
        ),
        "{summary}"
    );
    assert!(!toml.contains("s3cret-pass") && !toml.contains("<YOUR_TOKEN>"), "a secret was copied:\n{toml}");

    let from_stdin = run(&["import", "-"], Some(&std::fs::read_to_string(&sample)?), &[])?;
    ensure!(from_stdin.status.success(), "import - failed: {}", text(&from_stdin.stderr));
    assert_eq!(text(&from_stdin.stdout), toml.replacen("claude-desktop.json", "standard input", 1));

    let dir = tempfile::tempdir()?;
    let config = dir.path().join("toolgate.toml");
    std::fs::write(&config, &toml)?;
    let secrets = [
        ("GITHUB_PERSONAL_ACCESS_TOKEN", "t1"),
        ("BRAVE_API_KEY", "t2"),
        ("POSTGRES_PASSWORD", "pw"),
        ("AUTH_HEADER", "Bearer t3"),
    ];
    let check = run(&["check-config", "--config", config.to_str().unwrap()], None, &secrets)?;
    ensure!(check.status.success(), "check-config failed: {}", text(&check.stderr));
    let normalized: Value = serde_json::from_slice(&check.stdout)?;
    let names: Vec<&str> =
        normalized["upstream"].as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["filesystem", "github", "brave-search", "postgres", "memory", "fetch", "remote-example"]);
    assert_eq!(normalized["upstream"][3]["args"][2], "postgresql://app:pw@localhost:5432/mydb");

    // Without the variables, check-config names each missing one.
    let missing = run(&["check-config", "--config", config.to_str().unwrap()], None, &[])?;
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("environment variable POSTGRES_PASSWORD is not set"),
        "{}",
        text(&missing.stderr)
    );
    Ok(())
}

#[test]
fn import_writes_the_secrets_it_moved_into_a_private_env_file() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let env_file = dir.path().join("toolgate.env");
    let sample = repo_path("tests/import/cline_mcp_settings.json");
    let out = run(&["import", sample.to_str().unwrap(), "--secrets", env_file.to_str().unwrap()], None, &[])?;
    ensure!(out.status.success(), "import failed: {}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&env_file)?, "OPENWEATHER_API_KEY=your_api_key\nREMOTE_TOKEN=your-token\n");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&env_file)?.permissions().mode() & 0o777, 0o600);
    assert!(text(&out.stderr).contains("left out 1: \"old-sse\": disabled in the source"));

    // An existing file is never overwritten.
    let again = run(&["import", sample.to_str().unwrap(), "--secrets", env_file.to_str().unwrap()], None, &[])?;
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("cannot write"), "{}", text(&again.stderr));
    Ok(())
}

#[test]
fn import_refuses_what_is_not_a_client_configuration() -> Result<()> {
    let out = run(&["import", "-"], Some("{\"editor.fontSize\": 14}"), &[])?;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no MCP servers found"), "{}", text(&out.stderr));
    let out = run(&["import", "-"], Some("not json"), &[])?;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("not valid JSON"), "{}", text(&out.stderr));
    let out = run(&["import", "/nonexistent/claude_desktop_config.json"], None, &[])?;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot read /nonexistent/claude_desktop_config.json"));
    Ok(())
}

/// The imported configuration runs: a Claude Desktop entry for the
/// project's fixture server, imported and served, answers through toolgate.
#[tokio::test]
async fn an_imported_configuration_serves() -> Result<()> {
    let source = json!({"mcpServers": {"Fixture Server": {"command": fixture_exe(), "args": ["--name", "fx"]}}});
    let out = run(&["import", "-"], Some(&source.to_string()), &[])?;
    ensure!(out.status.success(), "import failed: {}", text(&out.stderr));
    let toml = format!("[server]\nlisten = \"127.0.0.1:0\"\n{}", text(&out.stdout));
    let gw = Toolgate::start_raw(&toml).await?;
    let client = Client::connected(&gw.url, json!({})).await?;
    let tools = client.result("tools/list", json!({})).await?;
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    client.read_descriptions("echo").await?;
    let result = client.call_tool("echo", json!({"text": "through an imported config"})).await?;
    assert_eq!(result["content"][0]["text"], "through an imported config", "{result}");
    Ok(())
}
