//! The importer against sample files of each client's documented shape
//! (tests/import/, provenance in its README): the output is snapshotted,
//! and it must load with toolgate's own loader once its variables are set,
//! giving back the source's values.

use std::path::{Path, PathBuf};

use figment::Jail;
use serde_json::Value;

use super::*;
use crate::config::{Config, UpstreamConfig};

fn sample(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/import").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loads `toml` with every variable it needs set: secrets to the value they
/// had in the source, the rest from `values` (or `value-of-NAME`). Relative
/// paths resolve against a scratch directory holding `dirs`.
fn load(imported: &Imported, values: &[(&str, &str)], dirs: &[&str]) -> Config {
    let mut loaded = None;
    #[allow(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
    Jail::expect_with(|jail| {
        for var in &imported.variables {
            let given = values.iter().find(|(n, _)| *n == var.name).map(|(_, v)| v.to_string());
            match (given, &var.secret) {
                (Some(v), _) => jail.set_env(&var.name, v),
                (None, Some(secret)) => jail.set_env(&var.name, secret),
                (None, None) if !var.optional => jail.set_env(&var.name, format!("value-of-{}", var.name)),
                (None, None) => {}
            }
        }
        for dir in dirs {
            jail.create_dir(dir)?;
        }
        let base = jail.directory().to_owned();
        let dirs: Vec<String> = dirs.iter().map(|d| base.join(d).display().to_string()).collect();
        for (var, dir) in [("WORKSPACE_FOLDER", dirs.first())] {
            if let Some(dir) = dir.filter(|_| imported.variables.iter().any(|v| v.name == var)) {
                jail.set_env(var, dir);
            }
        }
        loaded = Some(
            crate::config::load_str_in(&imported.toml, &base)
                .unwrap_or_else(|e| panic!("the imported configuration does not load: {e}\n{}", imported.toml)),
        );
        Ok(())
    });
    loaded.expect("loaded")
}

fn upstream<'a>(config: &'a Config, name: &str) -> &'a UpstreamConfig {
    config.upstreams.iter().find(|u| u.name == name).unwrap_or_else(|| panic!("no upstream {name}"))
}

fn strs(value: &Value) -> Vec<String> {
    value.as_array().map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect()).unwrap_or_default()
}

/// Every stdio server of a file without variables of its own comes back
/// with exactly the source's command, arguments and environment once the
/// secrets are set to their old values.
fn assert_round_trip(source: &Value, config: &Config, renamed: &[(&str, &str)]) {
    for (key, server) in source["mcpServers"].as_object().unwrap() {
        let name = renamed.iter().find(|(k, _)| k == key).map_or(key.as_str(), |(_, n)| n);
        let up = upstream(config, name);
        if let Some(url) = server.get("url") {
            assert_eq!(up.url.as_deref(), url.as_str(), "{key}");
            continue;
        }
        let (mut command, mut args) = (server["command"].as_str().unwrap().to_owned(), strs(&server["args"]));
        if command == "cmd" {
            args.remove(0);
            command = args.remove(0);
        }
        assert_eq!(up.command.as_deref(), Some(command.as_str()), "{key}");
        assert_eq!(up.args, args, "{key}");
        let mut env: Vec<(String, String)> = server
            .get("env")
            .and_then(Value::as_object)
            .map(|e| e.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect())
            .unwrap_or_default();
        env.sort();
        let mut loaded: Vec<(String, String)> = up.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        loaded.sort();
        assert_eq!(loaded, env, "{key}");
    }
}

fn secrets(imported: &Imported) -> Vec<(&str, &str)> {
    imported.secrets().collect()
}

