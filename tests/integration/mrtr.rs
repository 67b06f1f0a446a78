//! Multi-round-trip translation for a 2026-07-28 client in front of a
//! handshake-era upstream: the fixture, pinned to `protocol = "2025-11-25"`
//! over stdio and over Streamable HTTP, asks for elicitation, sampling or
//! roots mid-call; toolgate holds the call, answers the raw 2026 client with
//! an `InputRequiredResult`, and completes the held call with the answers of
//! the client's retry. Also: tampered, replayed, expired and foreign states,
//! undeclared capabilities, the gate on retries, the hold cap, and a 2025
//! client of the same upstream, which still gets ordinary requests.

use std::time::Duration;

use anyhow::Result;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::*;

/// The fixture as a handshake-era upstream, without the gate (one request
/// is the whole call).
const PINNED: &str = "protocol = \"2025-11-25\"\nmode = \"passthrough\"\nforward_roots = true";

#[derive(Clone, Copy, Debug)]
enum Leg {
    Stdio,
    Http,
}

/// toolgate in front of the fixture over `leg`, with `extra` in its
/// `[[upstream]]` and `sections` at the top. The fixture logs at debug, so
/// its cancellations show (over stdio in toolgate's log, over HTTP in its own).
async fn gateway(leg: Leg, extra: &str, sections: &str) -> Result<(Toolgate, Option<Proc>)> {
    match leg {
        Leg::Stdio => {
            let extra = format!("{PINNED}\n{extra}\nenv = {{ RUST_LOG = \"debug\" }}");
            Ok((Toolgate::start_with(&fixture_upstream("fx", &[], &extra), sections).await?, None))
        }
        Leg::Http => {
            let (fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
            let extra = format!("{PINNED}\n{extra}");
            Ok((Toolgate::start_with(&http_upstream("fx", &url, &extra), sections).await?, Some(fixture)))
        }
    }
}

/// A 2026 `tools/call` of `tool` with `arguments`, from a client that
/// declares `caps`.
fn call(id: i64, tool: &str, arguments: Value, caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool,
        "arguments": arguments,
        "_meta": toolgate_test_support::modern::envelope("mrtr-test", caps),
    }})
}

/// The retry of `first` under a new id, with `responses` and `state`.
fn retry(first: &Value, id: i64, responses: Value, state: &Value) -> Value {
    let mut again = first.clone();
    again["id"] = json!(id);
    again["params"]["inputResponses"] = responses;
    again["params"]["requestState"] = state.clone();
    again
}

/// POSTs a 2026 request and returns its response message.
async fn post(c: &Client, body: &Value) -> Result<Value> {
    let name = body["params"]["name"].as_str().unwrap_or_default();
    let reply = c.send(modern_post(c, body, Some(name))).await?;
    assert!(reply.status == StatusCode::OK || reply.status == StatusCode::BAD_REQUEST, "{reply:?}");
    assert!(reply.related().iter().all(|m| m.get("id").is_none()), "no request on a 2026 response stream: {reply:?}");
    Ok(reply.response(&body["id"]).cloned().unwrap_or_else(|| panic!("no answer to {body}: {reply:?}")))
}

/// The `InputRequiredResult` in `answer`: its requests and its state.
fn input_required(answer: &Value) -> (serde_json::Map<String, Value>, Value) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let requests = result["inputRequests"].as_object().cloned().unwrap_or_else(|| panic!("{answer}"));
    assert!(result["requestState"].is_string(), "{answer}");
    (requests, result["requestState"].clone())
}

fn complete_text(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    text_of(&answer["result"]).to_owned()
}

fn refused_state(answer: &Value) {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["error"]["message"], "invalid or expired requestState", "{answer}");
}

fn accept(field: &str, value: &str) -> Value {
    json!({"action": "accept", "content": {field: value}})
}

