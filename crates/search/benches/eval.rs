//! The ranking's figures on the public tool-search tasks: recall@1/5/10 (a
//! hit is any labelled tool among the first k) and MRR (over all 399 tools),
//! on dev and on test, and on test by kind of task, for toolgate-search over
//! the 399 tools of `tests/corpus` (as `benches/search/eval.py` measures).
//!
//! ```sh
//! cargo bench -p toolgate-search --bench eval
//! cargo bench -p toolgate-search --bench eval -- --reference FIGURES.json --rankings RANKS.jsonl
//! cargo bench -p toolgate-search --bench eval -- --corpus benches/search/restbench/corpus \
//!     --tasks benches/search/restbench/tasks.jsonl     # RestBench (all its tasks are "test")
//! benches/search/run.sh --toolgate     # both, with the Python figures made first
//! ```
//!
//! `--reference` adds rows from `eval.py --json` (the references and the
//! Python design); `--rankings` (from `benches/search/rankings.py`, any
//! number) says for how many tasks the Python design's first 10 tools are
//! exactly toolgate's.

mod corpus;

use serde_json::Value;
use std::collections::HashMap;
use std::time::Instant;
use toolgate_search::Index;

const KS: [usize; 3] = [1, 5, 10];
const KINDS: [&str; 3] = ["exact", "paraphrase", "hard"];
/// The rows of `eval.py --json` shown beside toolgate's.
const REFERENCES: [&str; 4] = ["bm25-plain", "dense-minilm", "rrf-plain", "design: bm25f+static+names"];

struct Task {
    id: String,
    split: String,
    kind: String,
    query: String,
    relevant: Vec<String>,
}

/// Recall at each of `KS` and MRR, over a set of tasks' first-relevant ranks.
#[derive(Default, Clone, Copy)]
struct Figures {
    recall: [f64; 3],
    mrr: f64,
}

impl Figures {
    /// `ranks`: the 1-based rank of each task's first labelled tool (None: not ranked).
    fn of(ranks: &[Option<usize>]) -> Figures {
        let n = ranks.len().max(1) as f64;
        let mut f = Figures::default();
        for r in ranks.iter().flatten() {
            for (i, k) in KS.iter().enumerate() {
                if r <= k {
                    f.recall[i] += 1.0 / n;
                }
            }
            f.mrr += 1.0 / (*r as f64) / n;
        }
        f
    }

    fn from_json(v: &Value) -> Option<Figures> {
        let g = |k: &str| v.get(k).and_then(Value::as_f64);
        Some(Figures { recall: [g("r@1")?, g("r@5")?, g("r@10")?], mrr: g("mrr")? })
    }