#[test]
fn claude_desktop() {
    let text = sample("claude-desktop.json");
    let imported = import(&text, "claude_desktop_config.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    assert_eq!(imported.format, Format::McpServers);
    assert_eq!(imported.upstreams, 7);
    assert_eq!(
        secrets(&imported),
        [
            ("GITHUB_PERSONAL_ACCESS_TOKEN", "<YOUR_TOKEN>"),
            ("BRAVE_API_KEY", "YOUR_API_KEY_HERE"),
            ("POSTGRES_PASSWORD", "s3cret-pass"),
            ("AUTH_HEADER", "Bearer 4f7c1d2e9a8b3c6d5e0f1a2b"),
        ]
    );
    for (_, secret) in secrets(&imported) {
        assert!(!imported.toml.contains(secret), "{secret} was copied");
    }
    let config = load(&imported, &[], &[]);
    // mcp-remote's `${AUTH_HEADER}` is now filled by toolgate, from the same
    // variable that holds the env value.
    let source: Value =
        serde_json::from_str(&text.replace("${AUTH_HEADER}", "Bearer 4f7c1d2e9a8b3c6d5e0f1a2b")).unwrap();
    assert_round_trip(&source, &config, &[("Remote Example", "remote-example")]);
}

#[test]
fn claude_desktop_on_windows() {
    let text = sample("claude-desktop-windows.json");
    let imported = import(&text, "claude_desktop_config.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    let config = load(&imported, &[], &[]);
    let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "brave-search", "brave_search"]);
    let mut source: Value = serde_json::from_str(&text).unwrap();
    // The flag's value is a secret of its own.
    assert_eq!(secrets(&imported).last(), Some(&("BRAVE_SEARCH_API_KEY", "BSAq0Wf3hJ8kL2mN4pR6tV9")));
    source["mcpServers"].as_object_mut().unwrap().remove("brave_search");
    assert_round_trip(&source, &config, &[("Brave Search", "brave-search")]);
    assert_eq!(upstream(&config, "brave_search").args[2..], ["--api-key", "BSAq0Wf3hJ8kL2mN4pR6tV9"]);
}

