//! Selection fidelity: whether a model still picks the right tool from the
//! minimal forms toolgate serves as well as from the full definitions.
//!
//! Runs the evaluation itself (`benches/fidelity/eval.py`, see its README):
//! 420 hand-written tasks over corpus catalogs, ranked with a local sentence
//! embedding model against the texts `toolgate forms` reports, once for each
//! form. The per-catalog hit counts and the tasks the minimal form loses are
//! pinned as an insta snapshot, so a change to the minimal descriptions shows
//! its effect on selection in review; the target (minimal top-1 at least 95%
//! of full top-1) is asserted. After a deliberate change, accept with
//! `INSTA_UPDATE=always cargo test --test fidelity` and read the diff.
//!
//! The evaluation's Python venv comes from `benches/fidelity/venv.sh`, which
//! `tests/run.sh` runs (it exports `TOOLGATE_FIDELITY_PYTHON`). The model is
//! int8: another CPU family could round a near-tie differently, which would
//! show here as one task moving.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// The target: minimal top-1 accuracy at least this share of full top-1.
const MIN_TOP1_SHARE: f64 = 0.95;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The evaluation's interpreter (set by tests/run.sh).
fn python() -> PathBuf {
    std::env::var_os("TOOLGATE_FIDELITY_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        let venv = repo().join("target/fidelity-venv/bin/python");
        assert!(
            venv.exists(),
            "the selection-fidelity venv is missing: run tests/run.sh or benches/fidelity/venv.sh \
             (or set TOOLGATE_FIDELITY_PYTHON)"
        );
        venv
    })
}

fn count(v: &Value) -> u64 {
    v.as_u64().expect("a count")
}

#[test]
fn selection_fidelity() {
    let started = Instant::now();
    let out = Command::new(python())
        .arg(repo().join("benches/fidelity/eval.py"))
        .args(["--json", "--toolgate", env!("CARGO_BIN_EXE_toolgate")])
        .output()
        .expect("running benches/fidelity/eval.py");
    assert!(out.status.success(), "eval.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("eval.py prints JSON");
    eprintln!("selection fidelity evaluated in {:.1} s", started.elapsed().as_secs_f64());

    let mut table = String::new();
    writeln!(table, "model {}; scoring {}", result["model"].as_str().unwrap(), result["scoring"].as_str().unwrap())
        .unwrap();
    writeln!(
        table,
        "{:<20} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9}",
        "catalog", "tools", "tasks", "full@1", "full@3", "min@1", "min@3"
    )
    .unwrap();
    let catalogs = result["catalogs"].as_array().expect("catalogs");
    for c in catalogs {
        writeln!(
            table,
            "{:<20} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9}",
            c["id"].as_str().unwrap(),
            count(&c["tools"]),
            count(&c["tasks"]),
            count(&c["full"]["top1"]),
            count(&c["full"]["top3"]),
            count(&c["minimal"]["top1"]),
            count(&c["minimal"]["top3"]),
        )
        .unwrap();
    }
    let total = &result["total"];
    let tasks = count(&total["tasks"]);
    let (full1, min1) = (count(&total["full"]["top1"]), count(&total["minimal"]["top1"]));
    writeln!(
        table,
        "{:<20} {:>5} {:>5} {:>9} {:>9} {:>9} {:>9}",
        "overall",
        "",
        tasks,
        full1,
        count(&total["full"]["top3"]),
        min1,
        count(&total["minimal"]["top3"])
    )
    .unwrap();
    for (title, key) in [("lost by the minimal form", "lost"), ("won by the minimal form", "gained")] {
        let entries = result[key].as_array().expect("a task list");
        writeln!(table, "{title}: {}", entries.len()).unwrap();
        for e in entries {
            writeln!(table, "  [{}] {}", e["catalog"].as_str().unwrap(), e["ask"].as_str().unwrap()).unwrap();
        }
    }
    insta::assert_snapshot!("selection_fidelity", table);

    // The task set the issue asks for: at least 300 tasks over at least ten
    // corpus catalogs, and merged catalogs of several upstreams.
    assert!(tasks >= 300, "{tasks} tasks");
    let singles = catalogs.iter().filter(|c| c["servers"].as_array().is_some_and(|s| s.len() == 1)).count();
    let merged = catalogs.len() - singles;
    assert!(singles >= 10 && merged >= 2, "{singles} single and {merged} merged catalogs");

    let share = min1 as f64 / full1 as f64;
    assert!(
        share >= MIN_TOP1_SHARE,
        "minimal top-1 is {:.1}% of full top-1 ({min1} vs {full1} of {tasks}), below {:.0}%\n{table}",
        100.0 * share,
        100.0 * MIN_TOP1_SHARE
    );
}
