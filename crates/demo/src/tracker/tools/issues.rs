//! Read-only issue tools: `search_issues`, `get_issue`.

use std::cmp::Ordering;

use serde_json::{Value, json};

use super::{State, annotations, fail, issue_schema, issue_summary_schema};
use crate::kit::{Args, Tool, result};
use crate::tracker::model::{Issue, KINDS, PRIORITIES, STATUSES, days};

const SEARCH_ISSUES: &str = "\
Search and filter issues across projects. All filters are optional and combine with AND; with no filters you get \
the most recently updated issues of every project.

Use this to answer questions such as \"what is Chloé working on\", \"which urgent bugs are open in BEACON\", \"what \
is overdue\" or \"is there already an issue about photo uploads\" (search before you create, to avoid \
duplicates). To read one issue in full, with its description and comments, call get_issue with the key from the \
results. For counts and overall health prefer summarize_project, which does not need paging.

Filters:
- `query`: words that must all appear (case-insensitive) in the title, description or comments.
- `project`: a project key. `status`, `priority`, `kind`: one or more values each; an issue matches if it has any \
of the given values. By default cancelled and done issues are included only if you ask for them via `status` or \
set `include_closed` to true.
- `assignee`: a team handle, or \"unassigned\" for issues nobody owns.
- `labels`: the issue must carry every listed label.
- `due_before`: only issues with a due date strictly before this date (YYYY-MM-DD); combine with open statuses to \
find overdue work.

Sorting: `updated` (newest first, the default), `priority` (urgent first, then earliest due date), `due_date` \
(earliest first, issues without a due date last) or `created` (newest first).

Paging: `limit` (1-50, default 10) and `offset`. The result has `total` (all matches), `returned`, `offset` and, \
when more matches exist, `next_offset` to pass back as `offset`. Each issue is a summary: key, title, kind, \
status, priority, assignee, labels, estimate_points, due_date, overdue and updated_at.

Errors: unknown enum values, an unknown project or person, or a malformed date are reported with the accepted \
values, so you can correct the call.";

pub fn search_issues(state: State) -> Tool {
    let definition = json!({
        "name": "search_issues",
        "title": "Search issues",
        "description": SEARCH_ISSUES,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words that must all appear in the title, description or comments."},
                "project": {"type": "string", "description": "Project key, e.g. \"BEACON\"."},
                "status": {
                    "type": "array",
                    "items": {"type": "string", "enum": STATUSES},
                    "description": "Match any of these statuses.",
                },
                "priority": {
                    "type": "array",
                    "items": {"type": "string", "enum": PRIORITIES},
                    "description": "Match any of these priorities.",
                },
                "kind": {
                    "type": "array",
                    "items": {"type": "string", "enum": KINDS},
                    "description": "Match any of these issue kinds.",
                },
                "assignee": {"type": "string", "description": "Team handle, or \"unassigned\"."},
                "labels": {"type": "array", "items": {"type": "string"}, "description": "Issues must have all of these labels."},
                "due_before": {"type": "string", "format": "date", "description": "Only issues due strictly before this date (YYYY-MM-DD)."},
                "include_closed": {
                    "type": "boolean",
                    "default": false,
                    "description": "Include done and cancelled issues when no status filter is given.",
                },
                "sort_by": {
                    "type": "string",
                    "enum": ["updated", "priority", "due_date", "created"],
                    "default": "updated",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "offset": {"type": "integer", "minimum": 0, "default": 0},
            },
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "total": {"type": "integer"},
                "returned": {"type": "integer"},
                "offset": {"type": "integer"},
                "next_offset": {"type": "integer"},
                "issues": {"type": "array", "items": issue_summary_schema()},
            },
            "required": ["total", "returned", "offset", "issues"],
        },
        "annotations": annotations("Search issues", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&[
            "query",
            "project",
            "status",
            "priority",
            "kind",
            "assignee",
            "labels",
            "due_before",
            "include_closed",
            "sort_by",
            "limit",
            "offset",
        ])?;
        let statuses = enum_list(&a, "status", &STATUSES)?;
        let priorities = enum_list(&a, "priority", &PRIORITIES)?;
        let kinds = enum_list(&a, "kind", &KINDS)?;
        let labels = a.str_list("labels")?.unwrap_or_default();
        let terms: Vec<String> =
            a.str("query")?.unwrap_or_default().split_whitespace().map(str::to_lowercase).collect();
        let due_before = a.str("due_before")?;
        if let Some(d) = due_before
            && days(d).is_none()
        {
            return Err(fail(format!("Invalid due_before '{d}': use a calendar date in YYYY-MM-DD form.")));
        }
        let include_closed = a.bool("include_closed")?.unwrap_or(false);
        let sort_by = a.one_of("sort_by", &["updated", "priority", "due_date", "created"])?.unwrap_or("updated");
        let limit = a.int_in("limit", 1, 50)?.unwrap_or(10) as usize;
        let offset = a.int_in("offset", 0, 100_000)?.unwrap_or(0) as usize;

        let t = state.lock();
        let project = match a.str("project")? {
            Some(key) => Some(t.project(key).map_err(fail)?.key.clone()),
            None => None,
        };
        let assignee = a.str("assignee")?;
        if let Some(who) = assignee
            && who != "unassigned"
        {
            crate::tracker::model::check_person(who, false, "assignee").map_err(fail)?;
        }

        let mut hits: Vec<&Issue> = t
            .issues
            .iter()
            .filter(|i| project.as_deref().is_none_or(|p| i.project == p))
            .filter(|i| match &statuses {
                Some(s) => s.contains(&i.status.as_str()),
                None => include_closed || i.is_open(),
            })
            .filter(|i| priorities.as_ref().is_none_or(|p| p.contains(&i.priority.as_str())))
            .filter(|i| kinds.as_ref().is_none_or(|k| k.contains(&i.kind.as_str())))
            .filter(|i| match assignee {
                None => true,
                Some("unassigned") => i.assignee.is_none(),
                Some(who) => i.assignee.as_deref() == Some(who),
            })
            .filter(|i| labels.iter().all(|l| i.labels.iter().any(|x| x == l)))
            .filter(|i| due_before.is_none_or(|d| i.due.as_deref().is_some_and(|due| due < d)))
            .filter(|i| terms.is_empty() || matches_terms(i, &terms))
            .collect();
        hits.sort_by(|x, y| compare(x, y, sort_by));

        let total = hits.len();
        let page: Vec<Value> = hits.iter().skip(offset).take(limit).map(|i| i.summary_json()).collect();
        let mut out = json!({"total": total, "returned": page.len(), "offset": offset, "issues": page});
        if offset + limit < total {
            out["next_offset"] = json!(offset + limit);
        }
        Ok(result::structured(out))
    })
}

