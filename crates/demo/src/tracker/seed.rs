//! The tracker's starting data: a five-person team with three active
//! projects and one archived one, their issues, and a small knowledge base.

use super::model::{Comment, Issue, Note, Project, Tracker};

/// A fresh tracker with the seed data.
pub fn tracker() -> Tracker {
    Tracker::new(projects(), issues(), notes())
}

fn projects() -> Vec<Project> {
    let p = |key: &str, name: &str, summary: &str, lead: &str, archived: bool, target: &str| Project {
        key: key.into(),
        name: name.into(),
        summary: summary.into(),
        lead: lead.into(),
        archived,
        target_date: target.into(),
    };
    vec![
        p(
            "ATLAS",
            "Atlas field app",
            "Rewrite of the field-service mobile app (iOS and Android) with offline job sheets, photo capture and \
             customer signatures.",
            "chloe",
            false,
            "2025-08-29",
        ),
        p(
            "BEACON",
            "Beacon billing migration",
            "Move invoicing, dunning and tax calculation out of the legacy monolith into the new billing service, \
             with zero double-billing.",
            "ben",
            false,
            "2025-07-31",
        ),
        p(
            "CEDAR",
            "Cedar developer portal",
            "Internal developer portal: API reference generated from OpenAPI, runbooks, and a searchable \
             architecture decision log.",
            "dev",
            false,
            "2025-09-30",
        ),
        p(
            "DUNE",
            "Dune warehouse pilot",
            "Pilot of a columnar warehouse for product analytics. Concluded in April; findings are in the \
             knowledge base.",
            "ana",
            true,
            "2025-04-30",
        ),
    ]
}

struct Seed {
    key: &'static str,
    title: &'static str,
    kind: &'static str,
    status: &'static str,
    priority: &'static str,
    assignee: Option<&'static str>,
    labels: &'static [&'static str],
    estimate: Option<i64>,
    due: Option<&'static str>,
    created: &'static str,
    description: &'static str,
}

