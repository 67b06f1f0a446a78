//! Per-tool budgets and shared limits through the real binary:
//! - over a `[[limits]]` budget, the write-tool default, a daily budget or
//!   the identical-call breaker, a call gets a tool error the model can
//!   read (`isError`, which limit, when it resets), counted in
//!   `toolgate_limit_refusals_total`; re-initializing gives no fresh budget;
//! - with `[state] redis_url`, two replicas behind HAProxy count a client's
//!   `calls_per_minute` and per-tool budgets as one; with Redis stopped
//!   each counts alone (and says so in `toolgate_limit_fallbacks_total`),
//!   and once it is back they share again;
//! - a client's `max_sessions` holds across replicas, and an ended session
//!   frees its place on any of them.

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, ensure};
use serde_json::{Value, json};

use crate::common::*;

const ALICE: &str = "alice-key-0123456789abcdef0";
const BOB: &str = "bob-key-0123456789abcdef012";

/// The fixture as a passthrough upstream: its tools are called at once.
fn fixture() -> String {
    fixture_upstream("fx", &[], "mode = \"passthrough\"")
}

async fn start(sections: &str) -> Result<Toolgate> {
    let alice = client_entry("alice", ALICE, "");
    Toolgate::start_with(&fixture(), &format!("[server]\nlisten = \"127.0.0.1:0\"\n{sections}\n{alice}")).await
}

/// Alice, initialized.
async fn alice(gw: &Toolgate) -> Result<Client> {
    let mut c = Client::with_bearer(&gw.url, ALICE)?;
    c.initialize(json!({})).await?;
    Ok(c)
}

/// The exposed name of the fixture's tool `tool`.
async fn name_of(c: &Client, tool: &str) -> Result<String> {
    let list = c.result("tools/list", json!({})).await?;
    list["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .find(|n| *n == tool || n.ends_with(&format!("__{tool}")))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no {tool} in {list}"))
}

/// The limit a call's tool error names, or `None` when the call went through.
fn refused_by(result: &Value) -> Option<String> {
    (result["isError"] == true)
        .then(|| result["_meta"]["dev.toolgate/limit"]["limit"].as_str().unwrap_or("?").to_owned())
}