fn enum_list<'a>(a: &Args<'a>, key: &str, allowed: &[&str]) -> Result<Option<Vec<&'a str>>, crate::kit::ToolFailure> {
    let Some(values) = a.str_list(key)? else { return Ok(None) };
    if let Some(bad) = values.iter().find(|v| !allowed.contains(v)) {
        return Err(fail(format!("Unknown {key} '{bad}'. Valid values: {}.", allowed.join(", "))));
    }
    Ok(Some(values))
}

fn matches_terms(issue: &Issue, terms: &[String]) -> bool {
    let mut text = format!("{} {}", issue.title, issue.description).to_lowercase();
    for c in &issue.comments {
        text.push(' ');
        text.push_str(&c.body.to_lowercase());
    }
    terms.iter().all(|t| text.contains(t.as_str()))
}

fn priority_rank(p: &str) -> usize {
    PRIORITIES.iter().position(|x| *x == p).unwrap_or(PRIORITIES.len())
}

fn compare(x: &Issue, y: &Issue, sort_by: &str) -> Ordering {
    let by_due = |x: &Issue, y: &Issue| match (&x.due, &y.due) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let order = match sort_by {
        "priority" => priority_rank(&x.priority).cmp(&priority_rank(&y.priority)).then_with(|| by_due(x, y)),
        "due_date" => by_due(x, y),
        "created" => y.created_at.cmp(&x.created_at),
        _ => y.updated_at.cmp(&x.updated_at),
    };
    order.then_with(|| x.key.cmp(&y.key))
}

const GET_ISSUE: &str = "\
Fetch one issue in full: title, description, kind, status, priority, assignee, reporter, labels, estimate, due \
date, timestamps and, unless you turn them off, all comments in the order they were written.

Use this after search_issues when you need the details of a specific issue, before changing an issue with \
update_issue (so you know its current state and `updated_at`, which update_issue can use to detect concurrent \
edits), or when the user mentions an issue by key.

Keys look like ATLAS-12 and are matched case-insensitively. If you only have a description of the issue and not \
its key, use search_issues first. Comments with visibility \"internal\" are included too; mention that they are \
internal if you quote them to someone outside the team.

Set include_comments to false for long-running discussions when you only need the fields; `comment_count` is \
always returned.

Errors: an unknown key is reported as a tool error with a hint on how to find the right one.";

pub fn get_issue(state: State) -> Tool {
    let definition = json!({
        "name": "get_issue",
        "title": "Get an issue",
        "description": GET_ISSUE,
        "inputSchema": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "pattern": "^[A-Za-z]+-[0-9]+$", "description": "Issue key, e.g. \"ATLAS-3\"."},
                "include_comments": {"type": "boolean", "default": true, "description": "Include the comment thread."},
            },
            "required": ["key"],
            "additionalProperties": false,
        },
        "outputSchema": issue_schema(),
        "annotations": annotations("Get an issue", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["key", "include_comments"])?;
        let key = a.required_str("key")?;
        let include_comments = a.bool("include_comments")?.unwrap_or(true);
        let t = state.lock();
        let issue = t.issue(key).map_err(fail)?;
        Ok(result::structured(issue.full_json(include_comments)))
    })
}
