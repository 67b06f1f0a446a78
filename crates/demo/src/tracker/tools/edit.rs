//! Tools that change issues: `create_issue`, `update_issue`, `add_comment`,
//! `delete_issue`.

use serde_json::json;

use super::{State, annotations, fail};
use crate::kit::{Args, Tool, ToolFailure, result};
use crate::tracker::model::{
    ASSISTANT, Comment, ESTIMATES, Issue, KINDS, PRIORITIES, STATUSES, VISIBILITIES, check_due_date, check_label,
    check_person,
};

const MAX_LABELS: usize = 8;

const CREATE_ISSUE: &str = "\
Create a new issue in a project and return it with its new key (for example ATLAS-9).

Use this when the user asks to file, log, open or track a bug, feature, task or chore. Before creating, search \
with search_issues for an existing issue on the same subject and offer to comment on it instead: duplicates are \
the most common complaint about issue trackers. Do not use this to change an existing issue (update_issue) or to \
add a remark to one (add_comment).

Parameters:
- `project` (required): an active project key; archived projects are read-only.
- `title` (required): 5-120 characters, phrased as the problem or outcome (\"Crash when rotating the parts \
picker\", not \"Fix bug\").
- `description`: Markdown, up to 8,000 characters. For bugs include steps to reproduce, expected and actual \
behaviour, and the affected platform or version.
- `kind`: bug, feature, task or chore (default task). `priority`: urgent, high, medium or low (default medium); \
reserve urgent for work that blocks customers or releases today.
- `status`: backlog or todo (default todo). New issues cannot start in progress or closed.
- `assignee`: a team handle (see list_team_members); leave it out to leave the issue unassigned.
- `labels`: up to 8 lowercase labels such as \"ios\" or \"tech-debt\"; reuse existing labels where possible.
- `estimate_points`: 1, 2, 3, 5, 8 or 13 story points; 13 means the issue should probably be split.
- `due_date`: YYYY-MM-DD, today or later.
- `reporter`: who asked for the issue, a team handle; defaults to \"assistant\".

Returns the created issue in full (the same shape as get_issue). Errors name the argument to fix and the accepted \
values; nothing is created when an error is returned.";

pub fn create_issue(state: State) -> Tool {
    let definition = json!({
        "name": "create_issue",
        "title": "Create an issue",
        "description": CREATE_ISSUE,
        "inputSchema": {
            "type": "object",
            "properties": {
                "project": {"type": "string", "description": "Key of an active project, e.g. \"ATLAS\"."},
                "title": {"type": "string", "minLength": 5, "maxLength": 120, "description": "Short summary of the problem or outcome."},
                "description": {"type": "string", "maxLength": 8000, "description": "Markdown details: context, steps to reproduce, acceptance criteria."},
                "kind": {"type": "string", "enum": KINDS, "default": "task"},
                "priority": {"type": "string", "enum": PRIORITIES, "default": "medium"},
                "status": {"type": "string", "enum": ["backlog", "todo"], "default": "todo"},
                "assignee": {"type": "string", "description": "Team handle of the owner; omit to leave unassigned."},
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,29}$"},
                    "maxItems": MAX_LABELS,
                    "uniqueItems": true,
                    "description": "Lowercase labels, e.g. [\"android\", \"crash\"].",
                },
                "estimate_points": {"type": "integer", "enum": ESTIMATES, "description": "Story points (Fibonacci)."},
                "due_date": {"type": "string", "format": "date", "description": "Due date, YYYY-MM-DD, not in the past."},
                "reporter": {"type": "string", "default": ASSISTANT, "description": "Team handle of the person who asked for the issue."},
            },
            "required": ["project", "title"],
            "additionalProperties": false,
        },
        "annotations": annotations("Create an issue", false, false, false),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&[
            "project",
            "title",
            "description",
            "kind",
            "priority",
            "status",
            "assignee",
            "labels",
            "estimate_points",
            "due_date",
            "reporter",
        ])?;
        let title = check_title(a.required_str("title")?)?;
        let description = a.str("description")?.unwrap_or_default();
        if description.chars().count() > 8000 {
            return Err(fail(
                "Argument 'description' is longer than 8000 characters; shorten it or link to a document.".into(),
            ));
        }
        let kind = a.one_of("kind", &KINDS)?.unwrap_or("task");
        let priority = a.one_of("priority", &PRIORITIES)?.unwrap_or("medium");
        let status = a.one_of("status", &["backlog", "todo"])?.unwrap_or("todo");
        let assignee = a.str("assignee")?;
        if let Some(who) = assignee {
            check_person(who, false, "assignee").map_err(fail)?;
        }
        let reporter = a.str("reporter")?.unwrap_or(ASSISTANT);
        check_person(reporter, true, "reporter").map_err(fail)?;
        let labels = check_labels(a.str_list("labels")?.unwrap_or_default())?;
        let estimate = check_estimate(a.int("estimate_points")?)?;
        let due = a.str("due_date")?;
        if let Some(d) = due {
            check_due_date(d).map_err(fail)?;
        }

        let mut t = state.lock();
        let project = t.project(a.required_str("project")?).map_err(fail)?;
        if project.archived {
            return Err(fail(format!("Project {} is archived and read-only; pick an active project.", project.key)));
        }
        let project_key = project.key.clone();
        let key = format!("{project_key}-{}", t.next_number(&project_key));
        let now = t.tick();
        let issue = Issue {
            key,
            project: project_key,
            title: title.to_owned(),
            description: description.to_owned(),
            kind: kind.to_owned(),
            status: status.to_owned(),
            priority: priority.to_owned(),
            assignee: assignee.map(str::to_owned),
            reporter: reporter.to_owned(),
            labels,
            estimate,
            due: due.map(str::to_owned),
            created_at: now.clone(),
            updated_at: now,
            comments: Vec::new(),
        };
        let out = issue.full_json(true);
        t.issues.push(issue);
        Ok(result::structured(out))
    })
}

