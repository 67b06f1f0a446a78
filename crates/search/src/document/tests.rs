//! Unit tests of `document.rs`.

use super::*;
use serde_json::json;

fn tool() -> Value {
    json!({
        "name": "create_issue",
        "annotations": {"title": "Create  issue"},
        "description": "Open a new\n  issue.",
        "inputSchema": {"type": "object", "properties": {
            "repoName": {"type": "string", "description": "owner/repo"},
            "labels": {"type": "array", "items": {"enum": ["bug", "docs"]}},
            "state": {"enum": ["open", 2, true]}
        }}
    })
}

#[test]
fn from_tool_reads_the_members() {
    let doc = Document::from_tool("github__create_issue", "github", &tool());
    assert_eq!(doc.exposed, "github__create_issue");
    assert_eq!(doc.name, "create_issue");
    assert_eq!(doc.title, "Create issue");
    assert_eq!(doc.description, "Open a new issue.");
    let names: Vec<&str> = doc.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["repoName", "labels", "state"]);
    assert_eq!(doc.params[1].values, ["bug", "docs"]);
    assert_eq!(doc.params[2].values, ["open", "2", "true"]);
}

#[test]
fn title_prefers_the_tool_title() {
    let mut t = tool();
    t["title"] = json!("Open issue");
    assert_eq!(Document::from_tool("x", "s", &t).title, "Open issue");
    t["title"] = json!("");
    assert_eq!(Document::from_tool("x", "s", &t).title, "Create issue");
    assert_eq!(Document::from_tool("x", "s", &json!({"name": 3})).name, "3");
}

#[test]
fn texts() {
    let doc = Document::from_tool("github__create_issue", "github", &tool()).with_server_info("GitHub\n MCP");
    let fields = doc.fields();
    assert_eq!(fields[1], "github GitHub MCP");
    assert_eq!(fields[4], "repoName owner/repo  labels  bug docs state  open 2 true");
    assert_eq!(
        doc.rich_text(),
        "create issue (github) Create issue: Open a new issue. Parameters: repo name: owner/repo; labels; state"
    );
}
