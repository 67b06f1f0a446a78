//! Sessions across replicas: two real toolgate processes sharing a real
//! `redis-server`, behind a real HAProxy balancing round-robin without
//! stickiness; SDK clients run the whole disclosure workflow through it
//! while replicas are stopped, restarted and Redis goes away.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;
use crate::interop_matrix::clients::{Endpoint, Stack, Transport};

/// The upstream every replica serves: the fixture (its `echo` and
/// `test_sampling` tools), one child per session.
fn upstream() -> String {
    fixture_upstream("fx", &[], "")
}

/// One replica: a toolgate on a fixed loopback port (so that the balancer
/// finds it again after a restart), stopped and started at will.
struct Replica {
    port: u16,
    config: String,
    env: Vec<(String, String)>,
    gw: Option<Toolgate>,
    /// The logs of the processes it ran before the current one.
    earlier: String,
}

impl Replica {
    async fn start(redis_url: &str, extra: &str, upstream: &str, env: &[(&str, &str)]) -> Result<Replica> {
        let port = free_port();
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[state]\nredis_url = \"{redis_url}\"\n{extra}\n{upstream}"
        );
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut replica = Replica { port, config, env, gw: None, earlier: String::new() };
        replica.resume().await?;
        Ok(replica)
    }

    /// Starts it again (after [`Replica::sigterm`] or [`Replica::sigkill`]).
    async fn resume(&mut self) -> Result<()> {
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Toolgate::start_raw_env(&self.config, &env).await {
                Ok(gw) => {
                    self.gw = Some(gw);
                    return Ok(());
                }
                // The port may not be free yet right after a stop.
                Err(e) if Instant::now() < deadline => {
                    eprintln!("replica on {} not started yet: {e}", self.port);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn logs(&self) -> String {
        format!("{}{}", self.earlier, self.gw.as_ref().map(Toolgate::logs).unwrap_or_default())
    }

    /// A rolling deploy's stop: SIGTERM, then waits for the process to exit.
    async fn sigterm(&mut self) -> Result<()> {
        let mut gw = self.gw.take().context("running")?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
        let status = tokio::time::timeout(Duration::from_secs(30), gw.proc.child.wait()).await??;
        ensure!(status.success(), "toolgate exited with {status} on SIGTERM; logs:\n{}", gw.logs());
        self.earlier.push_str(&gw.logs());
        Ok(())
    }

    /// A crash: SIGKILL, then waits for the process to be gone.
    async fn sigkill(&mut self) -> Result<()> {
        let mut gw = self.gw.take().context("running")?;
        let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL)?;
        tokio::time::timeout(Duration::from_secs(30), gw.proc.child.wait()).await??;
        self.earlier.push_str(&gw.logs());
        Ok(())
    }
}

/// Redis, two replicas and a balancer in front of them; `None` when the
/// environment says to skip the Redis or HAProxy tests.
struct Cluster {
    redis: RedisServer,
    replicas: [Replica; 2],
    balancer: Balancer,
}

impl Cluster {
    async fn start() -> Result<Option<Cluster>> {
        Self::start_with("").await
    }

    /// The same, with `extra` in both replicas' configuration.
    async fn start_with(extra: &str) -> Result<Option<Cluster>> {
        Self::start_full(extra, &upstream(), &[]).await
    }

    /// The same, with `upstream` as the replicas' upstream and `env` in their environment.
    async fn start_full(extra: &str, upstream: &str, env: &[(&str, &str)]) -> Result<Option<Cluster>> {
        let Some(redis) = RedisServer::start() else { return Ok(None) };
        let a = Replica::start(&redis.url(), extra, upstream, env).await?;
        let b = Replica::start(&redis.url(), extra, upstream, env).await?;
        let Some(balancer) = Balancer::start(&[a.port, b.port]) else { return Ok(None) };
        Ok(Some(Cluster { redis, replicas: [a, b], balancer }))
    }

    fn logs(&self) -> String {
        self.replicas.iter().map(Replica::logs).collect::<Vec<_>>().join("\n----\n")
    }
}

/// A client of `url` speaking in `session`.
fn in_session(url: &str, session: &Client) -> Client {
    let mut c = session.clone();
    c.url = url.to_owned();
    c
}

/// A session opened on `a` (declaring sampling) with `tools` described,
/// the same session as a client of `b`, and `test_sampling` called with
/// `prompt` (id 7) on `a` until it asks the client for a sampling: B's client,
/// the call's stream, and that request.
async fn sampling_asked(a: &str, b: &str, tools: &str, prompt: &str) -> Result<(Client, MessageStream, Value)> {
    let on_a = Client::connected(a, json!({"sampling": {}})).await?;
    let on_b = in_session(b, &on_a);
    on_a.read_descriptions(tools).await?;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": prompt}}});
    let mut stream = on_a.open(&call).await?;
    let request = stream.next().await?;
    ensure!(request["method"] == "sampling/createMessage", "{request}");
    Ok((on_b, stream, request))
}

/// The JSON-RPC error code of a reply's only message.
fn error_code(reply: &Reply) -> Option<i64> {
    reply.messages.first()?.pointer("/error/code")?.as_i64()
}

/// Calls `echo` and checks the answer carries `text`.
async fn echo(c: &Client, text: &str) -> Result<()> {
    let result = c.call_tool("echo", json!({"text": text})).await?;
    ensure!(text_of(&result) == text, "echo answered {result}");
    Ok(())
}

#[tokio::test]
async fn a_session_is_served_by_every_replica_behind_a_balancer_without_stickiness() -> Result<()> {
    let Some(cluster) = Cluster::start().await? else { return Ok(()) };
    let c = Client::connected(&cluster.balancer.url(), json!({})).await?;
    // The description is read once, on whichever replica; every call after
    // it, on either replica, is let through.
    c.read_descriptions("echo").await?;
    for i in 0..10 {
        echo(&c, &format!("call {i}")).await?;
    }
    let tools = c.result("tools/list", json!({})).await?;
    ensure!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
    let adopted =
        cluster.replicas.iter().filter(|r| r.logs().contains("session adopted from the shared store")).count();
    ensure!(adopted == 1, "the replica that did not initialize adopted the session; logs:\n{}", cluster.logs());
    ensure!(cluster.logs().matches("session started").count() == 1, "one initialize; logs:\n{}", cluster.logs());

    // A made-up id, or one made up to look like a real one, is unknown everywhere.
    let mut stranger = c.clone();
    stranger.session = Some(uuid_like());
    for replica in &cluster.replicas {
        let reply = in_session(&replica.url(), &stranger).post(&ping()).await?;
        ensure!(reply.status == StatusCode::NOT_FOUND, "{:?}", reply);
        ensure!(error_code(&reply) == Some(-32001), "{:?}", reply);
    }
    Ok(())
}

#[tokio::test]
async fn delete_on_one_replica_ends_the_session_on_the_other_within_a_second() -> Result<()> {
    let Some(cluster) = Cluster::start().await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let on_a = Client::connected(&a.url(), json!({})).await?;
    let on_b = in_session(&b.url(), &on_a);
    // B adopts it, and holds it from now on.
    ensure!(on_b.post(&ping()).await?.status == StatusCode::OK);
    ensure!(on_a.delete().await? == StatusCode::OK);
    let deleted = Instant::now();
    loop {
        let reply = on_b.post(&ping()).await?;
        if reply.status == StatusCode::NOT_FOUND {
            break;
        }
        ensure!(deleted.elapsed() < Duration::from_secs(1), "B still serves the deleted session: {reply:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("B answered 404 {:?} after the DELETE on A", deleted.elapsed());
    // Through the bus, not because B happened to refresh the record.
    ensure!(b.logs().contains("session ended on another replica"), "B's logs:\n{}", b.logs());
    // And nothing brings it back: not A, not B adopting it again.
    for c in [&on_a, &on_b] {
        ensure!(c.post(&ping()).await?.status == StatusCode::NOT_FOUND);
    }
    Ok(())
}

#[tokio::test]
async fn a_sampling_answer_sent_to_another_replica_reaches_the_waiting_call() -> Result<()> {
    let Some(cluster) = Cluster::start().await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let (on_b, mut stream, request) = sampling_asked(&a.url(), &b.url(), "test_sampling", "across").await?;
    let answer = json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "from B"}});
    ensure!(on_b.respond(&request["id"], answer).await? == StatusCode::ACCEPTED);
    let done = stream.next().await?;
    ensure!(done["id"] == 7, "{done}");
    ensure!(text_of(&done["result"]).contains("from B"), "{done}");
    Ok(())
}

