#!/usr/bin/env node
// A scripted MCP client driven by toolgate's Rust integration tests, built on
// the official TypeScript SDK (pinned in package.json). The twin of
// tests/python/client_probe.py: same steps, same report, so the Rust tests
// judge every SDK with the same code.
//
// Usage:
//   node client_probe.mjs [--transport http|sse] --url URL [OPTIONS] SCRIPT_JSON
//   node client_probe.mjs --transport stdio --command '["prog", "arg", ...]' [OPTIONS] SCRIPT_JSON
//
//   OPTIONS: [--sdk 1|2] [--mode legacy|auto|2026-07-28] [--no-sampling] [--timeout SECONDS]
//
// SDKs:
// - `--sdk 1` (default): SDK v1, `@modelcontextprotocol/sdk`, which knows only
//   the initialize handshake (2025-11-25 and older).
// - `--sdk 2`: SDK v2, `@modelcontextprotocol/client`, with its version
//   negotiation mode from `--mode`: a version such as 2026-07-28 (the default)
//   pins that revision (`versionNegotiation: {mode: {pin}}`: the connect-time
//   `server/discover` must offer it, no fallback), `auto` probes and may fall
//   back to initialize, `legacy` runs initialize only. Needs Node >= 20. It
//   runs over http and stdio (v2's SSE transport is left out on purpose: the
//   2026 era has no legacy SSE).
//
// Transports (the SDK's own client transports):
// - http (default): Streamable HTTP to URL, e.g. http://127.0.0.1:8080/mcp.
// - sse: the legacy HTTP+SSE transport; URL is the event stream, e.g.
//   http://127.0.0.1:8080/sse.
// - stdio: launches the JSON list given with --command (program, then
//   arguments). The child gets the SDK's default environment plus TOOLGATE_LOG
//   and TOOLGATE_LOG_FORMAT when they are set; its stderr goes to ours.
//
// SCRIPT_JSON is a JSON list of steps (or `@path`, or `-` for stdin), run in
// order on one connection:
//   {"op": "list_tools"} | {"op": "list_resources"} | {"op": "list_resource_templates"}
//   {"op": "read_resource", "uri": ...}
//   {"op": "call_tool", "name": ..., "arguments": {...}, "progress": true?}
//   {"op": "list_prompts"} | {"op": "get_prompt", "name": ..., "arguments": {...}}
//   {"op": "set_logging_level", "level": ...}
//   {"op": "sync", "signal": PATH?, "wait": PATH?, "within": SECONDS?}: creates the
//     file `signal`, then waits for `wait` to exist (the test acts meanwhile)
//
// A sampling handler is installed unless --no-sampling: it answers
// sampling/createMessage with "sampled: <text of the first user message>".
//
// Output: exactly one JSON object on stdout, the Python probe's format:
//   {"negotiated_version", "server_info", "mode_used": "legacy" (this SDK
//    only knows the initialize handshake), "steps": [{"op", "ok": true,
//    "result"} | {"op", "ok": false, "error": {"code", "message", "data"?}}],
//    ("mode_used" is the v2 client's era, "modern" or "legacy", with --sdk 2)
//    "sampling_requests": [...], "notifications": [{"method", "params"}...]}
// Steps that took "progress": true also carry "progress": [{"progress",
// "total", "message"}].
//
// Exit status: 0 once connected, whatever the steps did (the test judges); 1
// when the connection could not be made (reason on stderr); 2 on bad usage.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import process from "node:process";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

// Variables the stdio child gets on top of the SDK's default environment.
const PASSED_ENV = ["TOOLGATE_LOG", "TOOLGATE_LOG_FORMAT"];