const UPDATE_ISSUE: &str = "\
Change fields of an existing issue: title, description, status, priority, assignee, labels, estimate or due date. \
Optionally record a comment explaining the change in the same call.

Use this to move an issue through the workflow (todo -> in_progress -> in_review -> done), to reassign or \
reprioritise it, or to correct its details. Put only the fields you want to change in `changes`; everything else \
stays as it is. To only add a remark without changing fields, use add_comment instead. To remove an issue \
entirely, use delete_issue (prefer setting status to cancelled, which keeps the history).

Field rules:
- `status`: backlog, todo, in_progress, in_review, done or cancelled. Moving to done requires an assignee (set \
one in the same call if needed). A cancelled issue can only be reopened to backlog or todo.
- `assignee`: a team handle, or null to unassign.
- `labels_add` / `labels_remove`: adjust labels without restating the whole list; at most 8 labels in total.
- `estimate_points` (1, 2, 3, 5, 8, 13) and `due_date` (YYYY-MM-DD, not in the past) accept null to clear them.

Concurrency: pass `expected_updated_at` with the `updated_at` value you last saw (from get_issue or \
search_issues). If the issue changed since, the update is refused and nothing is modified, so you can re-read it \
and decide again instead of overwriting someone else's edit.

Returns the updated issue in full plus `changed_fields`, the list of fields that actually changed. Setting a field \
to its current value is allowed and is not reported as a change. Errors leave the issue untouched.";

