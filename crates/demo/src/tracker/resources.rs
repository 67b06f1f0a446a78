//! The demo's resources: the team roster, a knowledge-base index, one entry
//! per project, and templates for projects, issues and notes.

use std::collections::HashMap;

use serde_json::{Value, json};
use toolgate_mcp::jsonrpc::ErrorObject;

use super::model::TEAM;
use super::tools::State;
use super::tools::summarize;
use crate::kit::{Registry, Resource, ResourceTemplate};

/// Adds the resources and templates.
pub fn register(registry: Registry, state: &State) -> Registry {
    let roster = json!(TEAM.iter().map(|(h, n, r)| json!({"handle": h, "name": n, "role": r})).collect::<Vec<_>>());
    let mut registry = registry.with_resource(Resource::fixed(
        json!({
            "uri": "demo://team/roster",
            "name": "team-roster",
            "title": "Team roster",
            "description": "The five people on the team: handle, name and role.",
            "mimeType": "application/json",
        }),
        vec![json!({"uri": "demo://team/roster", "mimeType": "application/json", "text": roster.to_string()})],
    ));

    let s = state.clone();
    registry = registry.with_resource(Resource::new(
        json!({
            "uri": "demo://kb/index",
            "name": "knowledge-base-index",
            "title": "Knowledge base index",
            "description": "Every knowledge-base note with its id, title and tags (read a note via demo://notes/{id}).",
            "mimeType": "text/markdown",
        }),
        move |uri, _| {
            let t = s.lock();
            let mut text = String::from("# Knowledge base\n\n");
            for n in &t.notes {
                text.push_str(&format!("- `{}`: {} ({})\n", n.id, n.title, n.tags.join(", ")));
            }
            Ok(vec![json!({"uri": uri, "mimeType": "text/markdown", "text": text})])
        },
    ));

    let projects: Vec<(String, String, String)> =
        state.lock().projects.iter().map(|p| (p.key.clone(), p.name.clone(), p.summary.clone())).collect();
    for (key, name, summary) in projects {
        let s = state.clone();
        registry = registry.with_resource(Resource::new(
            json!({
                "uri": format!("demo://projects/{key}"),
                "name": format!("project-{}", key.to_lowercase()),
                "title": name,
                "description": summary,
                "mimeType": "application/json",
            }),
            move |uri, _| project(&s, uri, &key),
        ));
    }

    let s = state.clone();
    let projects = ResourceTemplate::new(
        json!({
            "uriTemplate": "demo://projects/{key}",
            "name": "project",
            "title": "Project overview",
            "description": "A project's details and its health report (the same data as summarize_project).",
            "mimeType": "application/json",
        }),
        move |uri, vars: &HashMap<String, String>| project(&s, uri, vars.get("key").map_or("", String::as_str)),
    );
    let s = state.clone();
    let issues = ResourceTemplate::new(
        json!({
            "uriTemplate": "demo://issues/{key}",
            "name": "issue",
            "title": "Issue",
            "description": "One issue in full, with comments (the same data as get_issue).",
            "mimeType": "application/json",
        }),
        move |uri, vars: &HashMap<String, String>| {
            let t = s.lock();
            let issue = t.issue(vars.get("key").map_or("", String::as_str)).map_err(|_| not_found(uri))?;
            Ok(vec![json!({"uri": uri, "mimeType": "application/json", "text": issue.full_json(true).to_string()})])
        },
    );
    let s = state.clone();
    let notes = ResourceTemplate::new(
        json!({
            "uriTemplate": "demo://notes/{id}",
            "name": "note",
            "title": "Knowledge-base note",
            "description": "One knowledge-base note as Markdown.",
            "mimeType": "text/markdown",
        }),
        move |uri, vars: &HashMap<String, String>| {
            let t = s.lock();
            let id = vars.get("id").map_or("", String::as_str);
            let note = t.notes.iter().find(|n| n.id == id).ok_or_else(|| not_found(uri))?;
            Ok(vec![json!({"uri": uri, "mimeType": "text/markdown", "text": note.body})])
        },
    );
    [projects, issues, notes].into_iter().flatten().fold(registry, Registry::with_template)
}

fn project(state: &State, uri: &str, key: &str) -> Result<Vec<Value>, ErrorObject> {
    let t = state.lock();
    let p = t.project(key).map_err(|_| not_found(uri))?;
    let body = json!({
        "key": p.key,
        "name": p.name,
        "summary": p.summary,
        "lead": p.lead,
        "archived": p.archived,
        "target_date": p.target_date,
        "report": summarize(&t, &p.key, &["status", "priority", "deadlines", "workload", "labels"], 14),
    });
    Ok(vec![json!({"uri": uri, "mimeType": "application/json", "text": body.to_string()})])
}

fn not_found(uri: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Resource not found: {uri}")).with_data(json!({"uri": uri}))
}
