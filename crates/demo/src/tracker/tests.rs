//! The demo driven as a client would: list, then a scripted session that
//! calls every tool, plus the refusals a model should see on bad input.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_test_support::{PipeClient, first_text};

use super::registry;
use crate::kit;

async fn client() -> PipeClient {
    PipeClient::initialized(kit::engine(registry(), Duration::from_secs(60)), json!({})).await
}

async fn ok(c: &mut PipeClient, tool: &str, args: Value) -> Value {
    let r = c.call(tool, args.clone()).await;
    assert_ne!(r["isError"], true, "{tool}({args}) failed: {}", first_text(&r));
    r["structuredContent"].clone()
}

async fn refused(c: &mut PipeClient, tool: &str, args: Value) -> String {
    let r = c.call(tool, args.clone()).await;
    assert_eq!(r["isError"], true, "{tool}({args}) should fail: {r}");
    first_text(&r).to_owned()
}

#[tokio::test]
async fn tools_list_is_large_complete_and_well_formed() {
    let mut c = client().await;
    let list = c.result("tools/list", json!({})).await;
    let bytes = serde_json::to_string(&list).unwrap().len();
    let tools = list["tools"].as_array().unwrap();
    let minimal: Vec<Value> = tools.iter().map(|t| json!({"name": t["name"], "title": t["title"]})).collect();
    let minimal_bytes = serde_json::to_string(&minimal).unwrap().len();
    println!(
        "demo tools/list: {} tools, {bytes} bytes (~{} tokens); names+titles only: {minimal_bytes} bytes",
        tools.len(),
        bytes / 4
    );
    assert!((16_000..=32_000).contains(&bytes), "tools/list is {bytes} bytes");
    assert_eq!(tools.len(), 12);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        let description = t["description"].as_str().unwrap();
        assert!(description.len() > 700 && description.contains("\n\n"), "{name}: descriptions are several paragraphs");
        assert!(t["title"].is_string() && t["annotations"]["title"].is_string(), "{name}");
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] {
            assert!(t["annotations"][hint].is_boolean(), "{name}: {hint}");
        }
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        for (prop, s) in schema["properties"].as_object().unwrap() {
            let described = s.get("description").is_some() || s.get("enum").is_some() || s.get("default").is_some();
            assert!(described, "{name}.{prop} needs a description, enum or default");
        }
    }
    let with_output = tools.iter().filter(|t| t.get("outputSchema").is_some()).count();
    assert!(with_output >= 6, "{with_output} tools declare outputSchema");
    let destructive: Vec<&str> = tools
        .iter()
        .filter(|t| t["annotations"]["destructiveHint"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(destructive, ["delete_issue"]);
}

#[tokio::test]
async fn a_scripted_session_uses_every_tool() {
    let mut c = client().await;
    let projects = ok(&mut c, "list_projects", json!({})).await;
    let keys: Vec<&str> = projects["projects"].as_array().unwrap().iter().map(|p| p["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["ATLAS", "BEACON", "CEDAR"]);
    let all = ok(&mut c, "list_projects", json!({"include_archived": true})).await;
    assert_eq!(all["projects"].as_array().unwrap().len(), 4);

    let report = ok(&mut c, "summarize_project", json!({"project": "beacon"})).await;
    assert_eq!(report["project"], "BEACON");
    assert_eq!(report["assessment"], "off_track", "BEACON-1 is urgent and overdue");
    assert_eq!(report["overdue"][0]["key"], "BEACON-1");
    let short = ok(&mut c, "summarize_project", json!({"project": "CEDAR", "sections": ["status"]})).await;
    assert!(short.get("by_status").is_some() && short.get("workload").is_none());

    let team = ok(&mut c, "list_team_members", json!({"project": "ATLAS"})).await;
    let chloe = &team["members"].as_array().unwrap().iter().find(|m| m["handle"] == "chloe").unwrap().clone();
    assert_eq!(chloe["in_progress"], json!(["ATLAS-1"]));

    let urgent = ok(&mut c, "search_issues", json!({"priority": ["urgent"], "sort_by": "due_date"})).await;
    assert_eq!(urgent["total"], 2);
    let text = ok(&mut c, "search_issues", json!({"query": "idempotency key"})).await;
    assert_eq!(text["issues"][0]["key"], "BEACON-1", "comments are searched too");
    let paged = ok(&mut c, "search_issues", json!({"include_closed": true, "limit": 5})).await;
    assert_eq!((paged["returned"].clone(), paged["next_offset"].clone()), (json!(5), json!(5)));
    let unassigned = ok(&mut c, "search_issues", json!({"assignee": "unassigned"})).await;
    assert!(unassigned["issues"].as_array().unwrap().iter().all(|i| i["assignee"].is_null()));

    let issue = ok(&mut c, "get_issue", json!({"key": "atlas-1"})).await;
    assert_eq!((issue["key"].clone(), issue["comment_count"].clone()), (json!("ATLAS-1"), json!(2)));

    let created = ok(
        &mut c,
        "create_issue",
        json!({
            "project": "ATLAS", "title": "Crash when rotating the parts picker again", "kind": "bug",
            "priority": "high", "assignee": "chloe", "labels": ["crash", "android"], "estimate_points": 3,
            "due_date": "2025-06-30", "description": "Same stack as ATLAS-5.",
        }),
    )
    .await;
    assert_eq!(created["key"], "ATLAS-9");
    assert_eq!(created["status"], "todo");

    let updated = ok(
        &mut c,
        "update_issue",
        json!({
            "key": "ATLAS-9", "expected_updated_at": created["updated_at"],
            "changes": {"status": "in_progress", "labels_add": ["regression"], "labels_remove": ["android"], "due_date": null},
            "comment": "Picked up.", "author": "chloe",
        }),
    )
    .await;
    assert_eq!(updated["changed_fields"], json!(["status", "labels", "due_date"]));
    assert_eq!(updated["issue"]["labels"], json!(["crash", "regression"]));
    assert_eq!(updated["issue"]["comment_count"], 1);
    let stale = refused(
        &mut c,
        "update_issue",
        json!({"key": "ATLAS-9", "expected_updated_at": created["updated_at"], "changes": {"priority": "low"}}),
    )
    .await;
    assert!(stale.contains("changed since you read it"), "{stale}");

    let comment =
        ok(&mut c, "add_comment", json!({"key": "ATLAS-9", "body": "Fix is in review.", "visibility": "internal"}))
            .await;
    assert_eq!(
        (comment["comment_count"].clone(), comment["comment"]["author"].clone()),
        (json!(2), json!("assistant"))
    );

    let deleted =
        ok(&mut c, "delete_issue", json!({"key": "ATLAS-9", "confirm": true, "reason": "duplicate of ATLAS-5"})).await;
    assert_eq!(deleted["deleted"], "ATLAS-9");
    assert!(refused(&mut c, "get_issue", json!({"key": "ATLAS-9"})).await.contains("No issue"));

    let notes = ok(&mut c, "search_notes", json!({"query": "rollback billing"})).await;
    assert_eq!(notes["hits"][0]["id"], "billing-runbook");
    assert!(notes["hits"][0]["snippet"].as_str().unwrap().to_lowercase().contains("roll"));
    let tagged = ok(&mut c, "search_notes", json!({"tags": ["process"], "include_body": true})).await;
    assert_eq!(tagged["total"], 2);
    assert!(tagged["hits"][0]["body"].as_str().unwrap().starts_with('#'));

    let stats = ok(&mut c, "compute_statistics", json!({"values": [3, 1, 4, 1, 5, 9, 2, 6]})).await;
    assert_eq!(stats["count"], 8);
    assert_eq!(stats["metrics"]["median"], json!(3.5));
    assert_eq!(stats["metrics"]["mean"], json!(3.875));
    assert_eq!(stats["metrics"]["p90"], json!(6.9));
    let one = ok(&mut c, "compute_statistics", json!({"values": [7], "metrics": ["stdev", "min"]})).await;
    assert_eq!(one["metrics"], json!({"stdev": null, "min": 7.0}));

    let gib = ok(&mut c, "convert_units", json!({"value": 3.5, "from_unit": "GB", "to_unit": "GiB"})).await;
    assert_eq!(gib["display"], "3.25963 GiB");
    let temp =
        ok(&mut c, "convert_units", json!({"value": 72, "from_unit": "F", "to_unit": "C", "precision": 4})).await;
    assert_eq!(temp["display"], "22.22 C");
}

#[tokio::test]
async fn bad_input_is_refused_with_actionable_messages() {
    let mut c = client().await;
    let cases = [
        ("summarize_project", json!({"project": "NOPE"}), "Known projects: ATLAS, BEACON, CEDAR, DUNE"),
        ("summarize_project", json!({}), "Missing required argument 'project'"),
        ("summarize_project", json!({"project": "ATLAS", "sections": ["vibes"]}), "Valid sections"),
        ("search_issues", json!({"status": ["open"]}), "Valid values: backlog, todo"),
        ("search_issues", json!({"assignee": "zoe"}), "Team handles are: ana, ben"),
        ("search_issues", json!({"due_before": "next week"}), "YYYY-MM-DD"),
        ("search_issues", json!({"limit": 500}), "between 1 and 50"),
        ("search_issues", json!({"colour": "red"}), "Unknown argument 'colour'"),
        ("get_issue", json!({"key": "12"}), "Issue keys look like ATLAS-12"),
        ("create_issue", json!({"project": "DUNE", "title": "Reopen the pilot"}), "archived"),
        ("create_issue", json!({"project": "ATLAS", "title": "Fix"}), "5-120 characters"),
        (
            "create_issue",
            json!({"project": "ATLAS", "title": "A valid title", "priority": "critical"}),
            "urgent, high, medium, low",
        ),
        (
            "create_issue",
            json!({"project": "ATLAS", "title": "A valid title", "estimate_points": 4}),
            "1, 2, 3, 5, 8, 13",
        ),
        (
            "create_issue",
            json!({"project": "ATLAS", "title": "A valid title", "due_date": "2025-01-01"}),
            "in the past",
        ),
        (
            "create_issue",
            json!({"project": "ATLAS", "title": "A valid title", "labels": ["Bad Label"]}),
            "Invalid label",
        ),
        ("update_issue", json!({"key": "ATLAS-5", "changes": {}}), "at least one field"),
        ("update_issue", json!({"key": "ATLAS-5", "changes": {"status": "done"}}), "needs an assignee"),
        (
            "update_issue",
            json!({"key": "DUNE-2", "changes": {"status": "in_progress"}}),
            "cancelled issue can only be reopened",
        ),
        ("update_issue", json!({"key": "ATLAS-5", "changes": {"colour": "red"}}), "Unknown argument 'changes.colour'"),
        ("add_comment", json!({"key": "ATLAS-1", "body": "   "}), "must not be empty"),
        ("add_comment", json!({"key": "ATLAS-1", "body": "hi", "author": "zoe"}), "Unknown author 'zoe'"),
        ("delete_issue", json!({"key": "ATLAS-5", "confirm": false}), "confirm: true"),
        ("delete_issue", json!({"key": "DUNE-1", "confirm": true}), "archived"),
        ("search_notes", json!({}), "Give a query, tags, or both"),
        ("compute_statistics", json!({"values": []}), "1 to 10000 numbers"),
        ("compute_statistics", json!({"values": [1, "two"]}), "must be an array of numbers"),
        ("convert_units", json!({"value": 1, "from_unit": "kg", "to_unit": "m"}), "same category"),
        ("convert_units", json!({"value": 1, "from_unit": "Kg", "to_unit": "g"}), "mass units are"),
        ("convert_units", json!({"value": -500, "from_unit": "C", "to_unit": "K"}), "below absolute zero"),
    ];
    for (tool, args, expected) in cases {
        let message = refused(&mut c, tool, args.clone()).await;
        assert!(message.contains(expected), "{tool}({args}): {message:?} should mention {expected:?}");
    }
    // Nothing above changed the data.
    let issue = c.call("get_issue", json!({"key": "ATLAS-5"})).await;
    assert_eq!(issue["structuredContent"]["status"], "backlog");
}

#[tokio::test]
async fn resources_prompts_and_completions() {
    let mut c = client().await;
    let list = c.result("resources/list", json!({})).await;
    let uris: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        [
            "demo://team/roster",
            "demo://kb/index",
            "demo://projects/ATLAS",
            "demo://projects/BEACON",
            "demo://projects/CEDAR",
            "demo://projects/DUNE"
        ]
    );
    let templates = c.result("resources/templates/list", json!({})).await;
    assert_eq!(templates["resourceTemplates"].as_array().unwrap().len(), 3);

    let r = c.result("resources/read", json!({"uri": "demo://projects/ATLAS"})).await;
    let body: Value = serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["report"]["project"], "ATLAS");
    let r = c.result("resources/read", json!({"uri": "demo://issues/BEACON-1"})).await;
    assert!(r["contents"][0]["text"].as_str().unwrap().contains("idempotency"));
    let r = c.result("resources/read", json!({"uri": "demo://notes/estimation"})).await;
    assert_eq!(r["contents"][0]["mimeType"], "text/markdown");
    let r = c.result("resources/read", json!({"uri": "demo://kb/index"})).await;
    assert!(r["contents"][0]["text"].as_str().unwrap().contains("`on-call`"));
    for missing in ["demo://issues/NOPE-1", "demo://notes/nope", "demo://nothing"] {
        let r = c.request("resources/read", json!({"uri": missing})).await;
        assert_eq!(r["error"]["code"], -32602, "{missing}");
    }

    let prompts = c.result("prompts/list", json!({})).await;
    assert_eq!(prompts["prompts"].as_array().unwrap().len(), 2);
    let p = c
        .result("prompts/get", json!({"name": "triage_backlog", "arguments": {"project": "atlas", "focus": "bugs"}}))
        .await;
    assert_eq!(p["messages"][1]["content"]["resource"]["uri"], "demo://projects/ATLAS");
    let p = c
        .result(
            "prompts/get",
            json!({"name": "draft_status_update", "arguments": {"project": "BEACON", "audience": "leadership"}}),
        )
        .await;
    assert!(p["messages"][0]["content"]["text"].as_str().unwrap().contains("leadership audience"));
    let r = c
        .request(
            "prompts/get",
            json!({"name": "draft_status_update", "arguments": {"project": "BEACON", "audience": "aliens"}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    let r = c.request("prompts/get", json!({"name": "triage_backlog", "arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602);

    let done = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let r = c
        .result("completion/complete", done(json!({"type": "ref/prompt", "name": "triage_backlog"}), "project", "b"))
        .await;
    assert_eq!(r["completion"]["values"], json!(["BEACON"]));
    let r = c
        .result(
            "completion/complete",
            done(json!({"type": "ref/resource", "uri": "demo://issues/{key}"}), "key", "cedar-"),
        )
        .await;
    assert_eq!(r["completion"]["values"], json!(["CEDAR-1", "CEDAR-2", "CEDAR-3", "CEDAR-4"]));
    let r = c
        .result(
            "completion/complete",
            done(json!({"type": "ref/prompt", "name": "draft_status_update"}), "audience", ""),
        )
        .await;
    assert_eq!(r["completion"]["total"], 3);
}
