use std::path::{Path, PathBuf};

use super::*;
use crate::config::{load, load_str, load_str_in};

use crate::config::in_jail;

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn parse_error(result: Result<Config, ConfigError>) -> String {
    match result {
        Err(ConfigError::Parse(message)) => message,
        other => panic!("expected a parse error, got {other:?}"),
    }
}

fn problems(result: Result<Config, ConfigError>) -> Vec<String> {
    match result {
        Err(ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

/// Replaces the absolute config directory so snapshots do not depend on
/// where the repository is checked out.
fn relative_to(mut config: Config, dir: &Path) -> Config {
    for upstream in &mut config.upstreams {
        for path in [upstream.cwd.as_mut(), upstream.descriptions_dir.as_mut()].into_iter().flatten() {
            if let Ok(rest) = path.strip_prefix(dir) {
                let mut shown = PathBuf::from("<config-dir>");
                if !rest.as_os_str().is_empty() {
                    shown.push(rest);
                }
                *path = shown;
            }
        }
    }
    config
}

#[test]
fn example_config_loads_and_is_stable() {
    let path = repo_file("config/example.toml");
    let config = in_jail(|jail| {
        jail.clear_env();
        jail.set_env("GITHUB_PAT", "ghp_example");
        jail.set_env("HOME", "/home/user");
        load(&path)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let dir = std::path::absolute(repo_file("config")).unwrap();
    assert_eq!(config.upstreams[0].cwd.as_deref(), Some(dir.as_path()), "cwd is relative to the file");
    insta::assert_json_snapshot!(relative_to(config, &dir));
}

#[test]
fn example_config_names_its_missing_variables() {
    let found = in_jail(|jail| {
        jail.clear_env();
        problems(load(&repo_file("config/example.toml")))
    });
    assert_eq!(
        found,
        [
            "upstream[1].env.MEMORY_FILE_PATH: environment variable HOME is not set",
            "upstream[5].headers.Authorization: environment variable GITHUB_PAT is not set",
        ]
    );
}

#[test]
fn demo_config_loads_and_is_stable() {
    let config = in_jail(|jail| {
        jail.clear_env();
        jail.set_env("TOOLGATE_EXE", "/usr/local/bin/toolgate");
        load(&repo_file("config/demo.toml"))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    insta::assert_json_snapshot!(config);
}

#[test]
fn demo_config_runs_the_current_executable_by_default() {
    let config = in_jail(|jail| {
        jail.clear_env();
        load(&repo_file("config/demo.toml"))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let exe = std::env::current_exe().unwrap();
    assert_eq!(config.upstreams[0].command.as_deref(), exe.to_str());
    assert_eq!(config.upstreams[0].args, ["demo-upstream"]);
}

#[test]
fn env_overrides_are_typed_and_win_over_the_file() {
    let config = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__LISTEN", "127.0.0.1:9000");
        jail.set_env("TOOLGATE_SERVER__SESSION_IDLE_TIMEOUT", "5m");
        jail.set_env("TOOLGATE_SERVER__MAX_BODY_BYTES", "2048");
        jail.set_env("TOOLGATE_SERVER__ALLOWED_HOSTS", "[gateway.internal, localhost]");
        jail.set_env("TOOLGATE_DISCLOSURE__DESCRIBE_TOOL", "false");
        // Lower case works too: figment matches the prefix without case.
        jail.set_env("toolgate_disclosure__describe_tool_name", "tool_info");
        load_str("[server]\nlisten = \"127.0.0.1:8080\"\n[disclosure]\ndescribe_tool = true")
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.server.listen, "127.0.0.1:9000".parse().unwrap());
    assert_eq!(config.server.session_idle_timeout, std::time::Duration::from_secs(300));
    assert_eq!(config.server.max_body_bytes, 2048);
    assert_eq!(config.server.allowed_hosts, ["gateway.internal", "localhost"]);
    assert!(!config.disclosure.describe_tool);
    assert_eq!(config.disclosure.describe_tool_name, "tool_info");
}

#[test]
fn a_bad_env_override_names_the_variable() {
    let message = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__LISTEN", "localhost:nope");
        parse_error(load_str(""))
    });
    assert_eq!(message, "environment variable TOOLGATE_SERVER__LISTEN: server.listen: invalid socket address syntax");
}

#[test]
fn an_unknown_env_override_is_rejected() {
    let message = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__LISTNE", "127.0.0.1:1");
        parse_error(load_str(""))
    });
    assert!(
        message.starts_with(
            "environment variable TOOLGATE_SERVER__LISTNE: server.listne: unknown key `listne`, expected one of `listen`, `path`,"
        ),
        "{message}"
    );
}

#[test]
fn toolgate_variables_for_other_purposes_are_ignored() {
    let config = in_jail(|jail| {
        jail.set_env("TOOLGATE_CONFIG", "/etc/toolgate.toml");
        jail.set_env("TOOLGATE_LOG", "debug");
        jail.set_env("TOOLGATE_LOG_FORMAT", "json");
        jail.set_env("TOOLGATE_EXE", "/bin/toolgate");
        jail.set_env("TOOLGATE_TEST_PYTHON", "/usr/bin/python3");
        load_str("")
    });
    assert_eq!(config.unwrap_or_else(|e| panic!("{e}")), Config::default());
}

#[test]
fn upstream_env_overrides_are_refused() {
    let message = in_jail(|jail| {
        jail.set_env("TOOLGATE_UPSTREAM__NAME", "x");
        parse_error(load_str("[[upstream]]\nname = \"a\"\ncommand = \"x\""))
    });
    assert_eq!(
        message,
        "environment variable TOOLGATE_UPSTREAM__NAME: [[upstream]] entries cannot be overridden from the \
         environment; use ${VAR} references in the config file instead"
    );
}

#[test]
fn problems_from_env_overrides_say_so() {
    let found = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__PATH", "mcp");
        problems(load_str("[disclosure]\ndescription_max_chars = 3"))
    });
    assert_eq!(
        found,
        [
            "server.path: `mcp` must start with `/`, e.g. `/mcp` (set by environment variable TOOLGATE_SERVER__PATH)",
            "disclosure.description_max_chars: must be at least 20 (found 3)",
        ]
    );
}

#[test]
fn variables_expand_everywhere_and_fill_typed_values() {
    let config = in_jail(|jail| {
        jail.set_env("TOKEN", "s3cret");
        jail.set_env("BIN", "/opt/bin/server");
        jail.set_env("TOOLGATE_SERVER__PATH", "/${MCP_PATH:-gateway}");
        load_str(
            r#"
            [server]
            max_body_bytes = "${MAX_BODY:-2048}"
            session_idle_timeout = "${IDLE:-10m}"
            [disclosure]
            describe_tool = "${DESCRIBE:-false}"
            [[upstream]]
            name = "a"
            command = "${BIN}"
            args = ["--token=${TOKEN}", "$${NOT_EXPANDED}"]
            env = { TOKEN = "${TOKEN}" }
            [upstream.tools.t]
            description = "Uses ${TOKEN:-none}."
            examples = [{ note = "${TOKEN}" }]
            "#,
        )
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.server.path, "/gateway");
    assert_eq!(config.server.max_body_bytes, 2048);
    assert_eq!(config.server.session_idle_timeout, std::time::Duration::from_secs(600));
    assert!(!config.disclosure.describe_tool);
    let upstream = &config.upstreams[0];
    assert_eq!(upstream.command.as_deref(), Some("/opt/bin/server"));
    assert_eq!(upstream.args, ["--token=s3cret", "${NOT_EXPANDED}"]);
    assert_eq!(upstream.env["TOKEN"], "s3cret");
    assert_eq!(upstream.tools["t"].description.as_deref(), Some("Uses s3cret."));
    assert_eq!(upstream.tools["t"].examples, Some(serde_json::json!([{ "note": "s3cret" }])));
}

#[test]
fn unset_variables_are_reported_with_their_path() {
    let found = in_jail(|_| {
        problems(load_str(
            r#"
            [[upstream]]
            name = "fs"
            command = "npx"
            [[upstream]]
            name = "time"
            url = "https://time.example.com/mcp"
            headers = { Authorization = "Bearer ${TIME_TOKEN}" }
            "#,
        ))
    });
    assert_eq!(found, ["upstream[1].headers.Authorization: environment variable TIME_TOKEN is not set"]);
}

#[test]
fn relative_paths_follow_the_config_file() {
    in_jail(|jail| {
        jail.create_dir("conf/work").unwrap();
        jail.create_dir("conf/desc").unwrap();
        jail.create_dir("other").unwrap();
        jail.create_file(
            "conf/toolgate.toml",
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"work\"\ndescriptions_dir = \"./desc\"",
        )
        .unwrap();
        let root = jail.directory().to_path_buf();

        let config = load(Path::new("conf/toolgate.toml")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.upstreams[0].cwd, Some(root.join("conf/work")));
        assert_eq!(config.upstreams[0].descriptions_dir, Some(root.join("conf/desc")));

        // load_str: against the current directory, or the one given.
        let text = "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"other\"";
        assert_eq!(load_str(text).unwrap_or_else(|e| panic!("{e}")).upstreams[0].cwd, Some(root.join("other")));
        let text = "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"work\"";
        let config = load_str_in(text, &root.join("conf")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.upstreams[0].cwd, Some(root.join("conf/work")));

        // Absolute paths are kept; a missing relative one is reported resolved.
        let text = format!("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"{}\"", root.join("other").display());
        assert_eq!(load_str_in(&text, Path::new("/")).unwrap().upstreams[0].cwd, Some(root.join("other")));
        let found = problems(load_str("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"nope\""));
        assert_eq!(found, [format!("upstream[0].cwd: directory `{}` does not exist", root.join("nope").display())]);
    });
}

#[test]
fn type_errors_name_the_file_and_key() {
    let (timeout, table, unknown, syntax, missing) = in_jail(|jail| {
        let write_and_load = |name: &str, text: &str| {
            jail.create_file(name, text).unwrap();
            parse_error(load(Path::new(name)))
        };
        (
            write_and_load("timeout.toml", "[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout = 30"),
            write_and_load("table.toml", "[upstream]\nname = \"a\"\ncommand = \"x\""),
            write_and_load(
                "unknown.toml",
                "[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[upstream.tools.t]\ndescripton = \"x\"",
            ),
            write_and_load("syntax.toml", "[server]\nlisten = 127.0.0.1:80\n"),
            write_and_load("missing.toml", "[[upstream]]\ncommand = \"x\""),
        )
    });
    assert_eq!(
        timeout,
        "timeout.toml: upstream[0].timeout: invalid type: found signed int `30`, expected a duration \
         (write durations as strings, e.g. \"30s\", \"5m\" or \"1h\")"
    );
    assert_eq!(
        table,
        "table.toml: upstream: invalid type: found map, expected a sequence \
         (write each upstream as an [[upstream]] table, with double brackets)"
    );
    assert!(
        unknown.starts_with(
            "unknown.toml: upstream[0].tools.t.descripton: unknown key `descripton`, expected one of `description`,"
        ),
        "{unknown}"
    );
    assert!(syntax.starts_with("syntax.toml: TOML parse error at line 2"), "{syntax}");
    assert_eq!(missing, "missing.toml: upstream[0]: missing field `name`");
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let message = parse_error(load(Path::new("/definitely/not/here/toolgate.toml")));
    assert!(message.starts_with("cannot read config file /definitely/not/here/toolgate.toml: "), "{message}");
}

#[test]
fn misplaced_keys_are_reported_even_at_their_default() {
    let found = in_jail(|_| {
        problems(load_str(
            r#"
            [[upstream]]
            name = "s"
            command = "x"
            transport = "streamable_http"
            headers = {}
            [[upstream]]
            name = "h"
            url = "http://127.0.0.1:9/mcp"
            args = []
            inherit_env = false
            "#,
        ))
    });
    insta::assert_snapshot!(found.join("\n"));
}

#[test]
fn a_config_with_many_mistakes_reports_all_of_them() {
    let found = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__MAX_BODY_BYTES", "10");
        problems(load_str(
            r#"
            [server]
            path = "mcp"
            sse_keep_alive = "0s"
            [disclosure]
            describe_tool_name = "describe tools!"
            [[upstream]]
            name = "Files"
            command = "npx"
            transport = "sse"
            [[upstream]]
            name = "remote"
            url = "ftp://example.com"
            cwd = "/"
            [[upstream]]
            name = "remote"
            [upstream.tools.read_file]
            description = ""
            "#,
        ))
    });
    insta::assert_snapshot!(found.join("\n"));
}