#[tokio::test]
async fn a_tool_over_its_budget_gets_a_tool_error_and_a_new_session_no_fresh_budget() -> Result<()> {
    let gw = start("[[limits]]\ntools = \"*echo\"\nper_minute = 3\n[metrics]\nenabled = true\n").await?;
    let c = alice(&gw).await?;
    let echo = name_of(&c, "echo").await?;
    for i in 0..3 {
        let r = c.call_tool(&echo, json!({"text": format!("hi {i}")})).await?;
        ensure!(refused_by(&r).is_none(), "call {i}: {r}");
    }
    let r = c.call_tool(&echo, json!({"text": "one more"})).await?;
    ensure!(refused_by(&r).as_deref() == Some("per_minute"), "{r}");
    let meta = &r["_meta"]["dev.toolgate/limit"];
    let wait = meta["retryAfter"].as_u64().context("retryAfter")?;
    ensure!((15..=20).contains(&wait), "three a minute: the next in about 20 s, not {wait}");
    ensure!(meta["resetsAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{meta}");
    let text = r["content"][0]["text"].as_str().unwrap_or("");
    ensure!(text.contains("at most 3 calls") && text.contains("resets in"), "{text}");
    // Another tool is not held back.
    let whoami = name_of(&c, "fixture_whoami").await?;
    ensure!(refused_by(&c.call_tool(&whoami, json!({})).await?).is_none());
    // Budgets are the client's, not the session's.
    let again = alice(&gw).await?;
    let r = again.call_tool(&echo, json!({"text": "fresh session"})).await?;
    ensure!(refused_by(&r).as_deref() == Some("per_minute"), "a new session got a fresh budget: {r}");
    let scrape = scrape(&format!("http://127.0.0.1:{}/metrics", gw.port())).await?;
    let line = scrape
        .lines()
        .find(|l| l.starts_with("toolgate_limit_refusals_total{") && l.contains("client=\"alice\""))
        .context("no toolgate_limit_refusals_total for alice")?;
    ensure!(line.contains("limit=\"per_minute\"") && line.ends_with(" 2"), "{line}");
    Ok(())
}

#[tokio::test]
async fn writes_the_breaker_and_a_daily_budget_each_refuse_in_their_own_words() -> Result<()> {
    let limits = "[[limits]]\ntools = \"*whoami\"\nper_day = 2\n\
                  [limits.defaults]\nwrite_per_minute = 5\nidentical_calls = { max = 2, window = \"60s\" }\n";
    let gw = start(limits).await?;
    let c = alice(&gw).await?;
    let (echo, rich, whoami) = (
        name_of(&c, "echo").await?,
        name_of(&c, "fixture_rich_definition").await?,
        name_of(&c, "fixture_whoami").await?,
    );
    // The same arguments twice, then the breaker, whatever the key order.
    c.call_tool(&echo, json!({"text": "a"})).await?;
    c.call_tool(&echo, json!({"text": "a"})).await?;
    let r = c.call_tool(&echo, json!({"text": "a"})).await?;
    ensure!(refused_by(&r).as_deref() == Some("identical_calls"), "{r}");
    ensure!(r["content"][0]["text"].as_str().unwrap_or("").contains("same arguments"), "{r}");
    // echo is not read-only: five a minute in all (the refused call took none).
    for text in ["b", "c", "d"] {
        ensure!(refused_by(&c.call_tool(&echo, json!({"text": text})).await?).is_none());
    }
    let r = c.call_tool(&echo, json!({"text": "e"})).await?;
    ensure!(refused_by(&r).as_deref() == Some("write_per_minute"), "{r}");
    // A read-only tool has no write budget.
    for flag in [true, false, true, false, true, false] {
        let r = c.call_tool(&rich, json!({"flag": flag})).await?;
        ensure!(r["isError"] != true || refused_by(&r).as_deref() == Some("identical_calls"), "{r}");
    }
    // Twice a day, then until UTC midnight.
    c.call_tool(&whoami, json!({"n": 1})).await?;
    c.call_tool(&whoami, json!({"n": 2})).await?;
    let r = c.call_tool(&whoami, json!({"n": 3})).await?;
    ensure!(refused_by(&r).as_deref() == Some("per_day"), "{r}");
    resets_at_midnight(&r)?;
    Ok(())
}

/// `GET /metrics`, with a credential (the main listener asks for one under `[auth]`).
async fn scrape(url: &str) -> Result<String> {
    let response = reqwest::Client::new().get(url).bearer_auth(ALICE).send().await?;
    ensure!(response.status().is_success(), "GET {url}: {}", response.status());
    Ok(response.text().await?)
}

/// Checks that a refusal's `resetsAt` is the coming 00:00:00 UTC.
fn resets_at_midnight(refusal: &Value) -> Result<()> {
    let resets = refusal["_meta"]["dev.toolgate/limit"]["resetsAt"].as_str().context("resetsAt")?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
    let midnight = std::time::UNIX_EPOCH + Duration::from_secs((now / 86_400 + 1) * 86_400);
    ensure!(resets == humantime::format_rfc3339_seconds(midnight).to_string(), "resets at {resets}, not at midnight");
    Ok(())
}

// --- Across replicas ----------------------------------------------------------

/// A sessionless (2026-07-28) `tools/call` by the holder of `key` at `url`:
/// its result, or its error object.
async fn modern_call(url: &str, key: &str, id: i64, tool: &str, arguments: Value) -> Result<Value> {
    let c = Client::with_bearer(url, key)?;
    let body = modern_body("budgets", json!(id), "tools/call", json!({"name": tool, "arguments": arguments}));
    let reply = c.send(modern_post(&c, &body, Some(tool))).await?;
    let answer = reply.response(&json!(id)).cloned().ok_or_else(|| anyhow!("no answer: {reply:?}"))?;
    Ok(answer.get("result").or_else(|| answer.get("error")).cloned().unwrap_or(answer))
}

fn rate_limited(answer: &Value) -> bool {
    answer["code"] == -32015
}

struct Replicas {
    redis: RedisServer,
    urls: [String; 2],
    metrics: [String; 2],
    balancer: Balancer,
    _gws: [Toolgate; 2],
}

async fn replicas(limits: &str) -> Result<Option<Replicas>> {
    let Some(redis) = RedisServer::start() else { return Ok(None) };
    let mut gws = Vec::new();
    for _ in 0..2 {
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[state]\nredis_url = \"{}\"\n[metrics]\nenabled = true\n{limits}\n{}{}{}",
            redis.url(),
            client_entry("alice", ALICE, "calls_per_minute = 12"),
            client_entry("bob", BOB, ""),
            fixture()
        );
        gws.push(Toolgate::start_raw(&config).await?);
    }
    let ports = [gws[0].port(), gws[1].port()];
    let Some(balancer) = Balancer::start(&ports) else { return Ok(None) };
    let urls = ports.map(|p| format!("http://127.0.0.1:{p}/mcp"));
    let metrics = ports.map(|p| format!("http://127.0.0.1:{p}/metrics"));
    let gws: [Toolgate; 2] = gws.try_into().map_err(|_| anyhow!("two replicas"))?;
    Ok(Some(Replicas { redis, urls, metrics, balancer, _gws: gws }))
}

