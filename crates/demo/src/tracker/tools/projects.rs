//! Project-level tools: `list_projects`, `summarize_project`,
//! `list_team_members`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{State, annotations, fail};
use crate::kit::{Args, Tool, result};
use crate::tracker::model::{OPEN_STATUSES, PRIORITIES, STATUSES, TEAM, TODAY, Tracker, date_from_days, days};

const LIST_PROJECTS: &str = "\
List the team's projects with their lead, target date and a count of open and overdue issues.

Use this first when you do not know which projects exist or need a project key for another tool: every issue \
belongs to exactly one project, and issue keys start with the project key (ATLAS-12 belongs to ATLAS). The list is \
short (a handful of projects), so there is no paging.

Do not use this to look at individual issues; use search_issues for that. For a detailed health report of one \
project (status breakdown, overdue work, workload per person) use summarize_project instead.

Archived projects are hidden unless include_archived is true; they are read-only, and create_issue refuses them.

Returns an object with a `projects` array. Each project has: key, name, summary, lead (a team handle), archived, \
target_date (YYYY-MM-DD), open_issues (backlog, todo, in progress or in review), overdue_issues (open with a due \
date before today) and total_issues.";

pub fn list_projects(state: State) -> Tool {
    let definition = json!({
        "name": "list_projects",
        "title": "List projects",
        "description": LIST_PROJECTS,
        "inputSchema": {
            "type": "object",
            "properties": {
                "include_archived": {
                    "type": "boolean",
                    "default": false,
                    "description": "Also list archived projects (read-only, kept for reference).",
                },
            },
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "projects": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string"},
                            "name": {"type": "string"},
                            "summary": {"type": "string"},
                            "lead": {"type": "string"},
                            "archived": {"type": "boolean"},
                            "target_date": {"type": "string", "format": "date"},
                            "open_issues": {"type": "integer"},
                            "overdue_issues": {"type": "integer"},
                            "total_issues": {"type": "integer"},
                        },
                        "required": ["key", "name", "lead", "archived", "open_issues", "overdue_issues", "total_issues"],
                    },
                },
            },
            "required": ["projects"],
        },
        "annotations": annotations("List projects", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["include_archived"])?;
        let include_archived = a.bool("include_archived")?.unwrap_or(false);
        let t = state.lock();
        let projects: Vec<Value> = t
            .projects
            .iter()
            .filter(|p| include_archived || !p.archived)
            .map(|p| {
                let issues: Vec<_> = t.project_issues(&p.key).collect();
                json!({
                    "key": p.key,
                    "name": p.name,
                    "summary": p.summary,
                    "lead": p.lead,
                    "archived": p.archived,
                    "target_date": p.target_date,
                    "open_issues": issues.iter().filter(|i| i.is_open()).count(),
                    "overdue_issues": issues.iter().filter(|i| i.is_overdue()).count(),
                    "total_issues": issues.len(),
                })
            })
            .collect();
        Ok(result::structured(json!({"projects": projects})))
    })
}

const SUMMARIZE_PROJECT: &str = "\
Produce a health report for one project: how many issues are in each status and priority, which open issues are \
overdue or due soon, how the open work is spread across people, the most used labels, and an overall assessment.

Use this when someone asks how a project is going, what is at risk, who is overloaded, or to prepare a status \
update or a planning meeting. It reads the whole project at once, which is cheaper and more accurate than paging \
through search_issues and counting yourself.

Do not use it to find specific issues by text or to list every issue: use search_issues. It does not change \
anything.

