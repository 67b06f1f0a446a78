#!/usr/bin/env node
// A small MCP server on the published TypeScript SDK v2
// (`@modelcontextprotocol/server`, `@modelcontextprotocol/node`, pinned in
// package.json), serving only the 2026-07-28 revision: the upstream of
// toolgate's 2026 interop matrix that owes nothing to toolgate's own code.
//
// Usage:
//   node server_v2.mjs http    Streamable HTTP on 127.0.0.1, port 0; prints
//                              `listening on http://127.0.0.1:PORT/mcp` on stdout
//   node server_v2.mjs stdio   newline-delimited JSON-RPC on stdin/stdout
//
// Both are modern-only (`legacy: 'reject'`): an `initialize` is refused with
// -32022 naming 2026-07-28, so a client that reaches these tools speaks the
// 2026 era. The tools (what the tests check):
//   reverse     {text}            -> text "Reversed: <text backwards>"
//   word_stats  {text}            -> structuredContent {words, characters}, and
//                                    the same JSON as a text block; its long
//                                    description makes the minimal form differ
//   add         {a, b}            -> text "a + b = <sum>"
// Needs Node >= 20 (the tests run it on the pinned Node 22).

import { createServer } from "node:http";
import process from "node:process";

import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from "@modelcontextprotocol/node";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const WORD_STATS_DESCRIPTION = [
  "Counts the words and the characters of a piece of text.",
  "Words are maximal runs of non-white-space characters; characters are Unicode code points, white space included.",
  "The result is structured ({words, characters}) and repeated as JSON in a text block for clients that read only text.",
  "Use it to check the length of a summary before sending it, or to compare two drafts.",
].join(" ");

/** One server instance (the SDK asks for one per request over HTTP, per connection over stdio). */
function build() {
  const server = new McpServer(
    { name: "toolgate-interop-v2", version: "1.0.0" },
    { capabilities: { tools: {} } },
  );
  server.registerTool(
    "reverse",
    {
      title: "Reverse text",
      description: "Returns the text with its characters in reverse order.",
      inputSchema: z.object({ text: z.string().describe("The text to reverse.") }),
    },
    async ({ text }) => ({ content: [{ type: "text", text: `Reversed: ${[...text].reverse().join("")}` }] }),
  );
  server.registerTool(
    "word_stats",
    {
      title: "Word statistics",
      description: WORD_STATS_DESCRIPTION,
      inputSchema: z.object({ text: z.string().describe("The text to measure.") }),
      outputSchema: z.object({
        words: z.number().int().describe("How many words the text has."),
        characters: z.number().int().describe("How many characters (code points) the text has."),
      }),
    },
    async ({ text }) => {
      const stats = { words: text.split(/\s+/).filter(Boolean).length, characters: [...text].length };
      return { content: [{ type: "text", text: JSON.stringify(stats) }], structuredContent: stats };
    },
  );
  server.registerTool(
    "add",
    {
      title: "Add two numbers",
      description: "Adds two numbers.",
      inputSchema: z.object({ a: z.number().describe("The first addend."), b: z.number().describe("The second addend.") }),
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: `${a} + ${b} = ${a + b}` }] }),
  );
  return server;
}

const onerror = (e) => process.stderr.write(`server_v2: ${e?.message ?? e}\n`);

switch (process.argv[2]) {
  case "stdio":
    serveStdio(build, { legacy: "reject", onerror });
    break;
  case "http": {
    const handle = toNodeHandler(createMcpHandler(build, { legacy: "reject", onerror }));
    const validateHost = localhostHostValidation();
    const validateOrigin = localhostOriginValidation();
    const http = createServer((req, res) => {
      if (!validateHost(req, res) || !validateOrigin(req, res)) return;
      if (new URL(req.url ?? "/", "http://127.0.0.1").pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      Promise.resolve(handle(req, res)).catch((e) => {
        onerror(e);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    http.listen(0, "127.0.0.1", () => {
      process.stdout.write(`listening on http://127.0.0.1:${http.address().port}/mcp\n`);
    });
    // The tests stop it with SIGTERM (or by closing stdin): no lingering sockets.
    process.on("SIGTERM", () => http.close(() => process.exit(0)));
    break;
  }
  default:
    process.stderr.write("usage: node server_v2.mjs http|stdio\n");
    process.exit(2);
}