/// The sum of a counter over both replicas.
async fn counted(cluster: &Replicas, series: &str) -> Result<f64> {
    let mut total = 0.0;
    for url in &cluster.metrics {
        let text = scrape(url).await?;
        total += text
            .lines()
            .filter(|l| l.starts_with(series))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    Ok(total)
}

/// Bob's calls of `tool`, `rounds` times on each replica in turn; the limit
/// refusing each (`None`: it passed).
async fn alternate(cluster: &Replicas, first_id: i64, tool: &str, rounds: i64) -> Result<Vec<Option<String>>> {
    let mut outcomes = Vec::new();
    for round in 0..rounds {
        for (i, url) in cluster.urls.iter().enumerate() {
            let id = first_id + 2 * round + i64::try_from(i)?;
            outcomes.push(refused_by(&modern_call(url, BOB, id, tool, json!({})).await?));
        }
    }
    Ok(outcomes)
}

#[tokio::test]
async fn calls_per_minute_and_tool_budgets_hold_across_replicas_and_survive_a_redis_outage() -> Result<()> {
    let limits = "[[limits]]\ntools = \"*whoami\"\nper_minute = 4\n[[limits]]\ntools = \"*echo\"\nper_minute = 1000\n";
    let Some(mut cluster) = replicas(limits).await? else {
        eprintln!("skipped: no redis-server or haproxy");
        return Ok(());
    };
    let through = cluster.balancer.url();
    let echo = name_of_at(&through).await?;
    let whoami = echo.replace("echo", "fixture_whoami");
    // Alice: 12 calls a minute (the next one 5 s after a burst, longer
    // than this part takes even on a loaded machine), round-robin over two
    // replicas. 12 pass, then each replica refuses the next.
    let started = std::time::Instant::now();
    let mut passed = 0;
    for id in 0..12 {
        let answer = modern_call(&through, ALICE, id, &echo, json!({"text": format!("{id}")})).await?;
        if !rate_limited(&answer) {
            passed += 1;
        }
    }
    ensure!(passed >= 11, "{passed} of 12 calls passed");
    for url in &cluster.urls {
        let answer = modern_call(url, ALICE, 100, &echo, json!({"text": "13th"})).await?;
        ensure!(rate_limited(&answer), "the 13th call passed on {url} after {:?}: {answer}", started.elapsed());
    }
    // A per-tool budget is shared the same way (whoami: four a minute).
    let outcomes = alternate(&cluster, 200, &whoami, 3).await?;
    let refused = outcomes.iter().filter(|o| o.as_deref() == Some("per_minute")).count();
    ensure!(refused == 2, "four of six calls pass across both replicas: {outcomes:?}");
    ensure!(counted(&cluster, "toolgate_limit_fallbacks_total").await? == 0.0);

    // Redis stops: each replica counts alone, with the full limit, and
    // counts the calls it counted alone.
    cluster.redis.stop();
    let outcomes = alternate(&cluster, 300, &whoami, 5).await?;
    let passed: Vec<usize> =
        (0..2).map(|i| outcomes.iter().skip(i).step_by(2).filter(|o| o.is_none()).count()).collect();
    ensure!(passed == [4, 4], "each replica alone allows four: {outcomes:?}");
    ensure!(counted(&cluster, "toolgate_limit_fallbacks_total").await? >= 8.0);

    // Redis is back (empty). Each replica asks it again a second after its
    // last failure: calls until neither counts alone any more...
    cluster.redis.resume();
    let mut before = counted(&cluster, "toolgate_limit_fallbacks_total").await?;
    for round in 0..40 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        for url in &cluster.urls {
            modern_call(url, BOB, 500 + round, &echo, json!({"text": "warm"})).await?;
        }
        let now = counted(&cluster, "toolgate_limit_fallbacks_total").await?;
        if now == before {
            break;
        }
        before = now;
    }
    // ...then they share one budget again.
    let outcomes = alternate(&cluster, 600, &whoami, 3).await?;
    let refused = outcomes.iter().filter(|o| o.as_deref() == Some("per_minute")).count();
    ensure!(refused == 2, "shared again after Redis came back: {outcomes:?}");
    Ok(())
}

