//! The tracker's data: projects, issues with comments, knowledge-base notes,
//! the team, and the rules that keep them consistent. Time is a fixed "today"
//! plus a logical clock, so every run is identical.

use serde_json::{Value, json};

/// The demo's "today" (a Monday). Due dates are judged against it.
pub const TODAY: &str = "2025-06-16";

pub const STATUSES: [&str; 6] = ["backlog", "todo", "in_progress", "in_review", "done", "cancelled"];
pub const OPEN_STATUSES: [&str; 4] = ["backlog", "todo", "in_progress", "in_review"];
pub const PRIORITIES: [&str; 4] = ["urgent", "high", "medium", "low"];
pub const KINDS: [&str; 4] = ["bug", "feature", "task", "chore"];
pub const ESTIMATES: [i64; 6] = [1, 2, 3, 5, 8, 13];
pub const VISIBILITIES: [&str; 2] = ["team", "internal"];

/// (handle, name, role)
pub const TEAM: [(&str, &str, &str); 5] = [
    ("ana", "Ana Ribeiro", "Engineering lead"),
    ("ben", "Ben Okafor", "Backend engineer"),
    ("chloe", "Chloé Martin", "Mobile engineer"),
    ("dev", "Dev Patel", "Product designer"),
    ("elif", "Elif Yılmaz", "QA and release engineer"),
];

/// The author recorded for changes the assistant makes on its own.
pub const ASSISTANT: &str = "assistant";

pub struct Project {
    pub key: String,
    pub name: String,
    pub summary: String,
    pub lead: String,
    pub archived: bool,
    pub target_date: String,
}

pub struct Comment {
    pub id: u32,
    pub author: String,
    pub body: String,
    pub visibility: String,
    pub created_at: String,
}

pub struct Issue {
    pub key: String,
    pub project: String,
    pub title: String,
    pub description: String,
    pub kind: String,
    pub status: String,
    pub priority: String,
    pub assignee: Option<String>,
    pub reporter: String,
    pub labels: Vec<String>,
    pub estimate: Option<i64>,
    pub due: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub comments: Vec<Comment>,
}

pub struct Note {
    pub id: String,
    pub title: String,
    pub tags: Vec<String>,
    pub author: String,
    pub updated: String,
    pub body: String,
}

/// All tracker state.
pub struct Tracker {
    pub projects: Vec<Project>,
    pub issues: Vec<Issue>,
    pub notes: Vec<Note>,
    /// Minutes past 09:00 on [`TODAY`]; each change advances it.
    clock: u32,
    next_comment: u32,
}

impl Tracker {
    pub fn new(projects: Vec<Project>, issues: Vec<Issue>, notes: Vec<Note>) -> Self {
        let next_comment = issues.iter().flat_map(|i| &i.comments).map(|c| c.id).max().unwrap_or(0) + 1;
        Self { projects, issues, notes, clock: 0, next_comment }
    }

    /// A fresh timestamp, later than every earlier one.
    pub fn tick(&mut self) -> String {
        self.clock += 7;
        let minutes = (9 * 60 + self.clock).min(23 * 60 + 59);
        format!("{TODAY}T{:02}:{:02}:00Z", minutes / 60, minutes % 60)
    }

    pub fn next_comment_id(&mut self) -> u32 {
        let id = self.next_comment;
        self.next_comment += 1;
        id
    }

    /// A project by key, case-insensitively.
    pub fn project(&self, key: &str) -> Result<&Project, String> {
        self.projects.iter().find(|p| p.key.eq_ignore_ascii_case(key)).ok_or_else(|| {
            let keys: Vec<&str> = self.projects.iter().map(|p| p.key.as_str()).collect();
            format!("Unknown project '{key}'. Known projects: {}. Use list_projects to see them all.", keys.join(", "))
        })
    }

    fn issue_index(&self, key: &str) -> Result<usize, String> {
        self.issues.iter().position(|i| i.key.eq_ignore_ascii_case(key)).ok_or_else(|| {
            let hint = if key.contains('-') {
                "Use search_issues to find the right key."
            } else {
                "Issue keys look like ATLAS-12 (project key, dash, number)."
            };
            format!("No issue with key '{key}'. {hint}")
        })
    }

    pub fn issue(&self, key: &str) -> Result<&Issue, String> {
        self.issue_index(key).map(|i| &self.issues[i])
    }