pub fn update_issue(state: State) -> Tool {
    let definition = json!({
        "name": "update_issue",
        "title": "Update an issue",
        "description": UPDATE_ISSUE,
        "inputSchema": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "Issue key, e.g. \"BEACON-4\"."},
                "changes": {
                    "type": "object",
                    "description": "Only the fields to change.",
                    "properties": {
                        "title": {"type": "string", "minLength": 5, "maxLength": 120},
                        "description": {"type": "string", "maxLength": 8000},
                        "status": {"type": "string", "enum": STATUSES},
                        "priority": {"type": "string", "enum": PRIORITIES},
                        "assignee": {"type": ["string", "null"], "description": "Team handle, or null to unassign."},
                        "labels_add": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                        "labels_remove": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                        "estimate_points": {"type": ["integer", "null"], "enum": [1, 2, 3, 5, 8, 13, null]},
                        "due_date": {"type": ["string", "null"], "format": "date"},
                    },
                    "additionalProperties": false,
                    "minProperties": 1,
                },
                "comment": {"type": "string", "maxLength": 4000, "description": "Optional note recorded with the change."},
                "author": {"type": "string", "default": ASSISTANT, "description": "Team handle recorded as the comment author."},
                "expected_updated_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Refuse the update if the issue's updated_at is no longer this value.",
                },
            },
            "required": ["key", "changes"],
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "issue": {"type": "object", "description": "The updated issue, as get_issue returns it."},
                "changed_fields": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["issue", "changed_fields"],
        },
        "annotations": annotations("Update an issue", false, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["key", "changes", "comment", "author", "expected_updated_at"])?;
        let key = a.required_str("key")?;
        let changes = a.object("changes")?.ok_or_else(|| fail("Missing required argument 'changes'.".into()))?;
        if changes.is_empty() {
            return Err(fail("'changes' is empty: name at least one field to change.".into()));
        }
        changes.allow_only(&[
            "title",
            "description",
            "status",
            "priority",
            "assignee",
            "labels_add",
            "labels_remove",
            "estimate_points",
            "due_date",
        ])?;
        let comment = a.str("comment")?;
        let author = a.str("author")?.unwrap_or(ASSISTANT);
        check_person(author, true, "author").map_err(fail)?;

        let mut t = state.lock();
        let current = t.issue(key).map_err(fail)?;
        if let Some(expected) = a.str("expected_updated_at")?
            && expected != current.updated_at
        {
            return Err(fail(format!(
                "{} changed since you read it (updated_at is now {}, you expected {expected}). Call get_issue to see \
                 the current state, then retry.",
                current.key, current.updated_at
            )));
        }
        // Validate everything against a copy first, so a failed update changes nothing.
        let mut next = Edit::from(current);
        let changed = next.apply(&changes)?;
        let now = t.tick();
        let comment_id = comment.map(|_| t.next_comment_id());
        let issue = t.issue_mut(key).map_err(fail)?;
        next.store(issue);
        if !changed.is_empty() || comment.is_some() {
            issue.updated_at.clone_from(&now);
        }
        if let (Some(body), Some(id)) = (comment, comment_id) {
            issue.comments.push(Comment {
                id,
                author: author.to_owned(),
                body: body.to_owned(),
                visibility: "team".into(),
                created_at: now,
            });
        }
        Ok(result::structured(json!({"issue": issue.full_json(true), "changed_fields": changed})))
    })
}

/// The editable fields of an issue, changed as a unit.
struct Edit {
    title: String,
    description: String,
    status: String,
    priority: String,
    assignee: Option<String>,
    labels: Vec<String>,
    estimate: Option<i64>,
    due: Option<String>,
}

impl From<&Issue> for Edit {
    fn from(i: &Issue) -> Self {
        Edit {
            title: i.title.clone(),
            description: i.description.clone(),
            status: i.status.clone(),
            priority: i.priority.clone(),
            assignee: i.assignee.clone(),
            labels: i.labels.clone(),
            estimate: i.estimate,
            due: i.due.clone(),
        }
    }
}

