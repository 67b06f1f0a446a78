// Client side of the 0.2.0 conformance suite (2026-07-28), through toolgate.
//
//   conformance-next client --command "<node22> tests/conformance/client-wrapper-2026.mjs" \
//       --scenario <s> --spec-version 2026-07-28
//
// The suite starts its scenario's mock *server* and appends its URL as our
// last argument (MCP_CONFORMANCE_SCENARIO names the scenario,
// MCP_CONFORMANCE_CONTEXT carries the calls of http-custom-headers). We start
// toolgate (passthrough) with that URL as its only upstream and drive, as a
// 2026-07-28 downstream client of toolgate, the requests the scenario
// expects to see. What the suite grades is toolgate's *upstream* leg: the
// envelope and headers it sends (request-metadata, http-standard-headers,
// http-custom-headers), the catalog it keeps (http-invalid-tool-headers,
// json-schema-ref-no-deref) and how it relays multi-round-trip results
// (sep-2322-client-request-state).
//
// The downstream client is, by TOOLGATE_DOWNSTREAM_ERA:
// - "2025" (default): the MCP TypeScript SDK 1.x, a session-era client, so
//   toolgate translates: it drives multi-round-trip results itself, asking
//   us with elicitation/sampling/roots requests over the session;
// - "2026": plain fetch calls with the 2026 envelope (toolgate then relays
//   InputRequiredResults and our retries), which needs toolgate to serve
//   2026-07-28 downstream.
//
// Environment: TOOLGATE_BIN (required) is the toolgate binary.
// Exit code 0 when the scenario's traffic went through and the answers were
// right; non-zero otherwise (the suite counts that as a failure).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ResultSchema,
} from "@modelcontextprotocol/sdk/types.js";

import { startToolgate } from "./start-toolgate.mjs";

const VERSION = "2026-07-28";
const upstreamUrl = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const toolgateBin = process.env.TOOLGATE_BIN;
const era = process.env.TOOLGATE_DOWNSTREAM_ERA ?? "2025";

function log(...parts) {
  console.error("[client-wrapper-2026]", ...parts);
}

function fail(message) {
  throw new Error(message);
}

/** A 2026-07-28 client of toolgate at `url`. */
class Downstream {
  constructor(url, capabilities = {}) {
    this.url = url;
    this.capabilities = capabilities;
    this.nextId = 1;
  }

  /** Sends one request; resolves to the JSON-RPC response (result or error). */
  async rpc(method, params = {}) {
    const id = this.nextId++;
    const meta = {
      "io.modelcontextprotocol/protocolVersion": VERSION,
      "io.modelcontextprotocol/clientInfo": { name: "toolgate-conformance-client", version: "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": this.capabilities,
      ...(params._meta ?? {}),
    };
    const body = { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } };
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": VERSION,
      "mcp-method": method,
    };
    const name = params.name ?? params.uri;
    if (typeof name === "string" && ["tools/call", "prompts/get", "resources/read"].includes(method)) {
      headers["mcp-name"] = name;
    }
    const res = await fetch(this.url, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    const messages = type.includes("text/event-stream")
      ? text
          .split(/\r?\n/)
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trim())
          .filter((d) => d.length > 0)
          .map((d) => JSON.parse(d))
      : text.trim()
        ? [JSON.parse(text)]
        : [];
    const response = messages.find((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
    if (!response) fail(`${method}: HTTP ${res.status}, no response with id ${id}: ${text.slice(0, 500)}`);
    log(`${method}${typeof name === "string" ? ` ${name}` : ""} -> HTTP ${res.status}`, JSON.stringify(response).slice(0, 300));
    return response;
  }

  async result(method, params = {}) {
    const response = await this.rpc(method, params);
    if (response.error) fail(`${method} failed: ${JSON.stringify(response.error)}`);
    return response.result;
  }

  async tools() {
    return (await this.result("tools/list")).tools ?? [];
  }

  async call(name, args = {}, extra = {}) {
    return this.result("tools/call", { name, arguments: args, ...extra });
  }
}

/** A session-era client of toolgate (the TypeScript SDK 1.x), with the same
 * interface as {@link Downstream}. It answers toolgate's elicitation,
 * sampling and roots requests: accept with a value per requested field. */
class Downstream2025 {
  static async connect(url) {
    const self = new Downstream2025();
    self.client = new Client(
      { name: "toolgate-conformance-client", version: "1.0.0" },
      { capabilities: { elicitation: {}, sampling: {}, roots: {} } },
    );
    self.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      log("elicitation/create reached the client:", JSON.stringify(request.params).slice(0, 200));
      return answerForm(request);
    });
    self.client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: "assistant",
      content: { type: "text", text: "yes" },
      model: "toolgate-conformance",
      stopReason: "endTurn",
    }));
    self.client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///test/root", name: "Test Root" }] }));
    await self.client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return self;
  }

  async rpc(method, params = {}) {
    try {
      return { result: await this.result(method, params) };
    } catch (e) {
      log(`${method} failed:`, e.message);
      return { error: { message: e.message } };
    }
  }

  async result(method, params = {}) {
    const result = await this.client.request({ method, params }, ResultSchema);
    log(`${method}${params.name ?? params.uri ? ` ${params.name ?? params.uri}` : ""} ->`, JSON.stringify(result).slice(0, 300));
    return result;
  }

  async tools() {
    return (await this.result("tools/list")).tools ?? [];
  }

  async call(name, args = {}) {
    return this.result("tools/call", { name, arguments: args });
  }

  async close() {
    await this.client.close();
  }
}