function usage(message) {
  process.stderr.write(`client_probe.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { transport: "http", sampling: true, timeout: 30, sdk: "1", mode: undefined };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    switch (a) {
      case "--transport":
        args.transport = value();
        break;
      case "--url":
        args.url = value();
        break;
      case "--command":
        args.command = value();
        break;
      case "--timeout":
        args.timeout = Number(value());
        break;
      case "--sdk":
        args.sdk = value();
        break;
      case "--mode":
        args.mode = value();
        break;
      case "--no-sampling":
        args.sampling = false;
        break;
      default:
        rest.push(a);
    }
  }
  if (rest.length !== 1) usage("expected exactly one SCRIPT_JSON argument");
  if (!["http", "sse", "stdio"].includes(args.transport)) usage(`unknown transport ${args.transport}`);
  if (!(args.timeout > 0)) usage("--timeout must be a positive number");
  if (!["1", "2"].includes(args.sdk)) usage(`unknown SDK ${args.sdk} (1 or 2)`);
  if (args.sdk === "1" && args.mode !== undefined) usage("--mode needs --sdk 2 (SDK v1 only knows initialize)");
  if (args.sdk === "2" && args.transport === "sse") usage("--sdk 2 runs over http or stdio");
  args.mode ??= "2026-07-28";
  if (args.transport === "stdio") {
    if (args.command === undefined || args.url !== undefined) usage("--transport stdio takes --command and no --url");
    let command;
    try {
      command = JSON.parse(args.command);
    } catch (e) {
      usage(`--command is not JSON: ${e.message}`);
    }
    if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === "string")) {
      usage("--command must be a non-empty JSON list of strings");
    }
    args.command = command;
  } else if (args.url === undefined || args.command !== undefined) {
    usage(`--transport ${args.transport} takes --url and no --command`);
  }
  args.script = rest[0];
  return args;
}

function loadScript(raw) {
  const text = raw === "-" ? readFileSync(0, "utf8") : raw.startsWith("@") ? readFileSync(raw.slice(1), "utf8") : raw;
  const steps = JSON.parse(text);
  if (!Array.isArray(steps) || !steps.every((s) => s && typeof s === "object" && "op" in s)) {
    throw new Error("SCRIPT_JSON must be a JSON list of objects with an 'op' field");
  }
  return steps;
}

function makeTransport(args) {
  switch (args.transport) {
    case "stdio": {
      const [command, ...rest] = args.command;
      const env = getDefaultEnvironment();
      for (const k of PASSED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
      return new StdioClientTransport({ command, args: rest, env, stderr: "inherit" });
    }
    case "sse":
      return new SSEClientTransport(new URL(args.url));
    default:
      return new StreamableHTTPClientTransport(new URL(args.url));
  }
}

/**
 * Wraps a transport to see the initialize exchange (the SDK does not expose
 * the negotiated version) without changing anything that goes over the wire.
 */
class Recording {
  constructor(inner) {
    this.inner = inner;
    this.initializeId = undefined;
    this.negotiatedVersion = null;
    inner.onmessage = (message, extra) => {
      if (this.initializeId !== undefined && message.id === this.initializeId && message.result) {
        this.negotiatedVersion = message.result.protocolVersion ?? null;
      }
      this.onmessage?.(message, extra);
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (e) => this.onerror?.(e);
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  start() {
    return this.inner.start();
  }
  send(message, options) {
    if (message.method === "initialize") this.initializeId = message.id;
    return this.inner.send(message, options);
  }
  close() {
    return this.inner.close();
  }
  setProtocolVersion(version) {
    this.inner.setProtocolVersion?.(version);
  }
}

/**
 * Runs one step. `sdk` says how the SDK generation differs: `callTool(params,
 * options)` (v1 takes a result schema in between) and `isProtocolError(e)`
 * (a JSON-RPC error answer: v1 `McpError`, v2 `ProtocolError`); `options` are
 * added to every request's options (v2: bypass the response cache so every
 * step reaches the server).
 */
async function sync(step) {
  if (step.signal) writeFileSync(step.signal, "");
  if (step.wait) {
    const deadline = Date.now() + 1000 * (step.within ?? 60);
    while (!existsSync(step.wait)) {
      if (Date.now() > deadline) throw new Error(`${step.wait} did not appear`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  return {};
}

async function runStep(client, step, timeoutMs, sdk) {
  const out = { op: step.op };
  const progress = [];
  const options = { timeout: timeoutMs, ...sdk.options };
  if (step.progress) {
    options.onprogress = (p) =>
      progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null });
  }
  try {
    let result;
    switch (step.op) {
      case "list_tools":
        result = await client.listTools(undefined, options);
        break;
      case "list_resources":
        result = await client.listResources(undefined, options);
        break;
      case "list_resource_templates":
        result = await client.listResourceTemplates(undefined, options);
        break;
      case "read_resource":
        result = await client.readResource({ uri: step.uri }, options);
        break;
      case "call_tool":
        result = await sdk.callTool({ name: step.name, arguments: step.arguments ?? {} }, options);
        break;
      case "list_prompts":
        result = await client.listPrompts(undefined, options);
        break;
      case "get_prompt":
        result = await client.getPrompt({ name: step.name, arguments: step.arguments ?? {} }, options);
        break;
      case "set_logging_level":
        result = await client.setLoggingLevel(step.level, options);
        break;
      case "sync":
        result = await sync(step);
        break;
      default:
        throw new Error(`unknown op: ${JSON.stringify(step.op)}`);
    }
    Object.assign(out, { ok: true, result });
  } catch (e) {
    if (sdk.isProtocolError(e)) {
      const error = { code: e.code, message: e.message };
      if (e.data !== undefined) error.data = e.data;
      Object.assign(out, { ok: false, error });
    } else {
      // The test judges; report instead of dying.
      Object.assign(out, { ok: false, error: { code: null, message: `${e?.name}: ${e?.message}` } });
    }
  }
  if (step.progress) out.progress = progress;
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let steps;
  try {
    steps = loadScript(args.script);
  } catch (e) {
    process.stderr.write(`client_probe.mjs: bad script: ${e.message}\n`);
    return 2;
  }
  return args.sdk === "2" ? mainV2(args, steps) : mainV1(args, steps);
}

/** Connects `client` over `transport`, or says on stderr why it could not. */
async function connect(client, transport, args) {
  const target = args.transport === "stdio" ? args.command.join(" ") : args.url;
  try {
    await client.connect(transport, { timeout: args.timeout * 1000 });
    return true;
  } catch (e) {
    process.stderr.write(`client_probe.mjs: cannot connect to ${target}: ${e?.name}: ${e?.message}\n`);
    return false;
  }
}

/** SDK v1 (`@modelcontextprotocol/sdk`): the initialize handshake. */
async function mainV1(args, steps) {
  const samplingRequests = [];
  const notifications = [];
  const client = new Client(
    { name: "toolgate-client-probe-ts", version: "1.0.0" },
    { capabilities: args.sampling ? { sampling: {} } : {} },
  );
  if (args.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      samplingRequests.push(request.params);
      return sampled(request.params);
    });
  }
  client.fallbackNotificationHandler = async (n) => {
    notifications.push({ method: n.method, params: n.params ?? {} });
  };
  client.onerror = (e) => process.stderr.write(`client_probe.mjs: transport error: ${e?.message ?? e}\n`);

  const transport = new Recording(makeTransport(args));
  if (!(await connect(client, transport, args))) return 1;
  const report = {
    negotiated_version: transport.negotiatedVersion,
    server_info: client.getServerVersion() ?? null,
    mode_used: "legacy",
    steps: [],
    sampling_requests: samplingRequests,
    notifications,
  };
  const sdk = {
    callTool: (params, options) => client.callTool(params, undefined, options),
    isProtocolError: (e) => e instanceof McpError,
    options: {},
  };
  for (const step of steps) report.steps.push(await runStep(client, step, args.timeout * 1000, sdk));
  try {
    // Streamable HTTP: end the session (DELETE) as a well-behaved client does.
    if (args.transport === "http") await transport.inner.terminateSession();
    await client.close();
  } catch (e) {
    process.stderr.write(`client_probe.mjs: error while closing: ${e?.message ?? e}\n`);
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

/**
 * SDK v2 (`@modelcontextprotocol/client`): negotiates per `--mode` (a pinned
 * revision by default). Loaded on demand, so the v1 path needs none of it.
 */
async function mainV2(args, steps) {
  const v2 = await import("@modelcontextprotocol/client");
  const stdio = await import("@modelcontextprotocol/client/stdio");
  const mode = args.mode === "legacy" || args.mode === "auto" ? args.mode : { pin: args.mode };
  const samplingRequests = [];
  const notifications = [];
  const client = new v2.Client(
    { name: "toolgate-client-probe-ts2", version: "1.0.0" },
    { capabilities: args.sampling ? { sampling: {} } : {}, versionNegotiation: { mode } },
  );
  if (args.sampling) {
    client.setRequestHandler("sampling/createMessage", async (request) => {
      samplingRequests.push(request.params);
      return sampled(request.params);
    });
  }
  client.fallbackNotificationHandler = async (n) => {
    notifications.push({ method: n.method, params: n.params ?? {} });
  };
  client.onerror = (e) => process.stderr.write(`client_probe.mjs: transport error: ${e?.message ?? e}\n`);

  let transport;
  if (args.transport === "stdio") {
    const [command, ...rest] = args.command;
    const env = stdio.getDefaultEnvironment();
    for (const k of PASSED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    transport = new stdio.StdioClientTransport({ command, args: rest, env, stderr: "inherit" });
  } else {
    transport = new v2.StreamableHTTPClientTransport(new URL(args.url));
  }
  if (!(await connect(client, transport, args))) return 1;
  const report = {
    negotiated_version: client.getNegotiatedProtocolVersion() ?? null,
    server_info: client.getServerVersion() ?? null,
    mode_used: client.getProtocolEra() ?? null,
    steps: [],
    sampling_requests: samplingRequests,
    notifications,
  };
  const sdk = {
    callTool: (params, options) => client.callTool(params, options),
    isProtocolError: (e) => e instanceof v2.ProtocolError,
    // Every step must reach the server (through the gateway), whatever ttlMs said.
    options: { cacheMode: "bypass" },
  };
  for (const step of steps) report.steps.push(await runStep(client, step, args.timeout * 1000, sdk));
  try {
    await client.close();
  } catch (e) {
    process.stderr.write(`client_probe.mjs: error while closing: ${e?.message ?? e}\n`);
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

/** The sampling answer: "sampled: <text of the first user message>". */
function sampled(params) {
  const first = params.messages.find((m) => m.role === "user");
  const blocks = first ? (Array.isArray(first.content) ? first.content : [first.content]) : [];
  const text = blocks.find((b) => b.type === "text")?.text ?? "";
  return { role: "assistant", content: { type: "text", text: `sampled: ${text}` }, model: "probe-model", stopReason: "endTurn" };
}

// Exit explicitly: a closed SSE stream or child can leave handles that keep Node alive
// (stdout is a pipe, written synchronously on Linux, so nothing is lost).
process.exit(await main());