#[test]
fn claude_code_keeps_its_variables() {
    let imported = import(&sample("claude-code.mcp.json"), ".mcp.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    assert!(secrets(&imported).is_empty());
    let config = load(&imported, &[], &[]);
    let api = upstream(&config, "api-server");
    assert_eq!(api.url.as_deref(), Some("https://api.example.com/sse"), "the default applies");
    assert_eq!(api.headers["Authorization"], "Bearer value-of-API_KEY");
    assert_eq!(upstream(&config, "shared-server").command.as_deref(), Some("/opt/plugins/servers/db-server"));
    let optional: Vec<&str> = imported.variables.iter().filter(|v| v.optional).map(|v| v.name.as_str()).collect();
    assert_eq!(optional, ["API_BASE_URL", "CLAUDE_PLUGIN_ROOT"]);
}

#[test]
fn cursor() {
    let imported = import(&sample("cursor-mcp.json"), ".cursor/mcp.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    // `API_KEY` is what another server reads from the environment: the
    // literal of the first server gets a name of its own.
    assert_eq!(secrets(&imported), [("SERVER_NAME_API_KEY", "value")]);
    let config = load(&imported, &[("API_KEY", "from-env")], &["workspace"]);
    assert_eq!(upstream(&config, "server-name").env["API_KEY"], "value");
    assert_eq!(upstream(&config, "local-server").env["API_KEY"], "from-env");
    assert!(upstream(&config, "local-server").args[0].ends_with("workspace/tools/mcp_server.py"));
    assert!(matches!(upstream(&config, "legacy-sse").target(), Ok(crate::config::Target::Sse(_))));
    assert_eq!(upstream(&config, "remote-server").headers["Authorization"], "Bearer value-of-MY_SERVICE_TOKEN");
}

#[test]
fn vscode_mcp_json() {
    let imported = import(&sample("vscode-mcp.json"), ".vscode/mcp.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    assert_eq!(imported.format, Format::VsCode);
    let inputs: Vec<(&str, &str)> = imported
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.about.as_str()))
        .filter(|(_, a)| a.contains("input"))
        .collect();
    assert_eq!(
        inputs,
        [
            ("PERPLEXITY_KEY", "VS Code input \"Perplexity API Key\""),
            ("GITHUB_TOKEN", "VS Code input \"GitHub Personal Access Token\"")
        ]
    );
    let config = load(&imported, &[("GITHUB_TOKEN", "ghp_x")], &["project"]);
    assert_eq!(upstream(&config, "perplexity").env["PERPLEXITY_API_KEY"], "value-of-PERPLEXITY_KEY");
    assert_eq!(upstream(&config, "githubintegration").headers["Authorization"], "Bearer ghp_x");
    assert!(upstream(&config, "uitesting").cwd.as_ref().unwrap().ends_with("project"));
    assert!(matches!(upstream(&config, "events").target(), Ok(crate::config::Target::Sse(_))));
}

#[test]
fn vscode_settings_json() {
    let imported = import(&sample("vscode-settings.json"), "settings.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    assert_eq!(imported.format, Format::VsCodeSettings);
    let config = load(&imported, &[], &[]);
    assert_eq!(config.upstreams.len(), 2);
    assert_eq!(upstream(&config, "github").env["GITHUB_PERSONAL_ACCESS_TOKEN"], "value-of-GITHUB_TOKEN");
}

#[test]
fn windsurf() {
    let imported = import(&sample("windsurf-mcp_config.json"), "mcp_config.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    let config = load(&imported, &[], &[]);
    assert_eq!(upstream(&config, "figma").url.as_deref(), Some("https://figma-mcp.example.com/mcp"));
    assert_eq!(upstream(&config, "figma").headers["API_KEY"], "value-of-FIGMA_API_KEY");
}

#[test]
fn cline() {
    let imported = import(&sample("cline_mcp_settings.json"), "cline_mcp_settings.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    assert_eq!(imported.skipped, ["\"old-sse\": disabled in the source"]);
    assert_eq!(secrets(&imported), [("OPENWEATHER_API_KEY", "your_api_key"), ("REMOTE_TOKEN", "your-token")]);
    let config = load(&imported, &[], &[]);
    assert_eq!(upstream(&config, "remote").headers["Authorization"], "Bearer your-token");
}

#[test]
fn gemini_cli() {
    let imported = import(&sample("gemini-settings.json"), "settings.json").unwrap();
    insta::assert_snapshot!(imported.toml);
    let config = load(&imported, &[], &["mcp-servers/python"]);
    assert!(matches!(upstream(&config, "httpserver").target(), Ok(crate::config::Target::StreamableHttp(_))));
    assert!(matches!(upstream(&config, "sseserver").target(), Ok(crate::config::Target::Sse(_))));
    assert_eq!(upstream(&config, "httpserverwithauth").headers["X-Custom-Header"], "custom-value");
    assert_eq!(upstream(&config, "pythontools").env["DATABASE_URL"], "$DB_CONNECTION_STRING");
}

#[test]
fn names_are_normalized_and_unique() {
    let imported = import(
        r#"{"mcpServers": {"My Server": {"command": "a"}, "my-server": {"command": "b"}, "MY.SERVER": {"command": "c"},
            "!!!": {"command": "d"}, "Ünïcode": {"command": "e"}}}"#,
        "x",
    )
    .unwrap();
    let config = load(&imported, &[], &[]);
    let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["my-server", "my-server-2", "my-server-3", "server", "n-code"]);
}

#[test]
fn literal_dollar_braces_are_escaped_and_unknown_variables_kept() {
    let imported = import(
        r#"{"servers": {"x": {"command": "echo", "args": ["${config:editor.tabSize}", "cost: ${", "${pathSeparator}tmp"]}}}"#,
        "x",
    )
    .unwrap();
    let config = load(&imported, &[], &[]);
    assert_eq!(config.upstreams[0].args, ["${config:editor.tabSize}", "cost: ${", "/tmp"]);
    assert!(imported.toml.contains("cannot fill"), "{}", imported.toml);
}