#[tokio::test]
async fn a_cancellation_sent_to_another_replica_stops_the_call() -> Result<()> {
    let Some(cluster) = Cluster::start().await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let on_a = Client::connected(&a.url(), json!({})).await?;
    on_a.read_descriptions("fixture_sleep,echo").await?;
    let on_b = in_session(&b.url(), &on_a);
    let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "fixture_sleep", "arguments": {"ms": 5000}, "_meta": {"progressToken": 5}}});
    let mut stream = on_a.open(&call).await?;
    let first = stream.next().await?;
    ensure!(first["method"] == "notifications/progress", "{first}");
    // B does not run it: it passes the cancellation on, and A stops the call.
    on_b.notify("notifications/cancelled", Some(json!({"requestId": 99, "reason": "gave up"}))).await?;
    let cancelled = Instant::now();
    while let Some(m) = stream.next_within(Duration::from_secs(3)).await {
        ensure!(m.get("result").is_none() && m.get("error").is_none(), "a cancelled request is not answered: {m}");
    }
    ensure!(cancelled.elapsed() < Duration::from_millis(2900), "the call ran on after the cancellation");
    ensure!(a.logs().contains("client cancelled a request through another replica"), "A's logs:\n{}", a.logs());
    echo(&on_b, "still here").await
}

