//! What the audit trail costs a call, in CPU (`cargo bench --bench audit`):
//! on the call's path (the event built: who, the arguments cloned, queued)
//! and on the writer's thread (arguments redacted against the tool's
//! schema and digested, the line serialized into the buffer the writer
//! keeps between events), for a call of a tool with a
//! ten-property schema and six arguments, one of them a secret, in
//! "redacted" mode. It prints p50 and p90 of each, their sum, and whether
//! the sum's p50 is within the 2 µs target.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};
#[path = "../support/catalog.rs"]
mod catalog;
#[path = "../support/timing.rs"]
mod timing;

use timing::{figures, histogram, micros, p50, record};
use toolgate::audit::{Call, Event, Kind, Renderer, Who};
use toolgate::catalog::ToolEntry;
use toolgate::config::AuditConfig;

/// The target: CPU per call, at p50.
const TARGET: Duration = Duration::from_micros(2);

fn main() -> Result<()> {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("audit: run with `cargo bench --bench audit` (skipped: not a bench run)");
        return Ok(());
    }
    let rounds: usize = std::env::var("TOOLGATE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(20_000);
    let entry = entry();
    let mut renderer = Renderer::new(&AuditConfig::default());
    let (queue, mut events) = tokio::sync::mpsc::channel::<Event>(rounds + 1);
    let who =
        Who { principal: Arc::from("alice"), client: Arc::from("alice"), session: Some(Arc::from("0123456789abcdef")) };
    let arguments = json!({"owner": "acme", "repo": "toolgate", "title": "A bug", "body": "It breaks when…",
        "labels": ["bug", "p1"], "api_token": "ghp_0123456789"});
    let params = json!({"name": "github__create_issue", "arguments": arguments});
    let (mut path, mut writer, mut total) = (histogram(), histogram(), histogram());
    for _ in 0..rounds {
        // On the call's path: what the gateway does for an audited call.
        let started = Instant::now();
        let kept = params.get("arguments").cloned();
        let event = Event::now(Kind::Call(Box::new(Call {
            who: Who { principal: Arc::from(&*who.principal.to_string()), ..who.clone() },
            entry: entry.clone(),
            upstream: Arc::from("github"),
            granted: Some(true),
            routed: false,
            arguments: kept,
            outcome: "ok",
            result_bytes: Some(512),
            latency: Duration::from_millis(12),
        })));
        let _ = queue.try_send(event);
        let on_path = started.elapsed();
        // On the writer's thread.
        let event = events.try_recv()?;
        let started = Instant::now();
        let line = renderer.render(&event);
        let off_path = started.elapsed();
        std::hint::black_box(line);
        record(&mut path, on_path);
        record(&mut writer, off_path);
        record(&mut total, on_path + off_path);
    }
    println!("audit, \"redacted\", one call of a 10-property tool with 6 arguments ({rounds} calls):");
    println!("  on the call's path:    {}", figures(&path));
    println!("  on the writer thread:  {}", figures(&writer));
    println!("  in all:                {}", figures(&total));
    let p50 = p50(&total);
    let verdict = if p50 <= TARGET { "met" } else { "NOT met" };
    println!("  target p50 <= {} µs of CPU per call: {verdict} ({})", TARGET.as_micros(), micros(p50));
    Ok(())
}

fn entry() -> Arc<ToolEntry> {
    let properties: serde_json::Map<String, Value> =
        ["owner", "repo", "title", "body", "assignee", "milestone", "labels", "api_token", "draft", "template"]
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string", "description": format!("The {p}")})))
            .collect();
    let definition = json!({"name": "create_issue", "description": "Creates an issue.",
        "inputSchema": {"type": "object", "properties": properties, "required": ["owner", "repo", "title"]}});
    catalog::entry("github", definition)
}
