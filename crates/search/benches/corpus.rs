//! The stored catalogs of `tests/corpus/*.json` as search documents, merged
//! as the gateway exposes several upstreams: `<server>__<tool>`, the server
//! being the file's stem (`load_catalog` in `benches/search/eval.py`).

use serde_json::Value;
use std::path::{Path, PathBuf};
use toolgate_search::Document;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every tool of every `*.json` in `dir`, files in name order, tools in file
/// order; each named `<prefix><stem>__<tool>` with server `<prefix><stem>`.
pub fn load(dir: &Path, prefix: &str) -> Vec<Document> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut docs = Vec::new();
    for path in files {
        let data: Value = serde_json::from_slice(&std::fs::read(&path).expect("corpus file")).expect("corpus JSON");
        let server = format!("{prefix}{}", path.file_stem().expect("stem").to_string_lossy());
        let info = |k: &str| data.pointer(&format!("/serverInfo/{k}")).and_then(Value::as_str).unwrap_or_default();
        let instructions = data.get("instructions").and_then(Value::as_str).unwrap_or_default();
        let server_info = [info("title"), info("description"), instructions].join(" ");
        for tool in data["tools"].as_array().expect("tools") {
            let name = tool["name"].as_str().expect("tool name");
            let doc = Document::from_tool(&format!("{server}__{name}"), &server, tool).with_server_info(&server_info);
            docs.push(doc);
        }
    }
    docs
}