impl Edit {
    /// Applies `changes`, returning the names of the fields that changed.
    fn apply(&mut self, c: &Args<'_>) -> Result<Vec<&'static str>, ToolFailure> {
        let mut changed = Vec::new();
        let mut set = |name: &'static str, differs: bool| {
            if differs {
                changed.push(name);
            }
        };
        if let Some(title) = c.str("title")? {
            let title = check_title(title)?;
            set("title", title != self.title);
            self.title = title.to_owned();
        }
        if let Some(d) = c.str("description")? {
            set("description", d != self.description);
            self.description = d.to_owned();
        }
        if let Some(p) = c.one_of("priority", &PRIORITIES)? {
            set("priority", p != self.priority);
            self.priority = p.to_owned();
        }
        if c.is_null("assignee") {
            set("assignee", self.assignee.is_some());
            self.assignee = None;
        } else if let Some(who) = c.str("assignee")? {
            check_person(who, false, "assignee").map_err(fail)?;
            set("assignee", self.assignee.as_deref() != Some(who));
            self.assignee = Some(who.to_owned());
        }
        if let Some(s) = c.one_of("status", &STATUSES)? {
            if self.status == "cancelled" && !matches!(s, "cancelled" | "backlog" | "todo") {
                return Err(fail(format!(
                    "A cancelled issue can only be reopened to backlog or todo, not moved straight to {s}."
                )));
            }
            if s == "done" && self.assignee.is_none() {
                return Err(fail(
                    "An issue needs an assignee before it can be done: set changes.assignee in the same call.".into(),
                ));
            }
            set("status", s != self.status);
            self.status = s.to_owned();
        }
        let add = c.str_list("labels_add")?.unwrap_or_default();
        let remove = c.str_list("labels_remove")?.unwrap_or_default();
        if !add.is_empty() || !remove.is_empty() {
            let mut labels: Vec<String> =
                self.labels.iter().filter(|l| !remove.contains(&l.as_str())).cloned().collect();
            for l in add {
                check_label(l).map_err(fail)?;
                if !labels.iter().any(|x| x == l) {
                    labels.push(l.to_owned());
                }
            }
            if labels.len() > MAX_LABELS {
                return Err(fail(format!("An issue can carry at most {MAX_LABELS} labels; remove some first.")));
            }
            set("labels", labels != self.labels);
            self.labels = labels;
        }
        if c.is_null("estimate_points") {
            set("estimate_points", self.estimate.is_some());
            self.estimate = None;
        } else if let Some(e) = check_estimate(c.int("estimate_points")?)? {
            set("estimate_points", self.estimate != Some(e));
            self.estimate = Some(e);
        }
        if c.is_null("due_date") {
            set("due_date", self.due.is_some());
            self.due = None;
        } else if let Some(d) = c.str("due_date")? {
            check_due_date(d).map_err(fail)?;
            set("due_date", self.due.as_deref() != Some(d));
            self.due = Some(d.to_owned());
        }
        Ok(changed)
    }

    fn store(self, issue: &mut Issue) {
        issue.title = self.title;
        issue.description = self.description;
        issue.status = self.status;
        issue.priority = self.priority;
        issue.assignee = self.assignee;
        issue.labels = self.labels;
        issue.estimate = self.estimate;
        issue.due = self.due;
    }
}

const ADD_COMMENT: &str = "\
Add a comment to an issue's discussion thread and return the new comment.

Use this to record a decision, a status note, a question for the assignee, findings from an investigation, or a \
summary of a conversation, without changing any field of the issue. If you also change fields, pass the comment \
to update_issue instead so both are recorded together.

Parameters: `key` is the issue key; `body` is Markdown, 1-4,000 characters; `author` is the team handle the \
comment is attributed to (default \"assistant\"; only attribute a comment to a person who actually wrote or \
approved it). `visibility` is \"team\" (default, visible to everyone on the team, and to customers for issues \
shared with them) or \"internal\" (staff only; use it for anything about customers' data, security, or people).

Comments cannot be edited or deleted through this tool, so check the text before sending. The issue's \
`updated_at` changes, which matters if you use expected_updated_at with update_issue afterwards.

Returns the stored comment (id, author, visibility, created_at, body), the issue key and the new comment_count.";

pub fn add_comment(state: State) -> Tool {
    let definition = json!({
        "name": "add_comment",
        "title": "Comment on an issue",
        "description": ADD_COMMENT,
        "inputSchema": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "Issue key, e.g. \"CEDAR-2\"."},
                "body": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "Comment text (Markdown)."},
                "author": {"type": "string", "default": ASSISTANT, "description": "Team handle the comment is attributed to."},
                "visibility": {"type": "string", "enum": VISIBILITIES, "default": "team"},
            },
            "required": ["key", "body"],
            "additionalProperties": false,
        },
        "annotations": annotations("Comment on an issue", false, false, false),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["key", "body", "author", "visibility"])?;
        let key = a.required_str("key")?;
        let body = a.required_str("body")?;
        if body.chars().count() > 4000 {
            return Err(fail("Argument 'body' is longer than 4000 characters; split it or summarize.".into()));
        }
        let author = a.str("author")?.unwrap_or(ASSISTANT);
        check_person(author, true, "author").map_err(fail)?;
        let visibility = a.one_of("visibility", &VISIBILITIES)?.unwrap_or("team");
        let mut t = state.lock();
        t.issue(key).map_err(fail)?;
        let now = t.tick();
        let id = t.next_comment_id();
        let issue = t.issue_mut(key).map_err(fail)?;
        let comment = Comment {
            id,
            author: author.to_owned(),
            body: body.to_owned(),
            visibility: visibility.to_owned(),
            created_at: now.clone(),
        };
        let stored = comment.to_json();
        issue.comments.push(comment);
        issue.updated_at = now;
        Ok(result::structured(json!({"issue": issue.key, "comment": stored, "comment_count": issue.comments.len()})))
    })
}