#[tokio::test]
async fn a_session_is_served_to_its_own_client_only_on_every_replica() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef";
    const BOB: &str = "bob-key-0123456789abcdef-bob";
    let clients = format!(
        "[[auth.clients]]\nname = \"alice\"\napi_key = \"{ALICE}\"\n\n[[auth.clients]]\nname = \"bob\"\napi_key = \"{BOB}\"\n"
    );
    let Some(cluster) = Cluster::start_with(&clients).await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let mut alice = Client::with_bearer(&a.url(), ALICE)?;
    alice.initialize(json!({})).await?;
    // Bob, naming Alice's session on the replica that does not hold it, is
    // not served, and does not make B adopt it.
    let mut bob = Client::with_bearer(&b.url(), BOB)?;
    bob.session = alice.session.clone();
    bob.version = alice.version.clone();
    let reply = bob.post(&ping()).await?;
    ensure!(reply.status == StatusCode::NOT_FOUND, "{reply:?}");
    ensure!(!b.logs().contains("session adopted"), "B's logs:\n{}", b.logs());
    // Alice is served there.
    ensure!(in_session(&b.url(), &alice).post(&ping()).await?.status == StatusCode::OK);
    Ok(())
}

#[tokio::test]
async fn with_redis_gone_held_sessions_go_on_and_the_rest_is_refused_with_a_retryable_error() -> Result<()> {
    let Some(mut cluster) = Cluster::start().await? else { return Ok(()) };
    let on_a = Client::connected(&cluster.replicas[0].url(), json!({})).await?;
    on_a.read_descriptions("echo").await?;
    echo(&on_a, "before").await?;
    let on_b = in_session(&cluster.replicas[1].url(), &on_a);

    cluster.redis.stop();
    // A holds the session: it goes on from local state, grants included.
    echo(&on_a, "during").await?;
    // B does not: it cannot look it up, and says so within 5 s.
    let asked = Instant::now();
    let reply = on_b.post(&ping()).await?;
    eprintln!("Redis down: B refused adoption with {} after {:?}", reply.status, asked.elapsed());
    ensure!(asked.elapsed() < Duration::from_secs(5), "answered after {:?}", asked.elapsed());
    ensure!(reply.status == StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    ensure!(reply.headers.contains_key("retry-after"), "{reply:?}");
    ensure!(error_code(&reply) == Some(-32019), "{reply:?}");
    // A new session cannot be recorded either.
    let asked = Instant::now();
    let refused = Client::new(&cluster.replicas[1].url()).post(&initialize()).await?;
    eprintln!("Redis down: B refused a new session with {} after {:?}", refused.status, asked.elapsed());
    ensure!(asked.elapsed() < Duration::from_secs(5));
    ensure!(refused.status == StatusCode::SERVICE_UNAVAILABLE, "{refused:?}");
    let ready = readyz(&cluster.replicas[0]).await?;
    ensure!(ready["state"] == "down" && ready["status"] == "ready", "{ready}");

    // Redis comes back empty: A writes the session back, and B adopts it,
    // grants included.
    cluster.redis.resume();
    let back = Instant::now();
    loop {
        let reply = on_b.post(&ping()).await?;
        if reply.status == StatusCode::OK {
            break;
        }
        ensure!(back.elapsed() < Duration::from_secs(10), "B never adopted the session: {reply:?}\n{}", cluster.logs());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("Redis back (empty): B adopted the session A wrote back {:?} after the restart", back.elapsed());
    echo(&on_b, "after").await?;
    ensure!(readyz(&cluster.replicas[0]).await?["state"] == "up");
    Ok(())
}

#[tokio::test]
async fn with_redis_hanging_a_request_that_needs_it_is_refused_within_5_s_and_held_sessions_go_on() -> Result<()> {
    let Some(cluster) = Cluster::start().await? else { return Ok(()) };
    let on_a = Client::connected(&cluster.replicas[0].url(), json!({})).await?;
    on_a.read_descriptions("echo").await?;
    let on_b = in_session(&cluster.replicas[1].url(), &on_a);

    // Stopped, not gone: connections open, nothing answers.
    cluster.redis.freeze();
    let asked = Instant::now();
    let reply = on_b.post(&ping()).await?;
    eprintln!("Redis hanging: B refused adoption with {} after {:?}", reply.status, asked.elapsed());
    ensure!(asked.elapsed() < Duration::from_secs(5), "answered after {:?}", asked.elapsed());
    ensure!(reply.status == StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    ensure!(error_code(&reply) == Some(-32019), "{reply:?}");
    let asked = Instant::now();
    echo(&on_a, "held").await?;
    ensure!(asked.elapsed() < Duration::from_secs(1), "A waited on Redis: {:?}", asked.elapsed());
    cluster.redis.thaw();
    Ok(())
}

/// The SDK clients run the whole workflow through the balancer, with
/// sampling, while one replica is stopped (SIGTERM, as a rolling deploy
/// does) mid-workflow and started again; the restarted replica adopts the
/// sessions it knew nothing of.
#[tokio::test]
async fn sdk_clients_carry_on_through_a_rolling_restart() -> Result<()> {
    let Some(mut cluster) = Cluster::start().await? else { return Ok(()) };
    let url = cluster.balancer.url();
    // A session that outlives both restarts, for the adoption check.
    let old = Client::connected(&url, json!({})).await?;
    old.read_descriptions("echo").await?;
    for (stack, stopped) in [(Stack::PythonLegacy, 0), (Stack::TypeScript, 1)] {
        let dir = tempfile::tempdir()?;
        let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
        let sample = |text: &str| json!({"op": "call_tool", "name": "test_sampling", "arguments": {"prompt": text}});
        let steps = json!([
            {"op": "list_tools"},
            {"op": "read_resource", "uri": "resource:///tool_descriptions?tools=echo,test_sampling"},
            {"op": "call_tool", "name": "echo", "arguments": {"text": "one"}},
            sample("s1"), sample("s2"), sample("s3"),
            {"op": "sync", "signal": ready, "wait": go},
            {"op": "call_tool", "name": "echo", "arguments": {"text": "two"}},
            sample("s4"), sample("s5"),
            {"op": "list_tools"},
        ]);
        let endpoint = Endpoint::Url(url.clone());
        let run = tokio::spawn(async move { stack.run(&endpoint, Transport::Http, &steps).await });
        wait_for(&ready, Duration::from_secs(60)).await?;
        cluster.replicas[stopped].sigterm().await?;
        std::fs::write(&go, "")?;
        let report = run.await??;
        // A session (the subject here), not the sessionless revision.
        ensure!(report["mode_used"] == "legacy", "{stack:?} did not hold a session: {report}");
        for step in report["steps"].as_array().context("steps")? {
            ensure!(step["ok"] == true, "{stack:?}: a step failed: {step}\nlogs:\n{}", cluster.logs());
        }
        let texts: Vec<String> = report["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["op"] == "call_tool")
            .map(|s| text_of(&s["result"]).to_owned())
            .collect();
        for n in 1..=5 {
            ensure!(
                texts.iter().any(|t| t.contains(&format!("sampled: s{n}"))),
                "{stack:?}: s{n} was not sampled: {texts:?}"
            );
        }
        cluster.replicas[stopped].resume().await?;
        // The restarted replica adopts the old session when it reaches it.
        let direct = in_session(&cluster.replicas[stopped].url(), &old);
        echo(&direct, "old session").await?;
    }
    let logs = cluster.logs();
    // Three clients, three sessions: nobody initialized again.
    ensure!(logs.matches("session started").count() == 3, "logs:\n{logs}");
    ensure!(
        logs.contains("an answer passed to the replica that asked"),
        "no sampling answer crossed replicas:\n{logs}"
    );
    Ok(())
}

async fn wait_for(path: &std::path::Path, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while !path.exists() {
        if Instant::now() > deadline {
            bail!("{} did not appear", path.display());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn readyz(replica: &Replica) -> Result<Value> {
    // The store's state is at most a second old.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let url = format!("http://127.0.0.1:{}/readyz", replica.port);
    Ok(reqwest::get(url).await?.json().await?)
}

fn ping() -> Value {
    json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// An id shaped like toolgate's (32 hex digits) that no one issued.
fn uuid_like() -> String {
    format!("{:032x}", u128::from(std::process::id()) << 64 | 0x5eed)
}

// --- multi-round-trip retries across replicas ---------------------------------

/// The fixture as a handshake-era upstream without the gate: a 2026-07-28
/// client's call that elicits is held by toolgate (see `mrtr.rs`).
fn pinned_upstream() -> String {
    fixture_upstream("fx", &[], "protocol = \"2025-11-25\"\nmode = \"passthrough\"")
}

/// The `[mrtr] key` every replica shares, from the environment.
const MRTR_KEY: &str = "the-replicas-shared-requestState-key-0123456789";

/// Two replicas sharing `[mrtr] key` (and `extra`), in front of the pinned fixture.
async fn mrtr_cluster(extra: &str) -> Result<Option<Cluster>> {
    let extra = format!("[mrtr]\nkey = \"${{TOOLGATE_TEST_MRTR_KEY}}\"\n{extra}");
    Cluster::start_full(&extra, &pinned_upstream(), &[("TOOLGATE_TEST_MRTR_KEY", MRTR_KEY)]).await
}

/// A 2026-07-28 `tools/call` of `tool` from a client that can elicit.
fn modern_call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool,
        "arguments": arguments,
        "_meta": toolgate_test_support::modern::envelope("replicas-test", json!({"elicitation": {}})),
    }})
}

/// The retry of `first` under id `id`, answering `r1` with `answer`, with `state`.
fn modern_retry(first: &Value, id: i64, answer: &str, state: &Value) -> Value {
    let mut again = first.clone();
    again["id"] = json!(id);
    again["params"]["inputResponses"] = json!({"r1": {"action": "accept", "content": {"response": answer}}});
    again["params"]["requestState"] = state.clone();
    again
}

/// POSTs a 2026 request as `c` and returns its response message.
async fn modern_send(c: &Client, body: &Value) -> Result<Value> {
    let name = body["params"]["name"].as_str().unwrap_or_default();
    let reply = c.send(toolgate_test_support::modern::modern_post(c, body, Some(name))).await?;
    reply.response(&body["id"]).cloned().with_context(|| format!("no answer to {body}: {reply:?}"))
}

/// The `requestState` of an `InputRequiredResult`.
fn state_of(answer: &Value) -> Result<Value> {
    ensure!(answer["result"]["resultType"] == "input_required", "{answer}");
    ensure!(answer["result"]["requestState"].is_string(), "{answer}");
    Ok(answer["result"]["requestState"].clone())
}

/// Whether `answer` refuses its `requestState` (`-32602`) with a reason containing `why`.
fn refused_for(answer: &Value, why: &str) -> Result<()> {
    ensure!(answer["error"]["code"] == -32602, "{answer}");
    let reason = answer["error"]["data"]["reason"].as_str().unwrap_or_default();
    ensure!(reason.contains(why), "expected a reason with {why:?}: {answer}");
    Ok(())
}

#[tokio::test]
async fn a_retry_that_reaches_another_replica_completes_the_call_held_on_the_first() -> Result<()> {
    const ALICE: &str = "alice-key-0123456789abcdef";
    const BOB: &str = "bob-key-0123456789abcdef-bob";
    // Four calls a minute, counted across both replicas (in Redis): a retry
    // on B of the call A holds for Alice is that call, not another.
    let clients = client_entry("alice", ALICE, "calls_per_minute = 4") + &client_entry("bob", BOB, "");
    let Some(cluster) = mrtr_cluster(&clients).await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let (alice_a, alice_b) = (Client::with_bearer(&a.url(), ALICE)?, Client::with_bearer(&b.url(), ALICE)?);
    let bob_b = Client::with_bearer(&b.url(), BOB)?;
    // Alice's first call of four goes now, on B.
    let echoed = modern_send(&alice_b, &modern_call(1, "echo", json!({"text": "hi"}))).await?;
    ensure!(text_of(&echoed["result"]) == "hi", "{echoed}");

    let first = modern_call(2, "test_elicitation", json!({"message": "Your name?"}));
    let state = state_of(&modern_send(&alice_a, &first).await?)?;

    // B checks the state itself: another client's, or a changed one, is refused there.
    refused_for(&modern_send(&bob_b, &modern_retry(&first, 3, "Eve", &state)).await?, "another client")?;
    let text = state.as_str().context("a string")?;
    let (payload, tag) = text.split_once('.').context("two parts")?;
    let flipped = if tag.starts_with('A') { "B" } else { "A" };
    let tampered = json!(format!("{payload}.{flipped}{}", &tag[1..]));
    // Counted (it is no retry of a held call): Alice's third call.
    refused_for(&modern_send(&alice_b, &modern_retry(&first, 4, "Eve", &tampered)).await?, "integrity")?;

    // The real retry on B: passed to A, which holds the call, and answered
    // under the retry's own id. Not counted (see below).
    let asked = Instant::now();
    let done = modern_send(&alice_b, &modern_retry(&first, 5, "Ada", &state)).await?;
    eprintln!("a retry passed from B to A answered in {:?}", asked.elapsed());
    ensure!(done["id"] == 5, "{done}");
    ensure!(done["result"]["resultType"] == "complete", "{done}\nlogs:\n{}", cluster.logs());
    ensure!(text_of(&done["result"]) == r#"User response: action=accept, content={"response":"Ada"}"#, "{done}");
    ensure!(b.logs().contains("a retry passed to the replica holding its call"), "B's logs:\n{}", b.logs());
    // A logs it once its answer is sent: perhaps a moment after B got it.
    let deadline = Instant::now() + Duration::from_secs(2);
    while !a.logs().contains("a retry passed from another replica answered") {
        ensure!(Instant::now() < deadline, "A's logs:\n{}", a.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Single use across replicas: on A (where it was held) the state is
    // spent. This is Alice's fourth call: had the retry on B counted, it
    // would be her fifth, refused with -32015 before its state is read.
    refused_for(&modern_send(&alice_a, &modern_retry(&first, 6, "Eve", &state)).await?, "no longer held")?;
    // And now her four are spent, whichever replica asks.
    let fifth = modern_send(&alice_b, &modern_call(7, "echo", json!({"text": "fifth"}))).await?;
    ensure!(fifth["error"]["code"] == -32015, "{fifth}");
    Ok(())
}

#[tokio::test]
async fn a_retry_whose_replica_is_gone_gets_a_prompt_error() -> Result<()> {
    let Some(mut cluster) = mrtr_cluster("").await? else { return Ok(()) };
    let first = modern_call(1, "test_elicitation", json!({"message": "Your name?"}));
    let state = state_of(&modern_send(&Client::new(&cluster.replicas[0].url()), &first).await?)?;
    // A crashes with the call it held.
    cluster.replicas[0].sigkill().await?;
    let on_b = Client::new(&cluster.replicas[1].url());
    let asked = Instant::now();
    let answer = modern_send(&on_b, &modern_retry(&first, 2, "Ada", &state)).await?;
    eprintln!("a retry whose replica is gone answered in {:?}", asked.elapsed());
    ensure!(asked.elapsed() < Duration::from_secs(4), "answered after {:?}", asked.elapsed());
    refused_for(&answer, "no longer held")?;
    ensure!(answer["id"] == 2, "{answer}");
    // B itself is fine: a new call is held and completed there.
    let first = modern_call(3, "test_elicitation", json!({"message": "Again?"}));
    let state = state_of(&modern_send(&on_b, &first).await?)?;
    let done = modern_send(&on_b, &modern_retry(&first, 4, "Ada", &state)).await?;
    ensure!(done["result"]["resultType"] == "complete", "{done}");
    Ok(())
}

// --- notifications for a standalone stream on another replica ------------------

#[tokio::test]
async fn a_notification_produced_on_one_replica_reaches_the_get_stream_on_the_other() -> Result<()> {
    let Some(cluster) = Cluster::start_full("", &pinned_upstream(), &[]).await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let on_a = Client::connected(&a.url(), json!({})).await?;
    // A's upstream session for it holds the subscription.
    ensure!(on_a.result("resources/subscribe", json!({"uri": "test://watched-resource"})).await? == json!({}));
    // The client's GET lands on B (which adopts the session).
    let on_b = in_session(&b.url(), &on_a);
    let mut standalone = on_b.listen().await?;
    ensure!(standalone.status == StatusCode::OK, "GET on B: {}", standalone.status);
    // The upstream tells A of an update; A holds no GET stream for the session.
    let sent = on_a.call_tool("fixture_update_resource", json!({})).await?;
    ensure!(sent["structuredContent"]["sent"] == true, "{sent}");
    let sent_at = Instant::now();
    let note = standalone.next_within(Duration::from_secs(5)).await.context("nothing on B's GET stream")?;
    eprintln!("a notification from A reached B's GET stream in {:?}", sent_at.elapsed());
    ensure!(note["method"] == "notifications/resources/updated", "{note}");
    ensure!(note["params"]["uri"] == "test://watched-resource", "{note}");
    ensure!(
        b.logs().contains("a notification from another replica delivered on the standalone stream held here"),
        "B's logs:\n{}",
        b.logs()
    );
    // Once, not twice.
    ensure!(standalone.next_within(Duration::from_millis(500)).await.is_none(), "a duplicate on B's GET stream");
    Ok(())
}

// --- idle expiry and answers for a replica that is gone -------------------------

#[tokio::test]
async fn a_session_idle_past_its_timeout_is_unknown_on_both_replicas() -> Result<()> {
    let idle = [("TOOLGATE_SERVER__SESSION_IDLE_TIMEOUT", "2s")];
    let Some(cluster) = Cluster::start_full("", &upstream(), &idle).await? else { return Ok(()) };
    let [a, b] = &cluster.replicas;
    let on_a = Client::connected(&a.url(), json!({})).await?;
    let on_b = in_session(&b.url(), &on_a);
    // Both hold it now.
    ensure!(on_b.post(&ping()).await?.status == StatusCode::OK);
    ensure!(on_a.post(&ping()).await?.status == StatusCode::OK);
    // Idle past the timeout (and the second a refresh may lag).
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for c in [&on_a, &on_b] {
        let reply = c.post(&ping()).await?;
        ensure!(reply.status == StatusCode::NOT_FOUND, "{reply:?}\nlogs:\n{}", cluster.logs());
        ensure!(error_code(&reply) == Some(-32001), "{reply:?}");
    }
    Ok(())
}

#[tokio::test]
async fn an_answer_for_a_replica_that_is_gone_is_dropped_and_the_session_goes_on() -> Result<()> {
    let Some(mut cluster) = Cluster::start().await? else { return Ok(()) };
    let (a_url, b_url) = (cluster.replicas[0].url(), cluster.replicas[1].url());
    let (on_b, _stream, request) = sampling_asked(&a_url, &b_url, "test_sampling,echo", "orphan").await?;
    // A crashes with the call; the client answers on B.
    cluster.replicas[0].sigkill().await?;
    let answer = json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "too late"}});
    ensure!(on_b.respond(&request["id"], answer).await? == StatusCode::ACCEPTED);
    let b = &cluster.replicas[1];
    let deadline = Instant::now() + Duration::from_secs(5);
    while !b.logs().contains("an answer for a replica that is gone dropped") {
        ensure!(Instant::now() < deadline, "B did not log the dropped answer:\n{}", b.logs());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The session goes on, on B.
    echo(&on_b, "still here").await
}
