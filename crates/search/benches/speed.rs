//! Search latency, build time and memory over 10,000 tools: the 399 tools of
//! `tests/corpus` replicated under renamed servers (`r01-github`, ...),
//! queried with the 486 requests of `benches/search/tasks.jsonl`.
//!
//! ```sh
//! cargo bench -p toolgate-search --bench speed
//! ```
//!
//! Prints p50/p99/max of one search (first 10, every tool visible; then half
//! of them visible; then every tool visible with two requests joined into one
//! of two steps, and with a JSON record pasted under each request), the build
//! time and the index's heap bytes a tool.
//! Targets: p50 under 2 ms, at most 2 KiB a tool.

mod corpus;

use serde_json::Value;
use std::hint::black_box;
use std::time::{Duration, Instant};
use toolgate_search::Index;

const TOOLS: usize = 10_000;
const ROUNDS: usize = 3;

fn main() {
    // `cargo test --all-targets` runs bench targets without `--bench` (cargo
    // bench passes it): debug-build timings mean nothing, so measure nothing.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("speed: run with `cargo bench -p toolgate-search --bench speed` (skipped: not a bench run)");
        return;
    }
    let repo = corpus::repo();
    let base = corpus::load(&repo.join("tests/corpus"), "").len();
    let mut docs = Vec::with_capacity(TOOLS);
    for copy in 1.. {
        if docs.len() >= TOOLS {
            break;
        }
        docs.extend(corpus::load(&repo.join("tests/corpus"), &format!("r{copy:02}-")));
    }
    docs.truncate(TOOLS);
    let queries: Vec<String> = std::fs::read_to_string(repo.join("benches/search/tasks.jsonl"))
        .expect("tasks.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("a task")["query"].as_str().expect("query").to_owned())
        .collect();

    // the compiled-in table and tokenizer are read on first use: not part of a build
    let started = Instant::now();
    black_box(Index::build(Vec::new()));
    let model = started.elapsed();
    let mut builds = Vec::new();
    let mut index = None;
    for _ in 0..ROUNDS {
        let docs = docs.clone();
        let started = Instant::now();
        index = Some(Index::build(docs));
        builds.push(started.elapsed());
    }
    let index = index.expect("built");
    builds.sort();

    println!(
        "## toolgate-search over {} tools ({base} corpus tools replicated), {} queries",
        index.len(),
        queries.len()
    );
    println!("model (table + tokenizer) read once per process: {:.1} ms", ms(model));
    println!("build: {:.0} ms (median of {ROUNDS})", ms(builds[ROUNDS / 2]));
    let bytes = index.heap_bytes();
    println!(
        "heap: {:.1} MiB, {:.0} bytes a tool (target at most 2048)",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / index.len() as f64
    );
    // requests of two steps ("<a>. Then <b>", three rankings each) and with
    // data pasted under them (the data left out): what the long-request
    // handling costs
    let two_steps: Vec<String> = queries
        .iter()
        .zip(queries.iter().cycle().skip(queries.len() / 2))
        .map(|(a, b)| format!("{a}. Then {b}"))
        .collect();
    let pasted: Vec<String> = queries
        .iter()
        .map(|q| format!("{q}\n{{\"order_id\": 48213, \"status\": \"shipped\", \"items\": [{{\"sku\": \"A-1138\"}}]}}"))
        .collect();
    for (label, every, queries) in [
        ("all visible", 1, &queries),
        ("half visible", 2, &queries),
        ("all visible, two-step requests", 1, &two_steps),
        ("all visible, data pasted", 1, &pasted),
    ] {
        for q in queries {
            black_box(index.search(q, 10, |d| d % every == 0));
        }
        let mut times = Vec::with_capacity(queries.len() * ROUNDS);
        for _ in 0..ROUNDS {
            for q in queries {
                let started = Instant::now();
                black_box(index.search(black_box(q), 10, |d| d % every == 0));
                times.push(started.elapsed());
            }
        }
        times.sort();
        let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        println!(
            "search, first 10, {label}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms ({} searches; target p50 under 2 ms)",
            ms(at(0.5)),
            ms(at(0.99)),
            ms(at(1.0)),
            ms(mean),
            times.len()
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