fn issues() -> Vec<Issue> {
    let seeds = [
        Seed {
            key: "ATLAS-1",
            title: "Offline job sheet sync loses edits made in airplane mode",
            kind: "bug",
            status: "in_progress",
            priority: "urgent",
            assignee: Some("chloe"),
            labels: &["offline", "sync", "android"],
            estimate: Some(5),
            due: Some("2025-06-13"),
            created: "2025-06-02",
            description: "Technicians report that edits made while offline disappear after reconnecting. Repro: \
                          enable airplane mode, edit two fields on a job sheet, kill the app, reconnect. The \
                          second edit is lost because the outbox is keyed by job id, not by field.",
        },
        Seed {
            key: "ATLAS-2",
            title: "Capture customer signature on job completion",
            kind: "feature",
            status: "in_review",
            priority: "high",
            assignee: Some("chloe"),
            labels: &["signature", "ios", "android"],
            estimate: Some(8),
            due: Some("2025-06-20"),
            created: "2025-05-20",
            description: "Add a signature pad to the completion screen, store the signature as PNG with the job, \
                          and include it in the PDF report sent to the customer.",
        },
        Seed {
            key: "ATLAS-3",
            title: "Photo upload retries drain the battery on weak networks",
            kind: "bug",
            status: "todo",
            priority: "high",
            assignee: Some("ben"),
            labels: &["photos", "performance"],
            estimate: Some(3),
            due: Some("2025-06-27"),
            created: "2025-06-05",
            description: "Uploads retry every 2 seconds without backoff. Use exponential backoff with jitter and \
                          pause uploads below 15% battery.",
        },
        Seed {
            key: "ATLAS-4",
            title: "Design empty states for the job list",
            kind: "task",
            status: "todo",
            priority: "medium",
            assignee: Some("dev"),
            labels: &["design", "ux"],
            estimate: Some(2),
            due: Some("2025-07-04"),
            created: "2025-06-09",
            description: "No jobs today, no network, and filtered-to-nothing need distinct, friendly empty states.",
        },
        Seed {
            key: "ATLAS-5",
            title: "Crash when rotating the device on the parts picker",
            kind: "bug",
            status: "backlog",
            priority: "medium",
            assignee: None,
            labels: &["crash", "android"],
            estimate: None,
            due: None,
            created: "2025-06-11",
            description: "Crashlytics: IllegalStateException in PartsPickerFragment after rotation, 41 users in \
                          the last 7 days, Android 13 and 14 only.",
        },
        Seed {
            key: "ATLAS-6",
            title: "Set up TestFlight and internal track release pipeline",
            kind: "chore",
            status: "done",
            priority: "high",
            assignee: Some("elif"),
            labels: &["release", "ci"],
            estimate: Some(3),
            due: Some("2025-06-06"),
            created: "2025-05-12",
            description: "Automate builds to TestFlight and the Play internal track on every merge to main.",
        },
        Seed {
            key: "ATLAS-7",
            title: "Dark mode for the job detail screen",
            kind: "feature",
            status: "backlog",
            priority: "low",
            assignee: None,
            labels: &["ux", "ios", "android"],
            estimate: Some(3),
            due: None,
            created: "2025-06-12",
            description: "Requested by night-shift technicians. Follow the design tokens from the Cedar portal.",
        },
        Seed {
            key: "ATLAS-8",
            title: "Accessibility audit of the checkout flow",
            kind: "task",
            status: "todo",
            priority: "medium",
            assignee: Some("elif"),
            labels: &["accessibility"],
            estimate: Some(2),
            due: Some("2025-06-10"),
            created: "2025-05-28",
            description: "Check VoiceOver and TalkBack labels, focus order and contrast on the four checkout screens.",
        },
        Seed {
            key: "BEACON-1",
            title: "Duplicate invoices when the dunning job retries",
            kind: "bug",
            status: "in_progress",
            priority: "urgent",
            assignee: Some("ben"),
            labels: &["dunning", "data-integrity"],
            estimate: Some(5),
            due: Some("2025-06-12"),
            created: "2025-06-03",
            description: "The dunning job is not idempotent: a retry after a timeout creates a second invoice. See \
                          the May postmortem. Fix with an idempotency key per billing period and customer.",
        },
        Seed {
            key: "BEACON-2",
            title: "Port VAT calculation for EU customers",
            kind: "feature",
            status: "in_progress",
            priority: "high",
            assignee: Some("ana"),
            labels: &["tax", "eu"],
            estimate: Some(8),
            due: Some("2025-07-11"),
            created: "2025-05-26",
            description: "Reimplement the VAT rules (reverse charge, OSS rates) in the billing service with the \
                          legacy test vectors as the acceptance suite.",
        },
        Seed {
            key: "BEACON-3",
            title: "Dual-write invoices to legacy and new service",
            kind: "task",
            status: "done",
            priority: "high",
            assignee: Some("ben"),
            labels: &["migration"],
            estimate: Some(5),
            due: Some("2025-06-06"),
            created: "2025-05-15",
            description: "Write every new invoice to both systems behind the dual_write flag and compare nightly.",
        },
        Seed {
            key: "BEACON-4",
            title: "Reconciliation report for the dual-write period",
            kind: "task",
            status: "todo",
            priority: "high",
            assignee: Some("elif"),
            labels: &["migration", "reporting"],
            estimate: Some(3),
            due: Some("2025-06-24"),
            created: "2025-06-06",
            description: "Daily diff of invoice totals per customer between the two systems, mailed to finance.",
        },
        Seed {
            key: "BEACON-5",
            title: "Retire the legacy PDF invoice renderer",
            kind: "chore",
            status: "backlog",
            priority: "low",
            assignee: None,
            labels: &["tech-debt"],
            estimate: Some(2),
            due: None,
            created: "2025-06-10",
            description: "Once the new renderer has run for a full billing cycle, delete the old one and its fonts.",
        },
        Seed {
            key: "BEACON-6",
            title: "Customer portal shows stale balance after payment",
            kind: "bug",
            status: "todo",
            priority: "medium",
            assignee: None,
            labels: &["portal", "cache"],
            estimate: Some(2),
            due: Some("2025-06-30"),
            created: "2025-06-13",
            description: "The balance widget caches for 24 h; invalidate it on the payment_succeeded event.",
        },
        Seed {
            key: "CEDAR-1",
            title: "Generate API reference from OpenAPI specs",
            kind: "feature",
            status: "in_progress",
            priority: "high",
            assignee: Some("dev"),
            labels: &["api-docs"],
            estimate: Some(8),
            due: Some("2025-07-18"),
            created: "2025-05-30",
            description: "Render every service's openapi.yaml into browsable pages on each merge, with examples.",
        },
        Seed {
            key: "CEDAR-2",
            title: "Full-text search across runbooks and ADRs",
            kind: "feature",
            status: "todo",
            priority: "medium",
            assignee: Some("ana"),
            labels: &["search"],
            estimate: Some(5),
            due: Some("2025-08-01"),
            created: "2025-06-04",
            description: "Index Markdown runbooks and architecture decision records; rank titles above bodies.",
        },
        Seed {
            key: "CEDAR-3",
            title: "Broken links after the runbook folder move",
            kind: "bug",
            status: "todo",
            priority: "low",
            assignee: Some("elif"),
            labels: &["content"],
            estimate: Some(1),
            due: Some("2025-06-18"),
            created: "2025-06-13",
            description: "27 internal links point at /ops/runbooks/* which moved to /runbooks/*. Add redirects.",
        },
        Seed {
            key: "CEDAR-4",
            title: "Write the style guide page",
            kind: "task",
            status: "done",
            priority: "medium",
            assignee: Some("dev"),
            labels: &["content"],
            estimate: Some(2),
            due: Some("2025-06-09"),
            created: "2025-05-22",
            description: "Publish the docs style guide from the knowledge base as the portal's first page.",
        },
        Seed {
            key: "DUNE-1",
            title: "Benchmark query latency against the current warehouse",
            kind: "task",
            status: "done",
            priority: "high",
            assignee: Some("ana"),
            labels: &["benchmark"],
            estimate: Some(5),
            due: Some("2025-04-18"),
            created: "2025-03-24",
            description: "Run the 40 slowest dashboard queries on both systems and compare p50 and p95 latency.",
        },
        Seed {
            key: "DUNE-2",
            title: "Cost model for a full rollout",
            kind: "task",
            status: "cancelled",
            priority: "medium",
            assignee: Some("ben"),
            labels: &["finance"],
            estimate: Some(3),
            due: Some("2025-04-30"),
            created: "2025-04-01",
            description: "Cancelled when the pilot concluded that a rollout is not worth it this year.",
        },
    ];
    let mut issues: Vec<Issue> = seeds
        .into_iter()
        .map(|s| Issue {
            key: s.key.into(),
            project: s.key.split('-').next().unwrap_or_default().into(),
            title: s.title.into(),
            description: s.description.into(),
            kind: s.kind.into(),
            status: s.status.into(),
            priority: s.priority.into(),
            assignee: s.assignee.map(Into::into),
            reporter: "ana".into(),
            labels: s.labels.iter().map(|l| (*l).into()).collect(),
            estimate: s.estimate,
            due: s.due.map(Into::into),
            created_at: format!("{}T10:00:00Z", s.created),
            updated_at: format!("{}T16:30:00Z", s.created),
            comments: Vec::new(),
        })
        .collect();
    let comment = |id, author: &str, body: &str, created: &str| Comment {
        id,
        author: author.into(),
        body: body.into(),
        visibility: "team".into(),
        created_at: created.into(),
    };
    let comments = [
        (
            "ATLAS-1",
            comment(
                1,
                "elif",
                "Reproduced on a Pixel 7 with Android 14. Attaching the outbox dump.",
                "2025-06-03T11:20:00Z",
            ),
        ),
        (
            "ATLAS-1",
            comment(
                2,
                "chloe",
                "Root cause confirmed: outbox entries are keyed by job id. Switching to (job, field).",
                "2025-06-09T15:05:00Z",
            ),
        ),
        (
            "ATLAS-2",
            comment(
                3,
                "dev",
                "Signature pad follows the new design tokens; screenshots in the PR.",
                "2025-06-12T09:40:00Z",
            ),
        ),
        (
            "BEACON-1",
            comment(
                4,
                "ben",
                "Idempotency key drafted as (customer_id, period_start). Needs a unique index migration.",
                "2025-06-10T14:00:00Z",
            ),
        ),
        (
            "BEACON-1",
            comment(5, "ana", "Please add a regression test that kills the job mid-run.", "2025-06-11T08:55:00Z"),
        ),
        (
            "CEDAR-1",
            comment(
                6,
                "dev",
                "Billing and Atlas specs render; three services still have invalid YAML.",
                "2025-06-13T17:10:00Z",
            ),
        ),
    ];
    for (key, c) in comments {
        if let Some(issue) = issues.iter_mut().find(|i| i.key == key) {
            issue.updated_at.clone_from(&c.created_at);
            issue.comments.push(c);
        }
    }
    issues
}

