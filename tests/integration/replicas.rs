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
    async fn start(redis_url: &str, extra: &str, env: &[(&str, &str)]) -> Result<Replica> {
        let port = free_port();
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[state]\nredis_url = \"{redis_url}\"\n{extra}\n{}",
            upstream()
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
        let Some(redis) = RedisServer::start() else { return Ok(None) };
        let a = Replica::start(&redis.url(), extra, &[]).await?;
        let b = Replica::start(&redis.url(), extra, &[]).await?;
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
    let on_a = Client::connected(&a.url(), json!({"sampling": {}})).await?;
    let on_b = in_session(&b.url(), &on_a);
    on_a.read_descriptions("test_sampling").await?;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "across"}}});
    let mut stream = on_a.open(&call).await?;
    let request = stream.next().await?;
    ensure!(request["method"] == "sampling/createMessage", "{request}");
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
