use serde_json::json;

use super::*;

fn stdio(command: &str, args: &[&str]) -> UpstreamConfig {
    serde_json::from_value(json!({"name": "up", "command": command, "args": args})).expect("valid config")
}

fn pkg(source: &'static str, package: &str, version: Option<&str>) -> Option<PackageRef> {
    Some(PackageRef { source, package: package.to_owned(), version: version.map(str::to_owned) })
}

#[test]
fn npm_packages_from_npx_and_npm_exec() {
    let cases: &[(&str, &[&str], Option<PackageRef>)] = &[
        (
            "npx",
            &["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/tmp"],
            pkg("npm", "@modelcontextprotocol/server-filesystem", Some("2026.8.31")),
        ),
        ("npx", &["--yes", "firecrawl-mcp@3.26.0"], pkg("npm", "firecrawl-mcp", Some("3.26.0"))),
        ("npx", &["-y", "@scope/pkg"], pkg("npm", "@scope/pkg", None)),
        ("/usr/bin/npx", &["tavily-mcp@0.2.22"], pkg("npm", "tavily-mcp", Some("0.2.22"))),
        ("npx", &["-y", "-p", "@scope/tools@1.0.0", "tools-mcp"], pkg("npm", "@scope/tools", Some("1.0.0"))),
        ("npx", &["--package=@scope/tools@2.0.0", "tools-mcp"], pkg("npm", "@scope/tools", Some("2.0.0"))),
        ("npm", &["exec", "--", "pkg@1.2.3", "--flag"], pkg("npm", "pkg", Some("1.2.3"))),
        ("npx.cmd", &["-y", "pkg@latest"], pkg("npm", "pkg", Some("latest"))),
        ("npx", &["-y"], None),
    ];
    for (command, args, expected) in cases {
        assert_eq!(&package_ref(&stdio(command, args)), expected, "{command} {args:?}");
    }
}

#[test]
fn pypi_packages_from_uvx_uv_and_pipx() {
    let cases: &[(&str, &[&str], Option<PackageRef>)] = &[
        ("uvx", &["mcp-server-time==2026.10.19"], pkg("pypi", "mcp-server-time", Some("2026.10.19"))),
        ("uvx", &["mcp-server-git@2026.10.19", "--repository", "."], pkg("pypi", "mcp-server-git", Some("2026.10.19"))),
        (
            "uvx",
            &["--from", "mcp-server-fetch==2026.10.24", "mcp-server-fetch"],
            pkg("pypi", "mcp-server-fetch", Some("2026.10.24")),
        ),
        ("uvx", &["--from=pkg[cli]==1.0", "pkg"], pkg("pypi", "pkg", Some("1.0"))),
        ("uvx", &["--python", "3.12", "mcp-server-time"], pkg("pypi", "mcp-server-time", None)),
        ("uvx", &["pkg>=1.0"], pkg("pypi", "pkg", None)),
        ("uv", &["tool", "run", "pkg==2"], pkg("pypi", "pkg", Some("2"))),
        ("pipx", &["run", "--spec", "pkg==3", "pkg-bin"], pkg("pypi", "pkg", Some("3"))),
        ("uv", &["run", "server.py"], None),
        ("python3", &["-m", "mcp_server_time"], None),
    ];
    for (command, args, expected) in cases {
        assert_eq!(&package_ref(&stdio(command, args)), expected, "{command} {args:?}");
    }
    let http: UpstreamConfig =
        serde_json::from_value(json!({"name": "h", "url": "http://127.0.0.1:1/mcp"})).expect("valid config");
    assert_eq!(package_ref(&http), None);
}

#[test]
fn catalog_file_round_trips_and_records_its_origin() {
    let config = stdio("npx", &["-y", "@scope/pkg@1.2.3"]);
    let listed = Listed {
        server_info: json!({"name": "pkg-server", "version": "1.2.3"}),
        tools: vec![json!({"name": "a", "inputSchema": {"type": "object"}})],
    };
    let file = CatalogFile::new(&config, listed, "2026-01-02".to_owned());
    let value = serde_json::to_value(&file).unwrap();
    assert_eq!(
        value,
        json!({
            "server": "up",
            "package": "@scope/pkg",
            "version": "1.2.3",
            "captured": "2026-01-02",
            "source": "npm",
            "serverInfo": {"name": "pkg-server", "version": "1.2.3"},
            "tools": [{"name": "a", "inputSchema": {"type": "object"}}]
        })
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("up.json");
    std::fs::write(&path, file.to_pretty()).unwrap();
    assert!(file.to_pretty().ends_with("}\n"));
    assert_eq!(CatalogFile::read(&path).unwrap(), file);
}

#[test]
fn bad_catalog_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, r#"{"server": "x"}"#).unwrap();
    let error = CatalogFile::read(&path).unwrap_err().to_string();
    assert!(error.contains("bad.json") && error.contains("not a catalog file"), "{error}");
    let missing = CatalogFile::read(&dir.path().join("missing.json")).unwrap_err();
    assert!(matches!(missing, CatalogFileError::Read { .. }));
}

#[test]
fn stored_catalogs_become_one_unprefixed_progressive_upstream() {
    let file = CatalogFile {
        server: "Notion API".to_owned(),
        package: None,
        version: None,
        captured: "2026-01-02".to_owned(),
        source: None,
        server_info: json!(null),
        tools: vec![json!({"name": "search"})],
    };
    let input = file.to_input();
    assert_eq!(input.config.name, "notion_api");
    assert_eq!(input.config.mode, crate::config::Mode::Progressive);
    assert_eq!(input.config.prefix, None);
    assert_eq!(input.tools.as_deref().unwrap(), file.tools.as_slice());
}

#[test]
fn today_is_an_iso_date() {
    let date = today();
    assert_eq!(date.len(), 10, "{date}");
    let parts: Vec<&str> = date.split('-').collect();
    assert_eq!(parts.len(), 3, "{date}");
    assert!(parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())), "{date}");
    assert!(date.as_str() > "2025-01-01", "{date}");
}
