//! The token corpus: real tool catalogs captured from public MCP servers
//! (`tests/corpus/`, see its README), and the budget toolgate's minimal forms
//! keep on them.
//!
//! This is a schema snapshot in the sense of the tool-design patterns: the
//! per-server token totals and every minimal description are pinned, so any
//! change to the budget or the wording shows up in review. After a deliberate
//! change, accept with `INSTA_UPDATE=always cargo test --test token_corpus`
//! and read the diff.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use toolgate::catalog::{Catalog, UpstreamTools};
use toolgate::config::DisclosureConfig;
use toolgate::tokens::capture::CatalogFile;
use toolgate::tokens::{Report, Section, measure};

/// The ceiling for minimal / full on the whole corpus.
const MAX_RATIO: f64 = 0.25;
/// What we aim for.
const AIM_RATIO: f64 = 0.20;
/// The budget of the selection-fidelity issue: the minimal forms may grow to
/// keep selection accurate (`tests/fidelity.rs`), but stay within this share.
const FIDELITY_BUDGET: f64 = 0.12;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Every corpus file, by file name.
fn corpus() -> Vec<(String, CatalogFile)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, CatalogFile::read(&p).unwrap_or_else(|e| panic!("{e}")))
        })
        .collect()
}

fn sections(corpus: &[(String, CatalogFile)]) -> Vec<Section> {
    corpus.iter().map(|(name, file)| measure(name, &DisclosureConfig::default(), &[file.to_input()])).collect()
}

#[test]
fn corpus_files_record_their_origin() {
    let corpus = corpus();
    assert!(corpus.len() >= 10, "at least ten servers, got {}", corpus.len());
    for (name, file) in &corpus {
        assert_eq!(&file.server, name, "file name is the server name");
        assert!(file.package.as_deref().is_some_and(|p| !p.is_empty()), "{name}: package");
        let version = file.version.as_deref().unwrap_or("");
        assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{name}: pinned version, got {version:?}");
        assert!(matches!(file.source.as_deref(), Some("npm" | "pypi")), "{name}: source");
        let date = file.captured.as_bytes();
        assert!(date.len() == 10 && date[4] == b'-' && date[7] == b'-', "{name}: captured {:?}", file.captured);
        assert!(file.server_info.get("name").is_some(), "{name}: serverInfo");
        assert!(!file.tools.is_empty(), "{name}: tools");
        let size = std::fs::metadata(corpus_dir().join(format!("{name}.json"))).unwrap().len();
        assert!(size < 1 << 20, "{name}: {size} bytes; keep corpus files under 1 MiB");
    }
}

/// Per server: the full and minimal projection totals, pinned.
#[test]
fn corpus_token_budget() {
    let corpus = corpus();
    let report = Report::new(sections(&corpus));
    let mut table = String::new();
    writeln!(table, "encoding {}; projection: {}", report.encoding, report.projection).unwrap();
    writeln!(table, "{:<20} {:<62} {:>5} {:>7} {:>7} {:>6}", "server", "package", "tools", "full", "minimal", "ratio")
        .unwrap();
    for ((_, file), section) in corpus.iter().zip(&report.sections) {
        let t = &section.totals;
        let package = format!("{}@{}", file.package.as_deref().unwrap_or("?"), file.version.as_deref().unwrap_or("?"));
        writeln!(
            table,
            "{:<20} {:<62} {:>5} {:>7} {:>7} {:>5.1}%",
            file.server,
            package,
            t.tools,
            t.full,
            t.minimal,
            100.0 * t.ratio()
        )
        .unwrap();
    }
    let t = &report.total;
    writeln!(table, "{:<83} {:>5} {:>7} {:>7} {:>5.1}%", "corpus", t.tools, t.full, t.minimal, 100.0 * t.ratio())
        .unwrap();
    let added = &report.sections[0].added;
    writeln!(
        table,
        "toolgate adds per catalog: describe tool {}, resource entry {}, template entry {}",
        added.describe_tool.unwrap_or(0),
        added.resource_entry.unwrap_or(0),
        added.template_entry.unwrap_or(0)
    )
    .unwrap();
    let served: usize = report.sections.iter().map(|s| s.served_projection).sum();
    writeln!(
        table,
        "served tools/list projection (minimal + describe tool, per catalog): {served} ({:.1}% of full)",
        100.0 * served as f64 / t.full as f64
    )
    .unwrap();
    writeln!(table, "whole tools/list JSON (reference): full {}, minimal {}", t.full_list_json, t.minimal_list_json)
        .unwrap();
    insta::assert_snapshot!("corpus_token_budget", table);

    let ratio = report.total.ratio();
    assert!(ratio <= MAX_RATIO, "minimal/full on the corpus is {:.1}% > {:.0}%", 100.0 * ratio, 100.0 * MAX_RATIO);
    assert!(
        ratio <= AIM_RATIO,
        "minimal/full on the corpus is {:.1}% > the {:.0}% aim",
        100.0 * ratio,
        100.0 * AIM_RATIO
    );
    assert!(
        ratio <= FIDELITY_BUDGET,
        "minimal/full on the corpus is {:.1}% > the {:.0}% selection-fidelity budget",
        100.0 * ratio,
        100.0 * FIDELITY_BUDGET
    );
    // With what toolgate adds to every catalog (the describe tool in every
    // tools/list), the corpus still stays within the ceiling.
    assert!((served as f64) <= MAX_RATIO * report.total.full as f64, "served {served} of {}", report.total.full);
}