Parameters: `project` is the project key (case-insensitive, e.g. \"atlas\" works). `sections` picks which parts \
to compute; leave it out for all of them. `due_within_days` sets the window for \"due soon\" (default 14, today \
counts as day 0).

Assessment rules: \"off_track\" when any urgent issue is overdue or three or more open issues are overdue; \
\"at_risk\" when any open issue is overdue or more than a third of the open points are unassigned; otherwise \
\"on_track\". Today is fixed at the tracker's current date, reported as `as_of`.

Errors: an unknown project key returns the list of valid keys; an unknown section name lists the valid ones.";

const SECTIONS: [&str; 5] = ["status", "priority", "deadlines", "workload", "labels"];

pub fn summarize_project(state: State) -> Tool {
    let definition = json!({
        "name": "summarize_project",
        "title": "Summarize a project",
        "description": SUMMARIZE_PROJECT,
        "inputSchema": {
            "type": "object",
            "properties": {
                "project": {"type": "string", "description": "Project key, e.g. \"ATLAS\" (see list_projects)."},
                "sections": {
                    "type": "array",
                    "items": {"type": "string", "enum": SECTIONS},
                    "uniqueItems": true,
                    "description": "Parts of the report to compute; all of them when omitted.",
                },
                "due_within_days": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 90,
                    "default": 14,
                    "description": "Open issues due within this many days from today count as \"due soon\".",
                },
            },
            "required": ["project"],
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "project": {"type": "string"},
                "name": {"type": "string"},
                "as_of": {"type": "string", "format": "date"},
                "assessment": {"type": "string", "enum": ["on_track", "at_risk", "off_track"]},
                "open_issues": {"type": "integer"},
                "open_points": {"type": "integer"},
                "by_status": {"type": "object", "additionalProperties": {"type": "integer"}},
                "by_priority": {"type": "object", "additionalProperties": {"type": "integer"}},
                "overdue": {"type": "array", "items": {"type": "object"}},
                "due_soon": {"type": "array", "items": {"type": "object"}},
                "workload": {"type": "array", "items": {"type": "object"}},
                "top_labels": {"type": "array", "items": {"type": "object"}},
            },
            "required": ["project", "name", "as_of", "assessment", "open_issues", "open_points"],
        },
        "annotations": annotations("Summarize a project", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["project", "sections", "due_within_days"])?;
        let key = a.required_str("project")?;
        let sections = a.str_list("sections")?.unwrap_or_else(|| SECTIONS.to_vec());
        if let Some(bad) = sections.iter().find(|s| !SECTIONS.contains(s)) {
            return Err(fail(format!("Unknown section '{bad}'. Valid sections: {}.", SECTIONS.join(", "))));
        }
        let horizon = a.int_in("due_within_days", 0, 90)?.unwrap_or(14);
        let t = state.lock();
        let p = t.project(key).map_err(fail)?;
        Ok(result::structured(summarize(&t, &p.key, &sections, horizon)))
    })
}

