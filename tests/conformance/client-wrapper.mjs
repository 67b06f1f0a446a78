// Client side of the conformance suite, through toolgate.
//
//   conformance client --command "<node22> tests/conformance/client-wrapper.mjs" --scenario <s>
//
// The suite starts its scenario's test *server* and appends that server's URL
// as our last argument (MCP_CONFORMANCE_SCENARIO names the scenario). We start
// toolgate with that URL as its only upstream (Streamable HTTP, passthrough
// mode), connect to toolgate as an ordinary downstream MCP client (the
// official TypeScript SDK) and drive the scenario's traffic through it. So
// what the suite grades is toolgate's *upstream* leg: its initialize, its
// tools/call, its SSE retry + Last-Event-ID resumption, and server-to-client
// elicitation crossing the gateway.
//
// Environment: TOOLGATE_BIN (required) is the toolgate binary.
// Exit code 0 when the scenario's traffic went through and the answers were
// right; non-zero otherwise (the suite counts that as a failure).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

import { startToolgate } from "./start-toolgate.mjs";

const upstreamUrl = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const toolgateBin = process.env.TOOLGATE_BIN;

function log(...parts) {
  console.error("[client-wrapper]", ...parts);
}

function fail(message) {
  throw new Error(message);
}

/** The values a form's `default`s give (SEP-1034: the client applies them). */
function defaultsOf(schema) {
  const content = {};
  for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
    if (prop && Object.hasOwn(prop, "default")) content[key] = prop.default;
  }
  return content;
}

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

async function connect(url, capabilities) {
  const client = new Client({ name: "toolgate-conformance-client", version: "1.0.0" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

async function listedTool(client, name) {
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === name);
  if (!tool) fail(`toolgate does not list ${name}; it lists ${JSON.stringify(tools.map((t) => t.name))}`);
  return tool;
}

/** What each scenario needs from a client; throws on a wrong answer. */
const scenarios = {
  // The test server grades the initialize toolgate sends it.
  async initialize(url) {
    const { client } = await connect(url, {});
    const version = client.getServerVersion();
    log("initialized through toolgate; serverInfo:", JSON.stringify(version));
    await client.listTools();
    await client.close();
  },

  // The test server checks that add_numbers is called with numbers and
  // answers "The sum of a and b is a+b".
  async tools_call(url) {
    const { client } = await connect(url, {});
    const tool = await listedTool(client, "add_numbers");
    if (JSON.stringify(tool.inputSchema?.required) !== JSON.stringify(["a", "b"])) {
      fail(`passthrough changed add_numbers' schema: ${JSON.stringify(tool.inputSchema)}`);
    }
    const result = await client.callTool({ name: "add_numbers", arguments: { a: 5, b: 3 } });
    const text = textOf(result);
    log("add_numbers(5, 3) ->", JSON.stringify(result));
    if (result.isError || text !== "The sum of 5 and 3 is 8") fail(`unexpected add_numbers result: ${JSON.stringify(result)}`);
    await client.close();
  },

  // The test server answers tools/call with an SSE stream holding only a
  // priming event (id + retry: 500), closes it after 50 ms, and delivers the
  // result on the GET stream that resumes it with Last-Event-ID. It grades
  // toolgate's reconnection delay and Last-Event-ID; we check the result
  // reaches the downstream client.
  async "sse-retry"(url) {
    const { client } = await connect(url, {});
    await listedTool(client, "test_reconnection");
    const started = performance.now();
    const result = await client.callTool({ name: "test_reconnection", arguments: {} });
    const ms = Math.round(performance.now() - started);
    log(`test_reconnection answered after ${ms} ms:`, JSON.stringify(result));
    if (result.isError || !textOf(result).includes("Reconnection test completed successfully")) {
      fail(`the resumed result did not arrive: ${JSON.stringify(result)}`);
    }
    await client.close();
  },

  // The test server's tool sends elicitation/create with a default for each
  // primitive type and checks the accepted content carries them. toolgate
  // forwards the request to us (the downstream client, which declared
  // elicitation); we apply the defaults found in the schema *as it reached
  // us*, so a schema damaged on the way fails the checks.
  async "elicitation-sep1034-client-defaults"(url) {
    const { client } = await connect(url, { elicitation: {} });
    let asked = null;
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked = request.params;
      const content = defaultsOf(request.params.requestedSchema);
      log("elicitation/create reached the client; answering accept with", JSON.stringify(content));
      return { action: "accept", content };
    });
    await listedTool(client, "test_client_elicitation_defaults");
    const result = await client.callTool({ name: "test_client_elicitation_defaults", arguments: {} });
    log("test_client_elicitation_defaults ->", JSON.stringify(result));
    if (asked === null) fail("the elicitation request never reached the downstream client");
    if (result.isError || !textOf(result).startsWith("Elicitation completed")) {
      fail(`unexpected result: ${JSON.stringify(result)}`);
    }
    await client.close();
  },
};

async function main() {
  if (!toolgateBin) fail("TOOLGATE_BIN is not set");
  const run = scenarios[scenario];
  if (!run) fail(`no client behaviour for scenario ${JSON.stringify(scenario)}; known: ${Object.keys(scenarios).join(", ")}`);
  log(`scenario ${scenario}: toolgate in front of ${upstreamUrl}`);
  const toolgate = await startToolgate(toolgateBin, upstreamUrl);
  try {
    await run(toolgate.url);
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