#[test]
fn entries_that_cannot_be_imported_are_listed() {
    let imported = import(
        r#"{"mcpServers": {"both": {"command": "a", "url": "https://x.example/mcp"}, "none": {"args": []},
            "ws": {"type": "ws", "url": "wss://x.example"}, "ftp": {"url": "ftp://x.example/mcp"}, "ok": {"command": "a"}}}"#,
        "x",
    )
    .unwrap();
    assert_eq!(imported.upstreams, 1);
    assert_eq!(
        imported.skipped,
        [
            "\"both\": has both `command` and a URL",
            "\"none\": neither `command` nor `url`",
            "\"ws\": unknown `type` \"ws\"",
            "\"ftp\": URL \"ftp://x.example/mcp\" is not http:// or https://",
        ]
    );
    assert!(imported.toml.contains("#   \"ws\": unknown `type`"));
    load(&imported, &[], &[]);
}

#[test]
fn files_without_servers_are_refused() {
    for text in ["[]", "{}", r#"{"servers": []}"#, r#"{"mcp": {}}"#] {
        assert!(matches!(import(text, "x"), Err(ImportError::NoServers)), "{text}");
    }
    assert!(matches!(import("{", "x"), Err(ImportError::Parse(_))));
    let empty = import(r#"{"mcpServers": {}}"#, "x").unwrap();
    assert_eq!(load(&empty, &[], &[]).upstreams.len(), 0);
}

#[test]
fn a_secret_shared_by_two_servers_is_one_variable_and_different_ones_are_two() {
    let imported = import(
        r#"{"mcpServers": {
            "a": {"command": "x", "env": {"API_KEY": "k-one-1234"}},
            "b": {"command": "x", "env": {"API_KEY": "k-one-1234"}},
            "c": {"command": "x", "env": {"API_KEY": "k-two-5678"}}}}"#,
        "x",
    )
    .unwrap();
    assert_eq!(secrets(&imported), [("API_KEY", "k-one-1234"), ("C_API_KEY", "k-two-5678")]);
    let config = load(&imported, &[], &[]);
    let keys: Vec<&str> = config.upstreams.iter().map(|u| u.env["API_KEY"].as_str()).collect();
    assert_eq!(keys, ["k-one-1234", "k-one-1234", "k-two-5678"]);
}

#[test]
fn sample_files_are_all_tested() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let this = include_str!("tests.rs");
    for file in files {
        assert!(this.contains(&format!("sample(\"{file}\")")), "tests/import/{file} has no test");
    }
}

#[test]
fn secrets_in_arguments_are_moved_out() {
    let imported = import(
        r#"{"mcpServers": {"remote": {"command": "npx", "args": [
            "mcp-remote", "https://remote.example/sse?api_key=k-123456", "--header", "Authorization: Bearer abc123def456",
            "--token=t0k3n-value", "--password", "hunter2", "--verbose", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"]}}}"#,
        "x",
    )
    .unwrap();
    assert_eq!(
        secrets(&imported),
        [
            ("REMOTE_API_KEY", "k-123456"),
            ("REMOTE_TOKEN", "abc123def456"),
            ("REMOTE_TOKEN_2", "t0k3n-value"),
            ("REMOTE_PASSWORD", "hunter2"),
            ("REMOTE_SECRET", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
        ]
    );
    assert!(imported.toml.contains(r#""Authorization: Bearer ${REMOTE_TOKEN}""#), "{}", imported.toml);
    let config = load(&imported, &[], &[]);
    assert_eq!(
        config.upstreams[0].args,
        [
            "mcp-remote",
            "https://remote.example/sse?api_key=k-123456",
            "--header",
            "Authorization: Bearer abc123def456",
            "--token=t0k3n-value",
            "--password",
            "hunter2",
            "--verbose",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        ]
    );
}