#[tokio::test]
async fn an_elicitation_round_trip_completes_and_the_state_is_single_use() -> Result<()> {
    for leg in [Leg::Stdio, Leg::Http] {
        let (gw, _fixture) = gateway(leg, "", "").await?;
        let c = gw.client();
        let first = call(1, "test_elicitation", json!({"message": "Your name?"}), json!({"elicitation": {}}));
        let (requests, state) = input_required(&post(&c, &first).await?);
        assert_eq!(requests.len(), 1, "{leg:?}: {requests:?}");
        let (key, request) = requests.iter().next().expect("one");
        assert_eq!(request["method"], "elicitation/create", "{leg:?}");
        assert_eq!(request["params"]["message"], "Your name?", "{leg:?}");
        assert!(request.get("id").is_none() && request.get("jsonrpc").is_none(), "an InputRequest has no id");

        let answered = retry(&first, 2, json!({key: accept("response", "Ada")}), &state);
        let text = complete_text(&post(&c, &answered).await?);
        assert_eq!(text, r#"User response: action=accept, content={"response":"Ada"}"#, "{leg:?}");

        // Used once: the same state again is refused, and nothing runs.
        let replayed = retry(&first, 3, json!({key: accept("response", "Eve")}), &state);
        refused_state(&post(&c, &replayed).await?);
    }
    Ok(())
}

#[tokio::test]
async fn two_rounds_then_sampling_and_roots() -> Result<()> {
    for leg in [Leg::Stdio, Leg::Http] {
        let (gw, _fixture) = gateway(leg, "", "").await?;
        let c = gw.client();
        let first = call(1, "test_input_required_result_multi_round", json!({}), json!({"elicitation": {}}));
        let (requests, state) = input_required(&post(&c, &first).await?);
        assert_eq!(requests["r1"]["params"]["message"], "Step 1: What is your name?", "{leg:?}");
        let (requests, state) =
            input_required(&post(&c, &retry(&first, 2, json!({"r1": accept("name", "Ada")}), &state)).await?);
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["r2"], "{leg:?}: only the new question");
        assert_eq!(requests["r2"]["params"]["message"], "Step 2: What is your favorite color?");
        let done = post(&c, &retry(&first, 3, json!({"r2": accept("color", "teal")}), &state)).await?;
        assert_eq!(complete_text(&done), "Multi-round complete for Ada who likes teal", "{leg:?}");

        let first = call(4, "test_sampling", json!({"prompt": "2+2?"}), json!({"sampling": {}}));
        let (requests, state) = input_required(&post(&c, &first).await?);
        assert_eq!(requests["r1"]["method"], "sampling/createMessage");
        assert_eq!(requests["r1"]["params"]["messages"][0]["content"]["text"], "2+2?");
        let answer = json!({"r1": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}});
        assert_eq!(complete_text(&post(&c, &retry(&first, 5, answer, &state)).await?), "LLM response: 4");

        let first = call(6, "fixture_roots", json!({}), json!({"roots": {}}));
        let (requests, state) = input_required(&post(&c, &first).await?);
        assert_eq!(requests["r1"]["method"], "roots/list");
        let roots = json!({"r1": {"roots": [{"uri": "file:///work/project", "name": "project"}]}});
        let done = post(&c, &retry(&first, 7, roots, &state)).await?;
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(done["result"]["structuredContent"]["result"]["roots"][0]["uri"], "file:///work/project");
    }
    Ok(())
}