fn notes() -> Vec<Note> {
    let n = |id: &str, title: &str, tags: &[&str], author: &str, updated: &str, body: &str| Note {
        id: id.into(),
        title: title.into(),
        tags: tags.iter().map(|t| (*t).into()).collect(),
        author: author.into(),
        updated: updated.into(),
        body: body.into(),
    };
    vec![
        n(
            "release-checklist",
            "Mobile release checklist",
            &["release", "mobile", "checklist"],
            "elif",
            "2025-06-02",
            "# Mobile release checklist\n\n1. Freeze main on Tuesday noon; only release blockers merge after that.\n\
             2. Run the regression suite on the device farm (iOS 16-18, Android 12-15).\n3. Verify offline sync \
             with the airplane-mode script.\n4. Update the changelog and the in-app \"What's new\" text.\n5. Stage \
             the rollout: 5% on Wednesday, 50% on Thursday, 100% on Monday if the crash-free rate stays above 99.5%.",
        ),
        n(
            "on-call",
            "On-call handbook",
            &["on-call", "incidents", "ops"],
            "ana",
            "2025-05-19",
            "# On-call handbook\n\nThe primary on-call engineer acknowledges pages within 15 minutes. Severity 1 \
             (customers cannot work or are billed wrongly) means opening an incident channel, paging the secondary, \
             and posting updates every 30 minutes. Hand over on Monday at 10:00 with a written summary of open \
             incidents. Billing incidents always involve finance before any customer communication.",
        ),
        n(
            "billing-runbook",
            "Billing migration runbook",
            &["billing", "migration", "runbook"],
            "ben",
            "2025-06-09",
            "# Billing migration runbook\n\nDual-write is controlled by the `dual_write` flag. To roll back, turn the \
             flag off: the legacy system stays the source of truth until cutover. The nightly reconciliation job \
             compares invoice totals per customer; any difference above 0.01 EUR opens a BEACON issue with the \
             `data-integrity` label. Never rerun the dunning job by hand during the migration.",
        ),
        n(
            "postmortem-2025-05",
            "Postmortem: duplicate invoices (May 2025)",
            &["postmortem", "billing", "incidents"],
            "ana",
            "2025-05-23",
            "# Postmortem: duplicate invoices\n\nOn 14 May, 212 customers received two invoices for April after the \
             dunning job timed out and was retried. Impact: support load for three days, no money collected twice \
             because payments were deduplicated downstream. Root cause: the job is not idempotent. Actions: \
             idempotency keys (BEACON-1), alerting on invoice count anomalies, and a retry budget for batch jobs.",
        ),
        n(
            "atlas-architecture",
            "Atlas app architecture",
            &["mobile", "architecture", "offline"],
            "chloe",
            "2025-05-30",
            "# Atlas architecture\n\nReact Native app with a local SQLite store. All writes go to an outbox that a \
             background worker syncs when online; the server resolves conflicts per field, last writer wins. Photos \
             upload separately through resumable uploads. Feature flags come from the config service at start-up \
             and are cached for 12 hours.",
        ),
        n(
            "code-review",
            "Code review guidelines",
            &["process", "engineering"],
            "ana",
            "2025-04-14",
            "# Code review guidelines\n\nReview within one working day. Approve when the change is correct, tested \
             and understandable; style nits are optional. Database migrations and anything touching billing need a \
             second reviewer. Authors merge their own PRs after approval.",
        ),
        n(
            "estimation",
            "Estimation guide",
            &["process", "planning"],
            "ana",
            "2025-03-03",
            "# Estimation guide\n\nWe estimate in story points on the Fibonacci scale: 1, 2, 3, 5, 8, 13. A 13 is a \
             signal to split the issue. Points measure effort and uncertainty together, never hours. Bugs get \
             estimates too, so sprint capacity stays honest. Our velocity is about 30 points per two-week sprint.",
        ),
        n(
            "dune-findings",
            "Dune pilot findings",
            &["analytics", "warehouse", "decision"],
            "ana",
            "2025-04-29",
            "# Dune pilot findings\n\nThe columnar warehouse cut p95 dashboard latency from 9.1 s to 1.4 s, but the \
             projected cost is 2.3 times today's spend. Decision: no rollout in 2025; revisit when the analytics \
             team grows. The benchmark scripts live in the analytics repository.",
        ),
    ]
}
