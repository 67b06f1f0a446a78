use figment::Figment;
use figment::providers::{Format, Toml};

use super::*;

/// Parses TOML into a `Config` without validating or expanding anything.
fn parse(toml: &str) -> Config {
    Figment::from(Toml::string(toml)).extract().expect("test config parses")
}

fn problems(toml: &str) -> Vec<String> {
    parse(toml).validate().iter().map(ToString::to_string).collect()
}

#[test]
fn defaults_and_zero_upstreams_are_valid() {
    assert_eq!(Config::default().validate(), vec![]);
    assert_eq!(problems(""), Vec::<String>::new());
}

#[test]
fn a_typical_config_is_valid() {
    let toml = r#"
        [[upstream]]
        name = "files"
        command = "npx"
        args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
        env = { NODE_ENV = "production" }
        inherit_env = true
        prefix = ""
        [upstream.tools.read_text_file]
        description = "Read a file."

        [[upstream]]
        name = "remote_2"
        url = "https://mcp.example.com/mcp"
        headers = { Authorization = "Bearer abc" }
        transport = "sse"
        prefix = "Remote-2"
    "#;
    assert_eq!(problems(toml), Vec::<String>::new());
}

#[test]
fn several_mistakes_are_all_reported() {
    let toml = r#"
        [server]
        path = "mcp"
        session_idle_timeout = "0s"
        max_body_bytes = 100
        startup_timeout = "0s"
        sse_keep_alive = "0s"
        allowed_hosts = ["localhost", " "]

        [disclosure]
        description_max_chars = 5
        describe_tool_name = "describe tools"

        [[upstream]]
        name = "Files"
        command = "npx"
        headers = { Authorization = "Bearer x" }
        transport = "sse"
        prefix = "f.s"
        timeout = "0s"
        [upstream.tools.""]
        [upstream.tools.read_file]
        description = "  "

        [[upstream]]
        name = "remote"
        url = "ftp://example.com/mcp"
        args = ["--verbose"]
        env = { "A=B" = "x" }
        inherit_env = true

        [[upstream]]
        name = "remote"
        url = "not a url"
        headers = { "Bad Header" = "x", Authorization = "Bearer x\ny" }

        [[upstream]]
        name = "both"
        command = "npx"
        url = "https://example.com/mcp"

        [[upstream]]
        name = "neither"
        descriptions_dir = "/definitely/not/here"
    "#;
    insta::assert_snapshot!(problems(toml).join("\n"));
}

#[test]
fn upstream_names_must_be_lowercase_words() {
    for good in ["a", "files", "my-server_2", "0"] {
        assert_eq!(problems(&format!("[[upstream]]\nname = \"{good}\"\ncommand = \"x\"")), Vec::<String>::new());
    }
    for bad in ["My", "a.b", "a b", "ä", "x/y"] {
        assert_eq!(
            problems(&format!("[[upstream]]\nname = \"{bad}\"\ncommand = \"x\"")),
            [format!(
                "upstream[0].name: `{bad}` is not a valid upstream name: use lowercase letters, digits, `_` and `-`"
            )]
        );
    }
    assert_eq!(problems("[[upstream]]\nname = \"\"\ncommand = \"x\""), ["upstream[0].name: must not be empty"]);
}

#[test]
fn duplicate_names_point_at_the_first_use() {
    let toml = r#"
        [[upstream]]
        name = "a"
        command = "x"
        [[upstream]]
        name = "b"
        command = "x"
        [[upstream]]
        name = "a"
        command = "x"
    "#;
    assert_eq!(problems(toml), ["upstream[2].name: upstream name `a` is already used by upstream[0]"]);
}

#[test]
fn urls_must_be_http_or_https() {
    let check = |url: &str| problems(&format!("[[upstream]]\nname = \"r\"\nurl = \"{url}\""));
    assert_eq!(check("http://127.0.0.1:9000/mcp"), Vec::<String>::new());
    assert_eq!(check("https://example.com/mcp?x=1"), Vec::<String>::new());
    assert_eq!(
        check("ws://example.com/mcp"),
        ["upstream[0].url: `ws://example.com/mcp` must be an http:// or https:// URL"]
    );
    assert_eq!(check("/mcp"), ["upstream[0].url: `/mcp` is not a valid URL: relative URL without a base"]);
    assert_eq!(check(""), ["upstream[0].url: `` is not a valid URL: relative URL without a base"]);
}

#[test]
fn stdio_and_http_keys_are_not_mixed() {
    let url_upstream = r#"
        [[upstream]]
        name = "r"
        url = "https://example.com/mcp"
        cwd = "/"
    "#;
    assert_eq!(
        problems(url_upstream),
        ["upstream[0].cwd: `cwd` only applies to stdio upstreams (`command`); this upstream uses a `url`"]
    );
    // Keys left at their default are not visible in a typed Config; `load`
    // reports them from the source (see load tests).
    let stdio_upstream = r#"
        [[upstream]]
        name = "s"
        command = "x"
        transport = "streamable_http"
        headers = {}
    "#;
    assert_eq!(problems(stdio_upstream), Vec::<String>::new());
    let written = |_: usize, key: &str| key == "transport";
    let found: Vec<String> = check(&parse(stdio_upstream), &written).iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        ["upstream[0].transport: `transport` only applies to HTTP upstreams (`url`); this upstream runs a `command`"]
    );
}

