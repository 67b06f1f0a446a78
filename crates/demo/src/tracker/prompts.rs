//! The demo's prompts: backlog triage and a status update, both built from
//! the live tracker data, and the completion handler for their arguments and
//! the resource templates.

use serde_json::{Map, Value, json};
use toolgate_mcp::jsonrpc::ErrorObject;

use super::tools::{State, summarize};
use crate::kit::{Prompt, Registry};

const FOCUS: [&str; 4] = ["all", "bugs", "overdue", "unassigned"];
const AUDIENCES: [&str; 3] = ["engineering", "leadership", "customers"];

/// Adds the prompts and the completion handler.
pub fn register(registry: Registry, state: &State) -> Registry {
    let s = state.clone();
    let triage = Prompt::new(
        json!({
            "name": "triage_backlog",
            "title": "Triage a project's backlog",
            "description": "Walk through a project's open issues and propose priorities, owners and next steps. \
                            Embeds the project's current health report.",
            "arguments": [
                {"name": "project", "description": "Project key, e.g. ATLAS", "required": true},
                {"name": "focus", "description": "all (default), bugs, overdue or unassigned", "required": false},
            ],
        }),
        move |args| {
            let (key, report) = report(&s, args)?;
            let focus = one_of(args, "focus", &FOCUS)?.unwrap_or("all");
            let ask = format!(
                "You are triaging the {key} backlog (focus: {focus}). Using the project report below and the \
                 search_issues and get_issue tools, list the open issues that need a decision. For each, propose a \
                 priority, an owner from the team (list_team_members shows current workload) and one concrete next \
                 step. Flag duplicates and issues without estimates. Do not change anything until I confirm."
            );
            Ok(json!({
                "description": format!("Backlog triage for {key}"),
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": ask}},
                    {"role": "user", "content": {"type": "resource", "resource": {
                        "uri": format!("demo://projects/{key}"),
                        "mimeType": "application/json",
                        "text": report.to_string(),
                    }}},
                ],
            }))
        },
    );
    let s = state.clone();
    let status = Prompt::new(
        json!({
            "name": "draft_status_update",
            "title": "Draft a status update",
            "description": "Draft a short weekly status update for a project, written for a given audience.",
            "arguments": [
                {"name": "project", "description": "Project key, e.g. BEACON", "required": true},
                {"name": "audience", "description": "engineering (default), leadership or customers", "required": false},
            ],
        }),
        move |args| {
            let (key, report) = report(&s, args)?;
            let audience = one_of(args, "audience", &AUDIENCES)?.unwrap_or("engineering");
            let style = match audience {
                "leadership" => "Lead with the overall assessment and risks to the target date; no issue keys.",
                "customers" => {
                    "Describe shipped and upcoming improvements in plain language; never mention internal \
                                issues, people or incidents."
                }
                _ => "Be specific: cite issue keys, owners and blockers.",
            };
            let text = format!(
                "Draft this week's status update for project {key}, for an {audience} audience. {style} Keep it under \
                 200 words, with sections Done, Next, Risks. Current report:\n\n{}",
                serde_json::to_string_pretty(&report).unwrap_or_default()
            );
            Ok(json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}))
        },
    );
    let s = state.clone();
    registry.with_prompt(triage).with_prompt(status).with_completion(move |params| complete(&s, params))
}

fn report(state: &State, args: &Map<String, Value>) -> Result<(String, Value), ErrorObject> {
    let key = args.get("project").and_then(Value::as_str).unwrap_or_default();
    let t = state.lock();
    let p = t.project(key).map_err(ErrorObject::invalid_params)?;
    let report = summarize(&t, &p.key, &["status", "priority", "deadlines", "workload", "labels"], 14);
    Ok((p.key.clone(), report))
}

fn one_of<'a>(args: &'a Map<String, Value>, key: &str, allowed: &[&str]) -> Result<Option<&'a str>, ErrorObject> {
    match args.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(v) if !allowed.contains(&v) => Err(ErrorObject::invalid_params(format!(
            "Argument '{key}' must be one of: {} (got \"{v}\")",
            allowed.join(", ")
        ))),
        v => Ok(v),
    }
}

/// Completes prompt arguments and template variables by prefix.
fn complete(state: &State, params: &Value) -> Result<Value, ErrorObject> {
    let reference = &params["ref"];
    let argument = params["argument"]["name"].as_str().unwrap_or_default();
    let typed = params["argument"]["value"].as_str().unwrap_or_default().to_lowercase();
    let t = state.lock();
    let candidates: Vec<String> = match (reference["type"].as_str(), argument) {
        (Some("ref/prompt"), "project") | (Some("ref/resource"), "key")
            if reference["uri"].as_str() != Some("demo://issues/{key}") =>
        {
            t.projects.iter().filter(|p| !p.archived).map(|p| p.key.clone()).collect()
        }
        (Some("ref/resource"), "key") => t.issues.iter().map(|i| i.key.clone()).collect(),
        (Some("ref/resource"), "id") => t.notes.iter().map(|n| n.id.clone()).collect(),
        (Some("ref/prompt"), "focus") => FOCUS.iter().map(|s| (*s).to_owned()).collect(),
        (Some("ref/prompt"), "audience") => AUDIENCES.iter().map(|s| (*s).to_owned()).collect(),
        _ => Vec::new(),
    };
    let values: Vec<String> = candidates.into_iter().filter(|c| c.to_lowercase().starts_with(&typed)).collect();
    let total = values.len();
    let values: Vec<String> = values.into_iter().take(100).collect();
    Ok(json!({"values": values, "total": total, "hasMore": total > 100}))
}