/// Every minimal description of the corpus, pinned, so wording changes are
/// reviewed one by one; each must read as a sentence.
#[test]
fn corpus_minimal_descriptions() {
    let disclosure = DisclosureConfig::default();
    let mut listing = String::new();
    let mut problems = Vec::new();
    for (name, file) in corpus() {
        let input = file.to_input();
        let extras = Default::default();
        let catalog = Catalog::build(
            &[UpstreamTools { config: &input.config, tools: &file.tools, extras: &extras }],
            &disclosure,
        );
        writeln!(listing, "## {name}").unwrap();
        for entry in catalog.tools() {
            let description = entry.minimal["description"].as_str().unwrap_or_default();
            writeln!(listing, "{}: {description}", entry.exposed).unwrap();
            let chars = description.chars().count();
            let words = description.split_whitespace().count();
            let ends = description.ends_with(['.', '!', '?', '…']);
            if chars > disclosure.description_max_chars || words < 2 || !ends {
                problems.push(format!("{name}/{}: {description:?}", entry.exposed));
            }
        }
    }
    insta::assert_snapshot!("corpus_minimal_descriptions", listing);
    assert!(problems.is_empty(), "not a sentence within the limit:\n{}", problems.join("\n"));
}

/// The capture path end to end: `toolgate tokens --config … --save-dir` on
/// the demo upstream writes a catalog file, and `--catalog --json` measures
/// it the same way as the live run.
#[test]
fn capture_and_measure_with_the_cli() {
    let exe = env!("CARGO_BIN_EXE_toolgate");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("capture.toml");
    std::fs::write(&config, format!("[[upstream]]\nname = \"demo\"\ncommand = {exe:?}\nargs = [\"demo-upstream\"]\n"))
        .unwrap();
    let saved = dir.path().join("corpus");
    let live = Command::new(exe)
        .args(["tokens", "--json", "--config"])
        .arg(&config)
        .arg("--save-dir")
        .arg(&saved)
        .env("TOOLGATE_LOG", "warn")
        .output()
        .unwrap();
    assert!(live.status.success(), "{}", String::from_utf8_lossy(&live.stderr));
    let live: Value = serde_json::from_slice(&live.stdout).unwrap();

    let file = CatalogFile::read(&saved.join("demo.json")).unwrap();
    assert_eq!(file.server, "demo");
    assert_eq!((file.package.as_deref(), file.source.as_deref()), (None, None), "not an npx/uvx command");
    assert_eq!(file.tools.len(), 12);
    assert_eq!(file.server_info["name"], "toolgate-demo-tracker");

    let stored =
        Command::new(exe).args(["tokens", "--json", "--catalog"]).arg(saved.join("demo.json")).output().unwrap();
    assert!(stored.status.success(), "{}", String::from_utf8_lossy(&stored.stderr));
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    assert_eq!(live["encoding"], "o200k_base");
    assert_eq!(stored["total"], live["total"], "a stored catalog measures like the live one");
    assert_eq!(
        stored["sections"][0]["upstreams"][0]["tools"], live["sections"][0]["upstreams"][0]["tools"],
        "per tool too"
    );
    assert!(live["total"]["minimal"].as_u64().unwrap() < live["total"]["full"].as_u64().unwrap());

    // A failing upstream is reported and fails the run, after the report.
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"demo\"\ncommand = {exe:?}\nargs = [\"demo-upstream\"]\n\n\
             [[upstream]]\nname = \"broken\"\ncommand = \"/bin/false\"\n"
        ),
    )
    .unwrap();
    let mixed = Command::new(exe).args(["tokens", "--json", "--config"]).arg(&config).output().unwrap();
    assert!(!mixed.status.success());
    let mixed: Value = serde_json::from_slice(&mixed.stdout).unwrap();
    let upstreams = &mixed["sections"][0]["upstreams"];
    assert_eq!(upstreams[0]["tools"].as_array().unwrap().len(), 12, "the healthy upstream is measured");
    assert!(upstreams[1]["error"].as_str().is_some_and(|e| !e.is_empty()), "{upstreams}");
}