    fn cells(&self) -> String {
        let r = self.recall.map(|x| format!("{:.1}", 100.0 * x));
        format!("{} | {} | {} | {:.3}", r[0], r[1], r[2], self.mrr)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value =
        |flag: &str| -> Vec<String> { args.windows(2).filter(|w| w[0] == flag).map(|w| w[1].clone()).collect() };
    let repo = corpus::repo();
    // another set of catalogs and tasks (benches/search/restbench), paths from the repository's root
    let corpus_dir = value("--corpus").pop().unwrap_or_else(|| "tests/corpus".into());
    let tasks_file = value("--tasks").pop().unwrap_or_else(|| "benches/search/tasks.jsonl".into());
    let docs = corpus::load(&repo.join(&corpus_dir), "");
    let tasks = load_tasks(&repo.join(&tasks_file));

    let started = Instant::now();
    let index = Index::build(docs);
    let build = started.elapsed();
    let names: Vec<&str> = (0..index.len()).map(|d| index.exposed(d)).collect();
    let started = Instant::now();
    let rankings: Vec<Vec<&str>> = tasks
        .iter()
        .map(|t| index.search(&t.query, index.len(), |_| true).iter().map(|h| names[h.doc]).collect())
        .collect();
    let per_query = started.elapsed().as_secs_f64() / tasks.len() as f64;
    let ranks: Vec<Option<usize>> = tasks
        .iter()
        .zip(&rankings)
        .map(|(t, ranked)| ranked.iter().position(|n| t.relevant.iter().any(|r| r == n)).map(|p| p + 1))
        .collect();
    let select = |keep: &dyn Fn(&Task) -> bool| -> Figures {
        let r: Vec<Option<usize>> = tasks.iter().zip(&ranks).filter(|(t, _)| keep(t)).map(|(_, r)| *r).collect();
        Figures::of(&r)
    };

    println!("## Tool search: toolgate-search on {tasks_file} ({} tools of {corpus_dir})\n", index.len());
    println!("| method | dev R@1 | dev R@5 | dev R@10 | dev MRR | test R@1 | test R@5 | test R@10 | test MRR |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for path in value("--reference") {
        let json: Value = serde_json::from_str(&read(&path)).expect("--reference: eval.py --json output");
        for name in REFERENCES {
            let (Some(dev), Some(test)) = (
                json.pointer(&format!("/{name}/dev")).and_then(Figures::from_json),
                json.pointer(&format!("/{name}/test")).and_then(Figures::from_json),
            ) else {
                continue;
            };
            let label = if name.starts_with("design") { format!("Python {name}") } else { name.to_owned() };
            println!("| {label} | {} | {} |", dev.cells(), test.cells());
        }
    }
    let (dev, test) = (select(&|t| t.split == "dev"), select(&|t| t.split == "test"));
    println!("| **toolgate-search (Rust)** | {} | {} |", dev.cells(), test.cells());
    let count = |s: &str| tasks.iter().filter(|t| t.split == s).count();
    println!("\ndev {} tasks, test {} tasks; recall in %.\n", count("dev"), count("test"));

    println!(
        "| toolgate-search (test) | {} |",
        KINDS.map(|k| format!("{k} R@1 | {k} R@5 | {k} R@10 | {k} MRR")).join(" | ")
    );
    println!("|---|{}", "---:|".repeat(12));
    let kinds = KINDS.map(|k| select(&|t| t.split == "test" && t.kind == k).cells()).join(" | ");
    println!("| toolgate-search | {kinds} |");
    println!(
        "\nindex built in {:.0} ms; {:.3} ms a query over {} tools (all ranked); {:.0} bytes a tool",
        build.as_secs_f64() * 1e3,
        per_query * 1e3,
        index.len(),
        index.heap_bytes() as f64 / index.len() as f64
    );

    for path in value("--rankings") {
        let python: HashMap<String, Vec<String>> = read(&path)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("--rankings: rankings.py output");
                let top = v["top"].as_array().expect("top").iter().map(|n| n.as_str().unwrap_or("").to_owned());
                (v["id"].as_str().unwrap_or("").to_owned(), top.collect())
            })
            .collect();
        let (mut same1, mut same5, mut same10, mut n) = (0, 0, 0, 0);
        for (t, ranked) in tasks.iter().zip(&rankings) {
            let Some(p) = python.get(&t.id) else { continue };
            n += 1;
            let same = |k: usize| p.iter().take(k).map(String::as_str).eq(ranked.iter().take(k).copied());
            same1 += usize::from(same(1));
            same5 += usize::from(same(5));
            same10 += usize::from(same(10));
        }
        println!(
            "\nagainst {path}: same first tool for {same1} of {n} tasks, same first 5 (in order) for {same5}, same first 10 for {same10}"
        );
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn load_tasks(path: &std::path::Path) -> Vec<Task> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a task");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            let relevant =
                v["relevant"].as_array().expect("relevant").iter().filter_map(Value::as_str).map(String::from);
            Task { id: s("id"), split: s("split"), kind: s("kind"), query: s("query"), relevant: relevant.collect() }
        })
        .collect()
}
