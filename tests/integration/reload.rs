//! Hot reload against the real binary: the configuration file changes (or
//! SIGHUP arrives) under a live Streamable HTTP session: upstreams added
//! and removed, an invalid edit, a client's policy changed.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::common::*;

/// How long a reload (and the start of an added upstream) may take on a
/// loaded machine.
const WITHIN: Duration = Duration::from_secs(30);

const SERVER: &str = "[server]\nlisten = \"127.0.0.1:0\"\n";

/// Replaces the file as editors do: a new file renamed over the old one.
fn replace_file(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("toml.new");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).map(str::to_owned).collect()
}

/// Waits for a message with `method` on the session's GET stream.
async fn wait_notification(stream: &mut MessageStream, method: &str) -> Result<Value> {
    let deadline = tokio::time::Instant::now() + WITHIN;
    while let Some(message) = stream.next_within(deadline - tokio::time::Instant::now()).await {
        if message["method"] == method {
            return Ok(message);
        }
    }
    bail!("no {method} within {WITHIN:?}")
}

/// Lists tools until `ready` holds for the names.
async fn tools_until(c: &Client, ready: impl Fn(&[String]) -> bool) -> Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let names = tool_names(&c.result("tools/list", json!({})).await?);
        if ready(&names) {
            return Ok(names);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the tool list never settled: {names:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits for a log line that holds every one of `needles`.
async fn wait_line(gw: &Toolgate, needles: &[&str]) -> Result<String> {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let logs = gw.logs();
        if let Some(line) = logs.lines().find(|l| needles.iter().all(|n| l.contains(n))) {
            return Ok(line.to_owned());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("no log line with {needles:?}; logs:\n{logs}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn whoami(c: &Client, tool: &str) -> Result<Value> {
    let result = c.call_tool(tool, json!({})).await?;
    let pid = result["structuredContent"]["pid"].clone();
    if !pid.is_number() {
        bail!("{tool} failed: {result}");
    }
    Ok(pid)
}

#[tokio::test]
async fn a_reload_adds_and_removes_upstreams_under_a_live_session() -> Result<()> {
    // `keep` runs a child per session: the session's child must survive.
    let keep = fixture_upstream("keep", &[], "mode = \"passthrough\"\nsharing = \"per_session\"");
    let gone = fixture_upstream("gone", &[], "mode = \"passthrough\"");
    let added = fixture_upstream("added", &[], "mode = \"passthrough\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{keep}{gone}")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let mut events = c.listen().await?;
    let names = tool_names(&c.result("tools/list", json!({})).await?);
    assert!(names.contains(&"keep__echo".into()) && names.contains(&"gone__echo".into()), "{names:?}");
    let child = whoami(&c, "keep__fixture_whoami").await?;
    let gone_child = whoami(&c, "gone__fixture_whoami").await?;

    replace_file(&gw.config_path, &format!("{SERVER}{keep}{added}"))?;
    gw.wait_log("configuration reloaded: upstreams added: added; upstreams removed: gone", WITHIN).await?;
    wait_notification(&mut events, "notifications/tools/list_changed").await?;

    let names = tools_until(&c, |n| n.iter().any(|t| t == "added__echo")).await?;
    assert!(!names.iter().any(|n| n.starts_with("gone__")), "the removed upstream's tools left: {names:?}");
    assert!(names.contains(&"keep__echo".into()), "{names:?}");

    // The unchanged upstream: same session, same child, no reconnect.
    assert_eq!(whoami(&c, "keep__fixture_whoami").await?, child, "the session's own child was kept");
    let echoed = c.call_tool("keep__echo", json!({"text": "still here"})).await?;
    assert_eq!(text_of(&echoed), "still here");
    // The new upstream is served to the existing session.
    whoami(&c, "added__fixture_whoami").await?;
    // The removed one is refused with an error that says why.
    let refused = c.request("tools/call", json!({"name": "gone__echo", "arguments": {"text": "x"}})).await?;
    let message = refused["error"]["message"].as_str().context("an error")?;
    assert!(message.contains("gone") && message.contains("removed"), "{refused}");
    // And its child process ended.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gone_child.as_i64().context("a pid")?)?);
    let deadline = tokio::time::Instant::now() + WITHIN;
    while nix::sys::signal::kill(pid, None).is_ok() {
        if tokio::time::Instant::now() > deadline {
            bail!("the removed upstream's process {pid} still runs");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test]
async fn an_invalid_edit_keeps_the_running_configuration_and_sighup_reloads() -> Result<()> {
    let a = fixture_upstream("a", &[], "mode = \"passthrough\"");
    let b = fixture_upstream("b", &[], "mode = \"passthrough\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{a}")).await?;
    let c = Client::connected(&gw.url, json!({})).await?;
    let before = tool_names(&c.result("tools/list", json!({})).await?);

    // An invalid file: the problem is logged with its TOML path.
    let bad = fixture_upstream("b", &[], "max_message_bytes = 10");
    replace_file(&gw.config_path, &format!("{SERVER}{a}{bad}"))?;
    gw.wait_log("reload refused; the running configuration stays", WITHIN).await?;
    let logs = gw.logs();
    let problem = logs.lines().find(|l| l.contains("invalid configuration:")).context("no problem logged")?;
    assert!(problem.contains("upstream[1].max_message_bytes") && problem.contains("ERROR"), "{problem}");
    wait_line(&gw, &["reload refused", "trigger=\"file change\""]).await?;
    assert_eq!(tool_names(&c.result("tools/list", json!({})).await?), before, "nothing changed");
    whoami(&c, "fixture_whoami").await?;

    // SIGHUP reads the file again (unchanged: refused again, by the signal).
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP)?;
    wait_line(&gw, &["reload refused", "trigger=\"SIGHUP\""]).await?;

    // A valid edit applies; SIGHUP then reloads the same file: no change.
    replace_file(&gw.config_path, &format!("{SERVER}{a}{b}"))?;
    gw.wait_log("configuration reloaded: upstreams added: b", WITHIN).await?;
    let names = tools_until(&c, |n| n.iter().any(|t| t == "b__echo")).await?;
    assert!(names.contains(&"a__echo".into()), "with two upstreams, names get prefixes: {names:?}");
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP)?;
    wait_line(&gw, &["configuration reloaded: no upstream changed", "trigger=\"SIGHUP\""]).await?;
    assert!(gw.proc.child.id().is_some(), "SIGHUP does not stop toolgate");
    whoami(&c, "a__fixture_whoami").await?;
    Ok(())
}

#[tokio::test]
async fn a_changed_client_policy_applies_to_its_running_session() -> Result<()> {
    const KEY: &str = "reload-test-key-0123456789abcdef";
    let client = |policy: &str| format!("[[auth.clients]]\nname = \"agent\"\napi_key = \"{KEY}\"\n{policy}\n");
    let a = fixture_upstream("a", &[], "mode = \"passthrough\"");
    let b = fixture_upstream("b", &[], "mode = \"passthrough\"");
    let gw = Toolgate::start_raw(&format!("{SERVER}{}{a}{b}", client(""))).await?;
    let mut c = Client::with_bearer(&gw.url, KEY)?;
    c.initialize(json!({})).await?;
    let mut events = c.listen().await?;
    let names = tool_names(&c.result("tools/list", json!({})).await?);
    assert!(names.contains(&"b__echo".into()), "{names:?}");
    whoami(&c, "b__fixture_whoami").await?;

    // The client may now use upstream `a` only.
    replace_file(&gw.config_path, &format!("{SERVER}{}{a}{b}", client("upstreams = [\"a\"]")))?;
    gw.wait_log("configuration reloaded: no upstream changed; client policies changed", WITHIN).await?;
    wait_notification(&mut events, "notifications/tools/list_changed").await?;
    let names = tool_names(&c.result("tools/list", json!({})).await?);
    assert!(!names.iter().any(|n| n.starts_with("b__")), "upstream b is hidden now: {names:?}");
    assert!(names.contains(&"a__echo".into()), "{names:?}");
    let refused = c.request("tools/call", json!({"name": "b__echo", "arguments": {"text": "x"}})).await?;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("Unknown tool")), "{refused}");
    // The same session goes on with what it may still use.
    whoami(&c, "a__fixture_whoami").await?;
    Ok(())
}

/// Makes `path` what a Kubernetes ConfigMap volume holds: a symlink through
/// `..data`, itself a symlink to a timestamped directory with the content.
fn configmap_version(path: &Path, version: &str, text: &str) -> Result<()> {
    let dir = path.parent().context("a directory")?;
    std::fs::create_dir(dir.join(version))?;
    std::fs::write(dir.join(version).join("toolgate.toml"), text)?;
    // The kubelet's atomic swap: a new symlink renamed over `..data`.
    std::os::unix::fs::symlink(version, dir.join("..data_tmp"))?;
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data"))?;
    Ok(())
}

#[tokio::test]
async fn a_configmap_symlink_swap_reloads_and_overrides_apply_to_the_session() -> Result<()> {
    let fs = |extra: &str| fixture_upstream("fs", &[], extra);
    let other = fixture_upstream("other", &[], "mode = \"passthrough\"");
    let first = format!("{SERVER}{}{other}", fs(""));
    let gw = Toolgate::start_raw(&first).await?;
    // The file becomes a ConfigMap mount with the same content (no reload).
    configmap_version(&gw.config_path, "..2026_11_23_v1", &first)?;
    let dir = gw.config_path.parent().context("a directory")?;
    std::os::unix::fs::symlink("..data/toolgate.toml", dir.join("toolgate.toml.link"))?;
    std::fs::rename(dir.join("toolgate.toml.link"), &gw.config_path)?;

    let c = Client::connected(&gw.url, json!({})).await?;
    let mut events = c.listen().await?;
    let other_child = whoami(&c, "other__fixture_whoami").await?;

    // A new ConfigMap version overrides a description of `fs`.
    let override_ = "[upstream.tools.echo]\ndescription = \"Echo, as the operator describes it\"";
    configmap_version(&gw.config_path, "..2026_11_23_v2", &format!("{SERVER}{}{other}", fs(override_)))?;
    gw.wait_log("configuration reloaded: upstreams restarted: fs", WITHIN).await?;
    wait_notification(&mut events, "notifications/tools/list_changed").await?;
    let list = c.result("tools/list", json!({})).await?;
    let echo = list["tools"].as_array().into_iter().flatten().find(|t| t["name"] == "fs__echo").context("fs__echo")?;
    assert_eq!(echo["description"], "Echo, as the operator describes it", "{echo}");
    assert_eq!(whoami(&c, "other__fixture_whoami").await?, other_child, "the unchanged upstream was kept");
    Ok(())
}
