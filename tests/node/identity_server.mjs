#!/usr/bin/env node
// An upstream MCP server for toolgate's "upstream identity" tests: it demands
// a valid JWT (or a static service token) on EVERY HTTP request and echoes the
// identity it saw, so the tests can prove which user each request carried and
// that a session never mixes two users. TypeScript SDK v1 (`@modelcontextprotocol/sdk`),
// Streamable HTTP with stateful sessions, on 127.0.0.1.
//
// Usage: node identity_server.mjs --jwks URL --issuer I --audience A
//                                 [--header NAME] [--service-token T] [--port N]
//   --header         header carrying the JWT; default `authorization` (as
//                    `Bearer <jwt>`), any other name carries the raw JWT
//   --service-token  a static token also accepted (subject "service", claims {}):
//                    as the credential in --header, or, when --header is some
//                    other header and absent, as `Authorization: Bearer T`
// Ready line on stdout: {"url":"http://127.0.0.1:P/mcp"}
//
// MCP (POST/GET/DELETE /mcp, all authenticated, else 401 with
// `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`):
//   whoami {}      -> {sub, session, claims} of the token on THIS request, as
//                     JSON text and as structuredContent
//   echo   {text}  -> text
// Test routes (no auth):
//   GET  /test/seen                -> [{session, sub, method, kid, http}] per
//        authenticated request (an initialize's session is the id it created)
//   GET  /test/subjects-per-session -> {session_id: [distinct subs]}
//   GET  /test/refused             -> [{reason, session, http}] per 401
//   POST /test/reset               -> clears the three lists
// Stops on SIGTERM/SIGINT, or when stdin is a pipe and it closes.

import { randomUUID } from "node:crypto";
import { fstatSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";
import { parseArgs } from "node:util";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import * as z from "zod";

const { values: opts } = parseArgs({
  options: {
    jwks: { type: "string" },
    issuer: { type: "string" },
    audience: { type: "string" },
    header: { type: "string", default: "authorization" },
    "service-token": { type: "string" },
    port: { type: "string", default: "0" },
  },
});
for (const k of ["jwks", "issuer", "audience"]) {
  if (!opts[k]) {
    process.stderr.write(`identity_server: --${k} is required\n`);
    process.exit(2);
  }
}
const HEADER = opts.header.toLowerCase();
const SERVICE = opts["service-token"];
// An unknown `kid` (a key rotated in) is looked up again at once, not after
// jose's default 30 s cooldown, so the rotation test need not wait.
const jwks = createRemoteJWKSet(new URL(opts.jwks), { cooldownDuration: 0 });

let seen = [];
let refused = [];

class Unauthorized extends Error {}

/** The credential of a request: {sub, claims, kid}, or throws Unauthorized. */
async function authenticate(req) {
  const raw = req.headers[HEADER];
  let token;
  if (raw === undefined) {
    const bearer = /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (SERVICE && HEADER !== "authorization" && bearer === SERVICE) token = SERVICE;
    else throw new Unauthorized(`no ${HEADER} header`);
  } else if (HEADER === "authorization") {
    token = /^bearer\s+(.+)$/i.exec(raw)?.[1];
    if (!token) throw new Unauthorized("authorization is not a Bearer credential");
  } else {
    token = raw;
  }
  if (SERVICE && token === SERVICE) return { sub: "service", claims: {}, kid: null };
  try {
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: opts.issuer,
      audience: opts.audience,
    });
    if (typeof payload.sub !== "string") throw new Error("token has no sub");
    return { sub: payload.sub, claims: payload, kid: protectedHeader.kid ?? null };
  } catch (e) {
    let kid = null;
    try { kid = decodeProtectedHeader(token).kid ?? null; } catch { /* not a JWT */ }
    throw new Unauthorized(`${e.code ?? "invalid"}: ${e.message} (kid ${kid})`);
  }
}

/** One McpServer per session (the SDK v1 pattern). */
function buildServer() {
  const server = new McpServer({ name: "toolgate-identity-upstream", version: "1.0.0" });
  server.registerTool(
    "whoami",
    {
      description: "Reports the subject and all claims of the credential on this very request, and the MCP session id.",
      outputSchema: {
        sub: z.string(),
        session: z.string().nullable(),
        claims: z.record(z.string(), z.unknown()),
      },
    },
    async (extra) => {
      const who = {
        sub: extra.authInfo?.extra?.sub ?? null,
        session: extra.sessionId ?? null,
        claims: extra.authInfo?.extra?.claims ?? {},
      };
      return { content: [{ type: "text", text: JSON.stringify(who) }], structuredContent: who };
    },
  );
  server.registerTool(
    "echo",
    { description: "Returns its text unchanged.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
}

const sessions = new Map(); // session id -> transport

function send(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

async function handleMcp(req, res) {
  const sid = req.headers["mcp-session-id"] ?? null;
  let who;
  try {
    who = await authenticate(req);
  } catch (e) {
    if (!(e instanceof Unauthorized)) throw e;
    refused.push({ reason: e.message, session: sid, http: req.method });
    const desc = e.message.replace(/["\\]/g, "'");
    return send(res, 401, { error: "invalid_token", error_description: e.message }, {
      "www-authenticate": `Bearer error="invalid_token", error_description="${desc}"`,
    });
  }

  let body;
  if (req.method === "POST") {
    try {
      body = await readJson(req);
    } catch {
      return send(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
    }
  }
  const method = Array.isArray(body) ? body.map((m) => m?.method ?? null) : body?.method ?? null;
  const entry = { session: sid, sub: who.sub, method, kid: who.kid, http: req.method };
  seen.push(entry);
  // The SDK hands this to the tool handlers as extra.authInfo (per request).
  req.auth = { token: "", clientId: who.sub, scopes: [], extra: { sub: who.sub, claims: who.claims } };

  let transport = sid ? sessions.get(sid) : undefined;
  if (sid && !transport) {
    return send(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
  }
  if (!transport) {
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return send(res, 400, { jsonrpc: "2.0", error: { code: -32000, message: "No session: initialize first" }, id: null });
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, transport);
        entry.session = id;
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
  const { pathname } = new URL(req.url, "http://127.0.0.1");
  const route = `${req.method} ${pathname}`;
  if (route === "GET /test/seen") return send(res, 200, seen);
  if (route === "GET /test/refused") return send(res, 200, refused);
  if (route === "GET /test/subjects-per-session") {
    const out = {};
    for (const { session, sub } of seen) {
      if (session === null) continue;
      out[session] ??= [];
      if (!out[session].includes(sub)) out[session].push(sub);
    }
    return send(res, 200, out);
  }
  if (route === "POST /test/reset") {
    seen = [];
    refused = [];
    return send(res, 200, { ok: true });
  }
  if (pathname !== "/mcp") return send(res, 404, { error: "not_found" });
  handleMcp(req, res).catch((e) => {
    process.stderr.write(`identity_server: ${e.stack ?? e}\n`);
    if (!res.headersSent) send(res, 500, { jsonrpc: "2.0", error: { code: -32603, message: String(e) }, id: null });
    else res.end();
  });
});

http.listen(Number(opts.port), "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${http.address().port}/mcp` })}\n`);
});

// Clean exit: SIGTERM/SIGINT, or stdin closing when it is a pipe (a test that
// spawns with stdin = /dev/null would otherwise see EOF at once).
const stop = () => { http.closeAllConnections(); http.close(() => process.exit(0)); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
try {
  const st = fstatSync(0);
  if (st.isFIFO() || st.isSocket()) {
    process.stdin.on("end", stop).on("close", stop).resume();
  }
} catch { /* no stdin at all */ }