#[test]
fn numeric_limits_are_inclusive() {
    let ok = "[server]\nmax_body_bytes = 1024\nworker_threads = 1024\n[disclosure]\ndescription_max_chars = 20";
    assert_eq!(problems(ok), Vec::<String>::new());
    let low = "[server]\nmax_body_bytes = 1023\nworker_threads = 1025\n[disclosure]\ndescription_max_chars = 19";
    assert_eq!(
        problems(low),
        [
            "server.max_body_bytes: must be at least 1024 (found 1023)",
            "server.worker_threads: must be at most 1024 (found 1025)",
            "disclosure.description_max_chars: must be at least 20 (found 19)",
        ]
    );
}

#[test]
fn describe_tool_name_is_a_short_tool_name() {
    let check = |name: &str| problems(&format!("[disclosure]\ndescribe_tool_name = \"{name}\""));
    assert_eq!(check(&"a".repeat(64)), Vec::<String>::new());
    assert_eq!(check("Describe-Tools_2"), Vec::<String>::new());
    for bad in ["", "a b", "a.b", &"a".repeat(65)] {
        assert_eq!(check(bad).len(), 1, "{bad:?} should be rejected");
    }
}

#[test]
fn server_path_must_be_a_plain_absolute_path() {
    let check = |path: &str| problems(&format!("[server]\npath = \"{path}\""));
    assert_eq!(check("/"), Vec::<String>::new());
    assert_eq!(check("/gateway/mcp"), Vec::<String>::new());
    assert_eq!(check("mcp"), ["server.path: `mcp` must start with `/`, e.g. `/mcp`"]);
    assert_eq!(check(""), ["server.path: `` must start with `/`, e.g. `/mcp`"]);
    assert_eq!(check("/mcp?x=1"), ["server.path: `/mcp?x=1` must be a plain path, without query, fragment or spaces"]);
}

#[test]
fn directories_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.json");
    std::fs::write(&file, "{}").unwrap();
    let missing = dir.path().join("missing");
    let toml = format!(
        r#"
        [[upstream]]
        name = "a"
        command = "x"
        cwd = "{dir}"
        descriptions_dir = "{dir}"
        [[upstream]]
        name = "b"
        command = "x"
        cwd = "{missing}"
        descriptions_dir = "{file}"
        "#,
        dir = dir.path().display(),
        missing = missing.display(),
        file = file.display(),
    );
    assert_eq!(
        problems(&toml),
        [
            format!("upstream[1].cwd: directory `{}` does not exist", missing.display()),
            format!("upstream[1].descriptions_dir: `{}` is not a directory", file.display()),
        ]
    );
}

#[test]
fn header_values_are_never_echoed() {
    let toml =
        "[[upstream]]\nname = \"r\"\nurl = \"https://e.com\"\nheaders = { Authorization = \"Bearer s3cret\\r\\n\" }";
    let found = problems(toml);
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("upstream[0].headers.Authorization: "), "{found:?}");
    assert!(!found[0].contains("s3cret"), "{found:?}");
}

#[test]
fn the_upstream_protocol_is_auto_by_default_and_2026_needs_a_modern_transport() {
    let config = parse("[[upstream]]\nname = \"a\"\ncommand = \"x\"");
    assert_eq!(config.upstreams[0].protocol, UpstreamProtocol::Auto);
    for (value, expected) in [
        ("auto", UpstreamProtocol::Auto),
        ("2026-07-28", UpstreamProtocol::Modern),
        ("2025-11-25", UpstreamProtocol::Legacy),
    ] {
        let config = parse(&format!("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"{value}\""));
        assert_eq!(config.upstreams[0].protocol, expected);
        assert_eq!(
            problems(&format!("[[upstream]]\nname = \"a\"\nurl = \"http://h/mcp\"\nprotocol = \"{value}\"")),
            Vec::<String>::new()
        );
    }
    assert_eq!(
        problems("[[upstream]]\nname = \"a\"\nurl = \"http://h/sse\"\ntransport = \"sse\"\nprotocol = \"2026-07-28\""),
        [
            "upstream[0].protocol: `2026-07-28` needs Streamable HTTP or stdio; the legacy HTTP+SSE transport speaks only 2024-11-05"
        ]
    );
    let bad: Result<Config, _> =
        Figment::from(Toml::string("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nprotocol = \"2024-11-05\"")).extract();
    let err = bad.expect_err("an unknown protocol is refused").to_string();
    assert!(err.contains("protocol") && err.contains("2024-11-05"), "{err}");
}