#[tokio::test]
async fn daily_write_and_breaker_budgets_hold_across_replicas() -> Result<()> {
    let limits = "[[limits]]\ntools = \"*whoami\"\nper_day = 3\n\
                  [limits.defaults]\nwrite_per_minute = 4\nidentical_calls = { max = 2, window = \"60s\" }\n";
    let Some(cluster) = replicas(limits).await? else {
        eprintln!("skipped: no redis-server or haproxy");
        return Ok(());
    };
    let echo = name_of_at(&cluster.balancer.url()).await?;
    let whoami = echo.replace("echo", "fixture_whoami");
    let [a, b] = &cluster.urls;
    let call = |url: &str, id: i64, tool: &str, arguments: Value| {
        let (url, tool) = (url.to_owned(), tool.to_owned());
        async move { modern_call(&url, BOB, id, &tool, arguments).await.map(|r| refused_by(&r)) }
    };
    // The breaker: the same arguments on one replica, then the other, then a third time.
    ensure!(call(a, 1, &echo, json!({"text": "same"})).await?.is_none());
    ensure!(call(b, 2, &echo, json!({"text": "same"})).await?.is_none());
    ensure!(call(a, 3, &echo, json!({"text": "same"})).await?.as_deref() == Some("identical_calls"));
    // Writes: four a minute of echo in all, whichever replica.
    ensure!(call(b, 4, &echo, json!({"text": "b"})).await?.is_none());
    ensure!(call(a, 5, &echo, json!({"text": "c"})).await?.is_none());
    ensure!(call(b, 6, &echo, json!({"text": "d"})).await?.as_deref() == Some("write_per_minute"));
    // Three a day of whoami, whichever replica.
    for (id, url) in [(7, a), (8, b), (9, a)] {
        ensure!(call(url, id, &whoami, json!({"n": id})).await?.is_none());
    }
    let answer = modern_call(b, BOB, 10, &whoami, json!({"n": 10})).await?;
    ensure!(refused_by(&answer).as_deref() == Some("per_day"), "{answer}");
    resets_at_midnight(&answer)?;
    Ok(())
}

/// The exposed name of `echo`, asked sessionless at `url`.
async fn name_of_at(url: &str) -> Result<String> {
    let c = Client::with_bearer(url, ALICE)?;
    let body = modern_body("budgets", json!(0), "tools/list", json!({}));
    let reply = c.send(modern_post(&c, &body, None)).await?;
    let list = reply.response(&json!(0)).cloned().context("tools/list")?;
    list["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.ends_with("echo"))
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no echo in {list}"))
}

#[tokio::test]
async fn max_sessions_is_counted_across_replicas_and_an_ended_session_frees_its_place() -> Result<()> {
    const CAROL: &str = "carol-key-0123456789abcdef0";
    let Some(redis) = RedisServer::start() else {
        eprintln!("skipped: no redis-server");
        return Ok(());
    };
    let mut gws = Vec::new();
    for _ in 0..2 {
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[state]\nredis_url = \"{}\"\n{}{}",
            redis.url(),
            client_entry("carol", CAROL, "max_sessions = 2"),
            fixture()
        );
        gws.push(Toolgate::start_raw(&config).await?);
    }
    let open = |gw: &Toolgate| {
        let url = gw.url.clone();
        async move {
            let mut c = Client::with_bearer(&url, CAROL)?;
            c.initialize(json!({})).await.map(|_| c)
        }
    };
    let first = open(&gws[0]).await?;
    let _second = open(&gws[1]).await?;
    // A third, on either replica: each has seen only one of her sessions.
    for gw in &gws {
        let refused = open(gw).await.err().context("a third session was opened")?;
        ensure!(refused.to_string().contains("429"), "{refused}");
    }
    // Her first session ends (on the replica that holds it): its place is
    // free on the other.
    first.delete().await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match open(&gws[1]).await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.context("no new session after one ended")),
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_host_that_calls_only_listed_tools_meets_the_budget_through_the_call_tool() -> Result<()> {
    // The search listing: a host's model sees (and may call) only these.
    let limits = "[disclosure]\nlisting = \"search\"\n[[limits]]\ntools = \"*echo\"\nper_minute = 2\n";
    let gw = Toolgate::start_with(
        &fixture_upstream("fx", &[], ""),
        &format!("[server]\nlisten = \"127.0.0.1:0\"\n{limits}\n{}", client_entry("alice", ALICE, "")),
    )
    .await?;
    let c = alice(&gw).await?;
    let list = c.result("tools/list", json!({})).await?;
    let listed: Vec<&str> = list["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    ensure!(listed == ["search_tools", "call_tool", "describe_tools"], "{listed:?}");
    c.call_tool("search_tools", json!({"query": "echo text"})).await?;
    c.call_tool("describe_tools", json!({"tools": ["echo"]})).await?;
    let through = |text: &str| c.call_tool("call_tool", json!({"name": "echo", "arguments": {"text": text}}));
    for text in ["one", "two"] {
        let r = through(text).await?;
        ensure!(refused_by(&r).is_none() && r["isError"] != true, "{r}");
    }
    let r = through("three").await?;
    ensure!(refused_by(&r).as_deref() == Some("per_minute"), "the routed call is the call the budget counts: {r}");
    Ok(())
}