    pub fn issue_mut(&mut self, key: &str) -> Result<&mut Issue, String> {
        self.issue_index(key).map(|i| &mut self.issues[i])
    }

    pub fn remove_issue(&mut self, key: &str) -> Result<Issue, String> {
        self.issue_index(key).map(|i| self.issues.remove(i))
    }

    /// The next free number in a project.
    pub fn next_number(&self, project: &str) -> u32 {
        self.issues
            .iter()
            .filter(|i| i.project == project)
            .filter_map(|i| i.key.rsplit('-').next()?.parse::<u32>().ok())
            .max()
            .unwrap_or(0)
            + 1
    }

    pub fn project_issues<'a>(&'a self, project: &'a str) -> impl Iterator<Item = &'a Issue> + 'a {
        self.issues.iter().filter(move |i| i.project == project)
    }
}

impl Issue {
    pub fn is_open(&self) -> bool {
        OPEN_STATUSES.contains(&self.status.as_str())
    }

    pub fn is_overdue(&self) -> bool {
        self.is_open() && self.due.as_deref().is_some_and(|d| d < TODAY)
    }

    /// The compact form search results use.
    pub fn summary_json(&self) -> Value {
        json!({
            "key": self.key,
            "title": self.title,
            "kind": self.kind,
            "status": self.status,
            "priority": self.priority,
            "assignee": self.assignee,
            "labels": self.labels,
            "estimate_points": self.estimate,
            "due_date": self.due,
            "overdue": self.is_overdue(),
            "updated_at": self.updated_at,
        })
    }

    /// The full record.
    pub fn full_json(&self, include_comments: bool) -> Value {
        let mut v = json!({
            "key": self.key,
            "project": self.project,
            "title": self.title,
            "description": self.description,
            "kind": self.kind,
            "status": self.status,
            "priority": self.priority,
            "assignee": self.assignee,
            "reporter": self.reporter,
            "labels": self.labels,
            "estimate_points": self.estimate,
            "due_date": self.due,
            "overdue": self.is_overdue(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "comment_count": self.comments.len(),
        });
        if include_comments {
            v["comments"] = self.comments.iter().map(Comment::to_json).collect();
        }
        v
    }
}

impl Comment {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "author": self.author,
            "visibility": self.visibility,
            "created_at": self.created_at,
            "body": self.body,
        })
    }
}

/// Checks a team handle (or the assistant), listing the valid ones on error.
pub fn check_person(handle: &str, allow_assistant: bool, what: &str) -> Result<(), String> {
    if TEAM.iter().any(|(h, _, _)| *h == handle) || (allow_assistant && handle == ASSISTANT) {
        return Ok(());
    }
    let handles: Vec<&str> = TEAM.iter().map(|(h, _, _)| *h).collect();
    let extra = if allow_assistant { " (or \"assistant\")" } else { "" };
    Err(format!(
        "Unknown {what} '{handle}'. Team handles are: {}{extra}. Use list_team_members for details.",
        handles.join(", ")
    ))
}

/// Checks a label: lowercase letters, digits and dashes, 1-30 characters.
pub fn check_label(label: &str) -> Result<(), String> {
    let ok = (1..=30).contains(&label.len())
        && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Invalid label '{label}': use 1-30 lowercase letters, digits or dashes, e.g. \"ios\" or \"tech-debt\"."
        ))
    }
}

/// Days since 1970-01-01 for a `YYYY-MM-DD` date, or `None` if it is not a
/// real calendar date.
pub fn days(date: &str) -> Option<i64> {
    let b = date.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = date[..4].parse().ok()?;
    let m: i64 = date[5..7].parse().ok()?;
    let d: i64 = date[8..].parse().ok()?;
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_len = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&m) || d < 1 || d > month_len[(m - 1) as usize] {
        return None;
    }
    // Days-from-civil (proleptic Gregorian).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// The `YYYY-MM-DD` date `n` days after 1970-01-01.
pub fn date_from_days(n: i64) -> String {
    let z = n + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Validates a due date: a real date, not before [`TODAY`].
pub fn check_due_date(date: &str) -> Result<(), String> {
    if days(date).is_none() {
        return Err(format!("Invalid due_date '{date}': use a calendar date in YYYY-MM-DD form, e.g. \"2025-07-01\"."));
    }
    if date < TODAY {
        return Err(format!("due_date {date} is in the past (today is {TODAY}). Pick today or a later date."));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