const DELETE_ISSUE: &str = "\
Permanently delete an issue and its comments. This cannot be undone.

Only use this for issues created by mistake (duplicates filed seconds apart, test issues, issues in the wrong \
project that were already recreated elsewhere). For work that is no longer wanted, set its status to cancelled \
with update_issue instead: that keeps the history and the key, and can be reopened. Ask the user to confirm \
before deleting anything they did not explicitly ask to delete.

Parameters: `key` is the issue key; `confirm` must be true, as a guard against accidental calls; `reason` is a \
short explanation kept in the server log.

Issues of archived projects cannot be deleted. The key of a deleted issue is never reused for a new issue.

Returns the deleted issue's key and title. Errors: unknown key, confirm missing or false, archived project.";

pub fn delete_issue(state: State) -> Tool {
    let definition = json!({
        "name": "delete_issue",
        "title": "Delete an issue",
        "description": DELETE_ISSUE,
        "inputSchema": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "Issue key, e.g. \"ATLAS-9\"."},
                "confirm": {"type": "boolean", "const": true, "description": "Must be true."},
                "reason": {"type": "string", "maxLength": 500, "description": "Why the issue is deleted."},
            },
            "required": ["key", "confirm"],
            "additionalProperties": false,
        },
        "annotations": annotations("Delete an issue", false, true, false),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["key", "confirm", "reason"])?;
        let key = a.required_str("key")?;
        if a.bool("confirm")? != Some(true) {
            return Err(fail(
                "Deleting needs confirm: true. Consider update_issue with status \"cancelled\" instead.".into(),
            ));
        }
        let reason = a.str("reason")?.unwrap_or("no reason given");
        let mut t = state.lock();
        let project = t.issue(key).map_err(fail)?.project.clone();
        if t.project(&project).is_ok_and(|p| p.archived) {
            return Err(fail(format!("{project} is archived and read-only; its issues cannot be deleted.")));
        }
        let removed = t.remove_issue(key).map_err(fail)?;
        tracing::info!(key = %removed.key, reason, "demo issue deleted");
        Ok(result::structured(json!({"deleted": removed.key, "title": removed.title})))
    })
}

fn check_title(title: &str) -> Result<&str, ToolFailure> {
    let title = title.trim();
    let n = title.chars().count();
    if (5..=120).contains(&n) {
        Ok(title)
    } else {
        Err(fail(format!("Argument 'title' must be 5-120 characters (got {n}).")))
    }
}

fn check_labels(labels: Vec<&str>) -> Result<Vec<String>, ToolFailure> {
    if labels.len() > MAX_LABELS {
        return Err(fail(format!("At most {MAX_LABELS} labels are allowed (got {}).", labels.len())));
    }
    let mut out: Vec<String> = Vec::new();
    for l in labels {
        check_label(l).map_err(fail)?;
        if !out.iter().any(|x| x == l) {
            out.push(l.to_owned());
        }
    }
    Ok(out)
}

fn check_estimate(points: Option<i64>) -> Result<Option<i64>, ToolFailure> {
    match points {
        Some(p) if !ESTIMATES.contains(&p) => {
            Err(fail(format!("Argument 'estimate_points' must be one of 1, 2, 3, 5, 8, 13 (got {p}).")))
        }
        p => Ok(p),
    }
}