#[tokio::test]
async fn tampered_foreign_and_malformed_retries_are_refused_and_the_call_stays_held() -> Result<()> {
    let (gw, _fixture) = gateway(Leg::Stdio, "", "").await?;
    let c = gw.client();
    let first = call(1, "test_elicitation", json!({"message": "Pick"}), json!({"elicitation": {}}));
    let (_, state) = input_required(&post(&c, &first).await?);
    let token = state.as_str().expect("string").to_owned();

    let mut bytes = token.clone().into_bytes();
    let at = bytes.len() / 3;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let tampered = json!(String::from_utf8(bytes)?);
    refused_state(&post(&c, &retry(&first, 2, json!({"r1": accept("response", "x")}), &tampered)).await?);
    refused_state(&post(&c, &retry(&first, 3, json!({"r1": accept("response", "x")}), &json!("not-a-state"))).await?);

    // The state is bound to the call's arguments and tool.
    let mut other_args = retry(&first, 4, json!({"r1": accept("response", "x")}), &state);
    other_args["params"]["arguments"]["message"] = json!("Something else");
    refused_state(&post(&c, &other_args).await?);

    let malformed = post(&c, &retry(&first, 5, json!("yes"), &state)).await?;
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
    assert!(malformed["error"]["message"].as_str().unwrap_or_default().contains("inputResponses"), "{malformed}");

    // None of that consumed the state. A retry that leaves the question
    // unanswered (unknown keys are ignored) is asked it again, under a new state.
    let (requests, again) = input_required(&post(&c, &retry(&first, 6, json!({"zz": {}}), &state)).await?);
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["r1"]);
    assert_ne!(again, state);
    refused_state(&post(&c, &retry(&first, 7, json!({"r1": accept("response", "x")}), &state)).await?);
    let done = post(&c, &retry(&first, 8, json!({"r1": accept("response", "Bo")}), &again)).await?;
    assert!(complete_text(&done).contains(r#"{"response":"Bo"}"#), "{done}");
    Ok(())
}

#[tokio::test]
async fn an_expired_hold_cancels_the_upstream_call_and_a_late_retry_is_refused() -> Result<()> {
    for leg in [Leg::Stdio, Leg::Http] {
        let (gw, fixture) = gateway(leg, "", "[mrtr]\nhold_timeout = \"1s\"\n").await?;
        let c = gw.client();
        let first = call(1, "test_elicitation", json!({"message": "Wait"}), json!({"elicitation": {}}));
        let (_, state) = input_required(&post(&c, &first).await?);
        gw.wait_log("a held call ended unanswered: cancelling its upstream call", Duration::from_secs(20)).await?;
        if fixture.is_none() {
            // The fixture heard the cancellation while its tool still waited.
            gw.wait_log("client cancelled a request", Duration::from_secs(20)).await?;
        }
        let late = retry(&first, 2, json!({"r1": accept("response", "late")}), &state);
        refused_state(&post(&c, &late).await?);
        // The upstream is free for the next call.
        let again = call(3, "test_elicitation", json!({"message": "Again"}), json!({"elicitation": {}}));
        let (_, state) = input_required(&post(&c, &again).await?);
        let done = post(&c, &retry(&again, 4, json!({"r1": accept("response", "ok")}), &state)).await?;
        assert!(complete_text(&done).contains("action=accept"), "{leg:?}: {done}");
    }
    Ok(())
}

#[tokio::test]
async fn an_undeclared_capability_is_refused_upstream_and_never_asked() -> Result<()> {
    for leg in [Leg::Stdio, Leg::Http] {
        let (gw, _fixture) = gateway(leg, "", "").await?;
        let c = gw.client();
        let answer = post(&c, &call(1, "test_elicitation", json!({"message": "Hi"}), json!({"sampling": {}}))).await?;
        let text = complete_text(&answer);
        assert!(text.starts_with("Elicitation not supported or error:"), "{leg:?}: {text}");
        assert!(text.contains("did not declare support for elicitation/create"), "{leg:?}: {text}");
    }
    Ok(())
}

#[tokio::test]
async fn the_hold_cap_refuses_more_held_calls_with_a_limit_error() -> Result<()> {
    let (gw, _fixture) = gateway(Leg::Http, "", "[mrtr]\nmax_held_per_client = 1\n").await?;
    let c = gw.client();
    let first = call(1, "test_elicitation", json!({"message": "One"}), json!({"elicitation": {}}));
    let (_, state) = input_required(&post(&c, &first).await?);
    let second = post(&c, &call(2, "test_elicitation", json!({"message": "Two"}), json!({"elicitation": {}}))).await?;
    assert_eq!(second["error"]["code"], -32014, "{second}");
    assert!(second["error"]["message"].as_str().unwrap_or_default().contains("for this client"), "{second}");
    // The first is unaffected, and once answered makes room again.
    let done = post(&c, &retry(&first, 3, json!({"r1": accept("response", "one")}), &state)).await?;
    assert!(complete_text(&done).contains("one"));
    let third = call(4, "test_elicitation", json!({"message": "Three"}), json!({"elicitation": {}}));
    input_required(&post(&c, &third).await?);
    Ok(())
}

#[tokio::test]
async fn the_gate_admits_the_retry_of_a_granted_call() -> Result<()> {
    let (fixture, url) = start_http_server(fixture_exe(), &["--http", "127.0.0.1:0"]).await?;
    let gw = Toolgate::start(&http_upstream("fx", &url, "protocol = \"2025-11-25\"")).await?;
    let c = gw.client();
    let uri = "resource:///tool_descriptions?tools=test_elicitation";
    let read = modern_body("mrtr-test", json!(1), "resources/read", json!({"uri": uri}));
    let send = modern_post(&c, &read, Some(uri));
    // The gate is on: refused before the description is fetched.
    let early = post(&c, &call(1, "test_elicitation", json!({"message": "Early"}), json!({"elicitation": {}}))).await?;
    assert_eq!(json_of(&early["result"])["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{early}");
    assert_eq!(c.send(send).await?.status, StatusCode::OK);
    let first = call(2, "test_elicitation", json!({"message": "Gate"}), json!({"elicitation": {}}));
    let (_, state) = input_required(&post(&c, &first).await?);
    let done = post(&c, &retry(&first, 3, json!({"r1": accept("response", "through")}), &state)).await?;
    assert!(complete_text(&done).contains("through"), "{done}");
    drop(fixture);
    Ok(())
}

#[tokio::test]
async fn a_2025_client_of_the_same_upstream_still_gets_ordinary_requests() -> Result<()> {
    let (gw, _fixture) = gateway(Leg::Http, "", "").await?;
    // A held call of a 2026 client beside it.
    let modern = gw.client();
    let first = call(1, "test_elicitation", json!({"message": "Modern"}), json!({"elicitation": {}}));
    let (_, state) = input_required(&post(&modern, &first).await?);

    let legacy = Client::connected(&gw.url, json!({"elicitation": {}})).await?;
    let mut stream = legacy
        .open(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "test_elicitation", "arguments": {"message": "Legacy"}}}))
        .await?;
    let request = stream.next().await?;
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Legacy");
    legacy.respond(&request["id"], accept("response", "old")).await?;
    let response = stream.next().await?;
    assert!(text_of(&response["result"]).contains(r#"{"response":"old"}"#), "{response}");
    assert!(response["result"].get("resultType").is_none(), "a 2025 result");

    let done = post(&modern, &retry(&first, 2, json!({"r1": accept("response", "new")}), &state)).await?;
    assert!(complete_text(&done).contains(r#"{"response":"new"}"#), "{done}");
    Ok(())
}

#[tokio::test]
async fn a_retry_is_not_counted_again_and_another_client_cannot_use_the_state() -> Result<()> {
    const ALICE: &str = "mrtr-alice-0123456789abcdef";
    const BOB: &str = "mrtr-bob-0123456789abcdef01";
    let auth = client_entry("alice", ALICE, "calls_per_minute = 1") + &client_entry("bob", BOB, "");
    let (gw, _fixture) = gateway(Leg::Http, "", &auth).await?;
    let (alice, bob) = (Client::with_bearer(&gw.url, ALICE)?, Client::with_bearer(&gw.url, BOB)?);
    let first = call(1, "test_elicitation", json!({"message": "Whose?"}), json!({"elicitation": {}}));
    let (_, state) = input_required(&post(&alice, &first).await?);
    // Bob holds the same request and the state, but it was issued to Alice.
    let stolen = post(&bob, &retry(&first, 2, json!({"r1": accept("response", "bob")}), &state)).await?;
    refused_state(&stolen);
    assert_eq!(stolen["error"]["data"]["reason"], "it was issued to another client", "{stolen}");
    // Alice's one call a minute was spent on the first round; the retry is the same call.
    let done = post(&alice, &retry(&first, 3, json!({"r1": accept("response", "alice")}), &state)).await?;
    assert!(complete_text(&done).contains(r#"{"response":"alice"}"#), "{done}");
    let next =
        post(&alice, &call(4, "test_elicitation", json!({"message": "More"}), json!({"elicitation": {}}))).await?;
    assert_eq!(next["error"]["code"], -32015, "a new call is counted: {next}");
    Ok(())
}

#[tokio::test]
async fn the_python_sdk_in_2026_mode_completes_elicitation_and_sampling_through_toolgate() -> Result<()> {
    let (gw, _fixture) = gateway(Leg::Stdio, "", "").await?;
    let steps = json!([
        {"op": "call_tool", "name": "test_elicitation", "arguments": {"message": "Your name?"}},
        {"op": "call_tool", "name": "test_sampling", "arguments": {"prompt": "hello"}},
    ]);
    let args = ["--mode", MODERN, "--elicit", r#"{"response": "Ada"}"#];
    let report = client_probe(&gw.url, &args, &steps).await?;
    assert_eq!(report["mode_used"], "modern", "{report}");
    let step = &report["steps"][0];
    assert_eq!(step["ok"], true, "{report}");
    assert_eq!(text_of(&step["result"]), r#"User response: action=accept, content={"response":"Ada"}"#, "{report}");
    assert_eq!(report["elicitation_requests"][0]["message"], "Your name?", "{report}");
    let step = &report["steps"][1];
    assert_eq!(text_of(&step["result"]), "LLM response: sampled: hello", "{report}");
    assert_eq!(report["sampling_requests"].as_array().map(Vec::len), Some(1), "{report}");
    Ok(())
}

#[tokio::test]
async fn requests_sent_together_are_asked_together_and_missing_answers_are_asked_again() -> Result<()> {
    for leg in [Leg::Stdio, Leg::Http] {
        let (gw, _fixture) = gateway(leg, "", "").await?;
        let c = gw.client();
        let caps = json!({"elicitation": {}, "sampling": {}});
        let first = call(1, "fixture_ask_together", json!({"message": "Name?", "prompt": "Hi"}), caps);
        let (requests, state) = input_required(&post(&c, &first).await?);
        let key_of = |requests: &serde_json::Map<String, Value>, method: &str| {
            requests.iter().find(|(_, r)| r["method"] == method).map(|(k, _)| k.clone())
        };
        let elicit = key_of(&requests, "elicitation/create").unwrap_or_else(|| panic!("{leg:?}: {requests:?}"));
        let sample = key_of(&requests, "sampling/createMessage").unwrap_or_else(|| panic!("{leg:?}: {requests:?}"));
        assert_eq!(requests.len(), 2, "{leg:?}: one round for both");

        // Only one answered: the other is asked again, alone.
        let (again, state) =
            input_required(&post(&c, &retry(&first, 2, json!({&elicit: accept("name", "Ada")}), &state)).await?);
        assert_eq!(again.keys().collect::<Vec<_>>(), [&sample], "{leg:?}");
        let answer = json!({&sample: {"role": "assistant", "content": {"type": "text", "text": "Hey"}, "model": "m"}});
        let done = post(&c, &retry(&first, 3, answer, &state)).await?;
        let both = &done["result"]["structuredContent"];
        assert_eq!(both["elicitation"]["content"]["name"], "Ada", "{leg:?}: {done}");
        assert_eq!(both["sampling"]["content"]["text"], "Hey", "{leg:?}: {done}");

        // A client that declares only sampling is asked only that.
        let first = call(4, "fixture_ask_together", json!({}), json!({"sampling": {}}));
        let (requests, state) = input_required(&post(&c, &first).await?);
        assert_eq!(requests.len(), 1, "{leg:?}: {requests:?}");
        assert_eq!(requests["r1"]["method"], "sampling/createMessage");
        let answer = json!({"r1": {"role": "assistant", "content": {"type": "text", "text": "Yo"}, "model": "m"}});
        let done = post(&c, &retry(&first, 5, answer, &state)).await?;
        let both = &done["result"]["structuredContent"];
        assert_eq!(both["sampling"]["content"]["text"], "Yo", "{leg:?}: {done}");
        let refused = both["elicitation"]["error"].as_str().unwrap_or_default();
        assert!(refused.contains("did not declare support for elicitation/create"), "{leg:?}: {done}");
    }
    Ok(())
}

#[tokio::test]
async fn over_stdio_a_call_held_between_rounds_does_not_block_another() -> Result<()> {
    // Nothing on a stdio wire names the call an upstream request belongs
    // to: a call held between rounds (its client gone quiet) must not make
    // the next call's requests ambiguous.
    let (gw, _fixture) = gateway(Leg::Stdio, "", "").await?;
    let c = gw.client();
    let quiet = call(1, "test_elicitation", json!({"message": "Abandoned"}), json!({"elicitation": {}}));
    input_required(&post(&c, &quiet).await?);
    let next = call(2, "test_sampling", json!({"prompt": "still there?"}), json!({"sampling": {}}));
    let (requests, state) = input_required(&post(&c, &next).await?);
    assert_eq!(requests["r1"]["method"], "sampling/createMessage");
    let answer = json!({"r1": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}});
    assert_eq!(complete_text(&post(&c, &retry(&next, 3, answer, &state)).await?), "LLM response: yes");
    Ok(())
}

#[tokio::test]
async fn held_calls_end_with_toolgate() -> Result<()> {
    let (mut gw, _fixture) = gateway(Leg::Stdio, "", "").await?;
    let c = gw.client();
    let first = call(1, "test_elicitation", json!({"message": "Bye"}), json!({"elicitation": {}}));
    input_required(&post(&c, &first).await?);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(gw.proc.pid())?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
    let status = tokio::time::timeout(Duration::from_secs(20), gw.proc.child.wait()).await??;
    assert!(status.success(), "{status}");
    let logs = gw.logs();
    assert!(logs.contains("a held call ended unanswered: cancelling its upstream call"), "{logs}");
    Ok(())
}