/** Accepts a form elicitation with a value for each requested field. */
function answerForm(request) {
  const props = request?.params?.requestedSchema?.properties ?? {};
  const content = Object.fromEntries(Object.entries(props).map(([k, p]) => [k, p.type === "boolean" ? true : "yes"]));
  return { action: "accept", content };
}

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

function listed(tools, name) {
  const tool = tools.find((t) => t.name === name);
  if (!tool) fail(`toolgate does not list ${name}; it lists ${JSON.stringify(tools.map((t) => t.name))}`);
  return tool;
}

/** What each scenario needs from a client; throws on a wrong answer. */
const scenarios = {
  // The mock checks envelope and headers, then answers add_numbers.
  async tools_call(c) {
    listed(await c.tools(), "add_numbers");
    const result = await c.call("add_numbers", { a: 5, b: 3 });
    if (result.isError || textOf(result) !== "The sum of 5 and 3 is 8") fail(`unexpected result: ${JSON.stringify(result)}`);
  },

  // The mock refuses the first request with -32022, then answers anything;
  // it grades every request toolgate sends it.
  async "request-metadata"(c) {
    await c.tools();
    await c.call("anything", {}).catch((e) => log("tools/call of an unlisted tool:", e.message));
  },

  // Mcp-Method and Mcp-Name on each method that carries a name.
  async "http-standard-headers"(c) {
    listed(await c.tools(), "test_headers");
    await c.call("test_headers", {});
    await c.call("my-hyphenated-tool", {});
    const resources = (await c.result("resources/list")).resources ?? [];
    for (const r of resources) await c.result("resources/read", { uri: r.uri });
    await c.result("prompts/list");
    await c.result("prompts/get", { name: "test_prompt", arguments: {} });
  },

  // Mcp-Param-* from x-mcp-header, for the calls the scenario names.
  async "http-custom-headers"(c) {
    const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
    const tools = await c.tools();
    for (const call of context.toolCalls ?? []) {
      listed(tools, call.name);
      await c.call(call.name, call.arguments ?? {});
    }
  },

  // Tools with invalid x-mcp-header annotations must not be listed; the
  // valid one must be, and is called.
  async "http-invalid-tool-headers"(c) {
    const tools = await c.tools();
    listed(tools, "valid_tool");
    for (const tool of tools) {
      await c.rpc("tools/call", { name: tool.name, arguments: { region: "us-west1" } });
    }
  },

  // The $ref to the canary URL must reach us untouched (and never be fetched).
  async "json-schema-ref-no-deref"(c) {
    const tool = listed(await c.tools(), "lookup_user");
    const ref = tool.inputSchema?.properties?.profile?.$ref;
    if (typeof ref !== "string" || !ref.includes("/canary/")) fail(`lookup_user's $ref changed: ${JSON.stringify(tool.inputSchema)}`);
  },

  // A 2026 client in front of a 2026 upstream: toolgate relays the
  // InputRequiredResult and our retry (with the state byte for byte).
  async "sep-2322-client-request-state"(c) {
    const tools = await c.tools();
    for (const name of ["test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"]) {
      listed(tools, name);
    }
    if (c instanceof Downstream2025) {
      // toolgate drives the rounds, asking us over the session.
      for (const name of ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"]) {
        const result = await c.call(name);
        if (result.resultType === "input_required") fail(`${name}: an InputRequiredResult reached a 2025 client: ${JSON.stringify(result)}`);
      }
      return;
    }
    const answers = (result) =>
      Object.fromEntries(Object.entries(result.inputRequests ?? {}).map(([k, r]) => [k, answerForm(r)]));

    const first = await c.call("test_mrtr_echo_state");
    if (first.resultType !== "input_required" || typeof first.requestState !== "string") {
      fail(`test_mrtr_echo_state: expected an InputRequiredResult with requestState: ${JSON.stringify(first)}`);
    }
    // Another tool between the rounds carries nothing of the first.
    await c.call("test_mrtr_unrelated");
    const done = await c.call("test_mrtr_echo_state", {}, { inputResponses: answers(first), requestState: first.requestState });
    if (done.resultType === "input_required") fail(`test_mrtr_echo_state retry not complete: ${JSON.stringify(done)}`);

    const noState = await c.call("test_mrtr_no_state");
    if (noState.resultType !== "input_required") fail(`test_mrtr_no_state: ${JSON.stringify(noState)}`);
    await c.call("test_mrtr_no_state", {}, { inputResponses: answers(noState) });

    const plain = await c.call("test_mrtr_no_result_type");
    if (plain.resultType !== undefined && plain.resultType !== "complete") {
      fail(`test_mrtr_no_result_type: a result without resultType is complete, got ${JSON.stringify(plain)}`);
    }
  },
};

async function main() {
  if (!toolgateBin) fail("TOOLGATE_BIN is not set");
  const run = scenarios[scenario];
  if (!run) fail(`no client behaviour for scenario ${JSON.stringify(scenario)}; known: ${Object.keys(scenarios).join(", ")}`);
  log(`scenario ${scenario}: toolgate in front of ${upstreamUrl}`);
  const toolgate = await startToolgate(toolgateBin, upstreamUrl);
  try {
    log(`downstream client: ${era === "2026" ? "2026-07-28 (fetch)" : "2025-11-25 (TypeScript SDK 1.x)"}`);
    const c = era === "2026" ? new Downstream(toolgate.url, { elicitation: {}, sampling: {}, roots: {} }) : await Downstream2025.connect(toolgate.url);
    await run(c);
    await c.close?.();
  } finally {
    await toolgate.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    log("FAILED:", e?.stack ?? String(e));
    process.exit(1);
  },
);
