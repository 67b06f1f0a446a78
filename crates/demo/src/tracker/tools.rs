//! The demo's tools: each file holds a few related tools, each tool its long
//! definition next to its handler.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use super::model::Tracker;
use crate::kit::{Tool, ToolFailure};

mod edit;
mod issues;
mod knowledge;
mod projects;
mod utility;

pub use projects::summarize;

/// The tracker state the tools share.
pub type State = Arc<Mutex<Tracker>>;

/// Every demo tool, in listing order.
pub fn all(state: &State) -> Vec<Tool> {
    vec![
        projects::list_projects(state.clone()),
        projects::summarize_project(state.clone()),
        projects::list_team_members(state.clone()),
        issues::search_issues(state.clone()),
        issues::get_issue(state.clone()),
        edit::create_issue(state.clone()),
        edit::update_issue(state.clone()),
        edit::add_comment(state.clone()),
        edit::delete_issue(state.clone()),
        knowledge::search_notes(state.clone()),
        utility::compute_statistics(),
        utility::convert_units(),
    ]
}

/// Turns a model error message into a tool error.
fn fail(message: String) -> ToolFailure {
    ToolFailure::Tool(message)
}

/// Tool annotations; every demo tool works on in-memory data, so none is
/// open-world.
fn annotations(title: &str, read_only: bool, destructive: bool, idempotent: bool) -> Value {
    json!({
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": false,
    })
}

/// The JSON Schema of an issue as search results show it.
fn issue_summary_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "title": {"type": "string"},
            "kind": {"type": "string", "enum": ["bug", "feature", "task", "chore"]},
            "status": {"type": "string", "enum": ["backlog", "todo", "in_progress", "in_review", "done", "cancelled"]},
            "priority": {"type": "string", "enum": ["urgent", "high", "medium", "low"]},
            "assignee": {"type": ["string", "null"]},
            "labels": {"type": "array", "items": {"type": "string"}},
            "estimate_points": {"type": ["integer", "null"]},
            "due_date": {"type": ["string", "null"], "format": "date"},
            "overdue": {"type": "boolean"},
            "updated_at": {"type": "string", "format": "date-time"},
        },
        "required": ["key", "title", "kind", "status", "priority", "assignee", "labels", "overdue", "updated_at"],
    })
}

/// The JSON Schema of a full issue record.
fn issue_schema() -> Value {
    let mut schema = issue_summary_schema();
    let props = &mut schema["properties"];
    props["project"] = json!({"type": "string"});
    props["description"] = json!({"type": "string"});
    props["reporter"] = json!({"type": "string"});
    props["created_at"] = json!({"type": "string", "format": "date-time"});
    props["comment_count"] = json!({"type": "integer"});
    props["comments"] = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "author": {"type": "string"},
                "visibility": {"type": "string", "enum": ["team", "internal"]},
                "created_at": {"type": "string", "format": "date-time"},
                "body": {"type": "string"},
            },
            "required": ["id", "author", "visibility", "created_at", "body"],
        },
    });
    schema
}
