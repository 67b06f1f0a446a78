#!/usr/bin/env node
// Reads, as an anonymous 2026-07-28 client, the full description of every
// tool a progressive toolgate lists (`resource:///tool_descriptions?tools=…`),
// or, under the search listing, of every tool in its catalog,
// the step the disclosure workflow asks of a client before it calls a tool.
// Sessionless anonymous clients share one grant scope (docs/src/disclosure.md,
// "Grants"), so the suite run that follows may call every tool:
// the `progressive-fetched-*` targets of run.sh show that the scenarios a
// progressive toolgate fails fail only because their calls skip this step.
//
// Usage: node fetch-descriptions-2026.mjs URL   (prints what it granted)

const VERSION = "2026-07-28";
const DESCRIPTIONS = "resource:///tool_descriptions";

const url = process.argv[2];
if (!url) {
  console.error("usage: fetch-descriptions-2026.mjs URL");
  process.exit(2);
}

let nextId = 1;

/** One 2026-07-28 request; returns its JSON-RPC result or throws. */
async function request(method, params, name) {
  const id = nextId++;
  const body = {
    jsonrpc: "2.0",
    id,
    method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "toolgate-conformance-fetch", version: "1" },
      },
    },
  };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": VERSION,
    "mcp-method": method,
  };
  if (name !== undefined) headers["mcp-name"] = name;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  const messages = (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
        .filter((data) => data.length > 0)
        .map((data) => JSON.parse(data))
    : [JSON.parse(text)];
  const answer = messages.find((m) => m.id === id);
  if (!answer) throw new Error(`${method}: no answer (HTTP ${response.status}): ${text.slice(0, 300)}`);
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

const names = [];
let cursor;
do {
  const page = await request("tools/list", cursor === undefined ? {} : { cursor });
  for (const tool of page.tools ?? []) names.push(tool.name);
  cursor = page.nextCursor;
} while (cursor !== undefined && cursor !== null);

// Under the search listing (`search_tools` listed) the catalog is not in
// tools/list: its names come from the completion of the descriptions
// template's `tools` argument, which toolgate serves for the whole catalog.
const synthesized = ["describe_tools", "search_tools", "call_tool"];
if (names.includes("search_tools")) {
  const completed = await request("completion/complete", {
    ref: { type: "ref/resource", uri: `${DESCRIPTIONS}?tools={tools}` },
    argument: { name: "tools", value: "" },
  });
  if (completed.completion?.hasMore) throw new Error("more tools than one completion holds");
  names.push(...(completed.completion?.values ?? []));
}
const wanted = names.filter((n) => !synthesized.includes(n));
if (wanted.length === 0) throw new Error("tools/list listed no upstream tool");
// A few per read, so no answer reaches the size bound of one read.
const got = [];
for (let i = 0; i < wanted.length; i += 8) {
  const batch = wanted.slice(i, i + 8);
  const uri = `${DESCRIPTIONS}?tools=${batch.map(encodeURIComponent).join(",")}`;
  const read = await request("resources/read", { uri }, uri);
  const text = read.contents?.[0]?.text;
  if (typeof text !== "string") throw new Error(`resources/read gave no text: ${JSON.stringify(read).slice(0, 300)}`);
  // An object keyed by tool name: the full definition, or an `error` entry.
  for (const [name, entry] of Object.entries(JSON.parse(text))) {
    if (entry && typeof entry === "object" && !("error" in entry)) got.push(name);
  }
}
const missing = wanted.filter((n) => !got.includes(n));
if (missing.length > 0) throw new Error(`descriptions missing for: ${missing.join(", ")}`);
console.log(`fetched the descriptions of ${got.length} tools: ${got.join(", ")}`);
