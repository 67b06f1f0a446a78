//! Searches the stored catalogs of `tests/corpus` (399 tools) from the command line:
//!
//! ```sh
//! cargo run --release -p toolgate-search --example search -- "open a PR for my branch"
//! ```

use serde_json::Value;
use std::path::Path;
use toolgate_search::{Document, Index};

fn main() {
    let query = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("tests/corpus").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    let mut docs = Vec::new();
    for path in paths.iter().filter(|p| p.extension().is_some_and(|x| x == "json")) {
        let data: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
        let server = path.file_stem().expect("stem").to_string_lossy();
        for tool in data["tools"].as_array().into_iter().flatten() {
            let name = tool["name"].as_str().unwrap_or_default();
            docs.push(Document::from_tool(&format!("{server}__{name}"), &server, tool));
        }
    }
    let index = Index::build(docs);
    for hit in index.search(&query, 10, |_| true) {
        println!("{:7.3}  {}", hit.score, index.exposed(hit.doc));
    }
}