/// The report `summarize_project` returns (also used by the project resource).
pub fn summarize(t: &Tracker, key: &str, sections: &[&str], horizon: i64) -> Value {
    let Ok(p) = t.project(key) else { return Value::Null };
    let issues: Vec<_> = t.project_issues(&p.key).collect();
    let open: Vec<_> = issues.iter().filter(|i| i.is_open()).collect();
    let open_points: i64 = open.iter().filter_map(|i| i.estimate).sum();
    let unassigned_points: i64 = open.iter().filter(|i| i.assignee.is_none()).filter_map(|i| i.estimate).sum();
    let overdue: Vec<_> = open.iter().filter(|i| i.is_overdue()).collect();
    let assessment = if overdue.iter().any(|i| i.priority == "urgent") || overdue.len() >= 3 {
        "off_track"
    } else if !overdue.is_empty() || unassigned_points * 3 > open_points {
        "at_risk"
    } else {
        "on_track"
    };
    let mut report = json!({
        "project": p.key,
        "name": p.name,
        "as_of": TODAY,
        "assessment": assessment,
        "open_issues": open.len(),
        "open_points": open_points,
    });
    let brief = |i: &&&crate::tracker::model::Issue| json!({"key": i.key, "title": i.title, "priority": i.priority, "assignee": i.assignee, "due_date": i.due});
    if sections.contains(&"status") {
        let by: BTreeMap<&str, usize> =
            STATUSES.iter().map(|s| (*s, issues.iter().filter(|i| i.status == *s).count())).collect();
        report["by_status"] = json!(by);
    }
    if sections.contains(&"priority") {
        let by: BTreeMap<&str, usize> =
            PRIORITIES.iter().map(|s| (*s, open.iter().filter(|i| i.priority == *s).count())).collect();
        report["by_priority"] = json!(by);
    }
    if sections.contains(&"deadlines") {
        let today = days(TODAY).unwrap_or_default();
        let last = date_from_days(today + horizon);
        let soon: Vec<_> =
            open.iter().filter(|i| i.due.as_deref().is_some_and(|d| d >= TODAY && d <= last.as_str())).collect();
        report["overdue"] = overdue.iter().map(|i| brief(i)).collect();
        report["due_soon"] = soon.iter().map(|i| brief(i)).collect();
    }
    if sections.contains(&"workload") {
        let mut rows: Vec<Value> = TEAM
            .iter()
            .map(|(handle, _, _)| {
                let mine: Vec<_> = open.iter().filter(|i| i.assignee.as_deref() == Some(handle)).collect();
                json!({"assignee": handle, "open_issues": mine.len(), "open_points": mine.iter().filter_map(|i| i.estimate).sum::<i64>()})
            })
            .filter(|r| r["open_issues"] != 0)
            .collect();
        let unassigned = open.iter().filter(|i| i.assignee.is_none()).count();
        if unassigned > 0 {
            rows.push(json!({"assignee": null, "open_issues": unassigned, "open_points": unassigned_points}));
        }
        report["workload"] = Value::Array(rows);
    }
    if sections.contains(&"labels") {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for label in issues.iter().flat_map(|i| &i.labels) {
            *counts.entry(label).or_default() += 1;
        }
        let mut labels: Vec<_> = counts.into_iter().collect();
        labels.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        report["top_labels"] = labels.iter().take(5).map(|(l, n)| json!({"label": l, "issues": n})).collect();
    }
    report
}

const LIST_TEAM_MEMBERS: &str = "\
List the people on the team with their handle, name, role and current open workload.

Use this to find the handle to pass as `assignee` or `author` to other tools (create_issue, update_issue, \
add_comment), or to answer who works on what and who has capacity. Handles are short lowercase names such as \
\"ana\"; tools reject anything that is not a handle from this list.

Pass `project` to count only that project's issues; leave it out to count work across all projects. Open work \
means issues in backlog, todo, in_progress or in_review; points are the sum of their estimates (issues without an \
estimate count as zero points, and are reported in unestimated_issues so you can flag them).

Returns an object with a `members` array, ordered as the team roster, each with handle, name, role, open_issues, \
open_points, unestimated_issues and in_progress (the keys of issues they are actively working on).";

pub fn list_team_members(state: State) -> Tool {
    let definition = json!({
        "name": "list_team_members",
        "title": "List team members",
        "description": LIST_TEAM_MEMBERS,
        "inputSchema": {
            "type": "object",
            "properties": {
                "project": {"type": "string", "description": "Only count issues of this project key."},
            },
            "additionalProperties": false,
        },
        "annotations": annotations("List team members", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["project"])?;
        let t = state.lock();
        let project = match a.str("project")? {
            Some(key) => Some(t.project(key).map_err(fail)?.key.clone()),
            None => None,
        };
        let members: Vec<Value> = TEAM
            .iter()
            .map(|(handle, name, role)| {
                let open: Vec<_> = t
                    .issues
                    .iter()
                    .filter(|i| project.as_deref().is_none_or(|p| i.project == p))
                    .filter(|i| i.assignee.as_deref() == Some(handle) && OPEN_STATUSES.contains(&i.status.as_str()))
                    .collect();
                json!({
                    "handle": handle,
                    "name": name,
                    "role": role,
                    "open_issues": open.len(),
                    "open_points": open.iter().filter_map(|i| i.estimate).sum::<i64>(),
                    "unestimated_issues": open.iter().filter(|i| i.estimate.is_none()).count(),
                    "in_progress": open.iter().filter(|i| i.status == "in_progress").map(|i| i.key.as_str()).collect::<Vec<_>>(),
                })
            })
            .collect();
        Ok(result::structured(json!({"members": members})))
    })
}
