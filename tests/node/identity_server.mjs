#!/usr/bin/env node
// An upstream MCP server for toolgate's "upstream identity" tests: it demands
// a valid JWT (or a static service token) on EVERY HTTP request and echoes the
// identity it saw, so the tests can prove which user each request carried and
// that a session never mixes two users. TypeScript SDK v1 (`@modelcontextprotocol/sdk`),
// Streamable HTTP with stateful sessions, on 127.0.0.1.
//
// Usage: node identity_server.mjs --jwks URL --issuer I --audience A
//                                 [--header NAME] [--service-token T] [--port N]
//                                 [--authorization-server ISSUER] [--scopes "mcp ..."]
//                                 [--open-catalog]
//   --audience       the aud every JWT must carry; `self` means this server's own
//                    MCP URL, http://127.0.0.1:P/mcp (known once it listens)
//   --header         header carrying the JWT; default `authorization` (as
//                    `Bearer <jwt>`), any other name carries the raw JWT
//   --service-token  a static token also accepted (subject "service", claims {}):
//                    as the credential in --header, or, when --header is some
//                    other header and absent, as `Authorization: Bearer T`
//   --authorization-server  act as an RFC 9728 protected resource of that
//                    authorization server (oauth_as.mjs): serve protected-resource
//                    metadata and point every 401 at it. --jwks and --issuer then
//                    default to the jwks_uri and issuer of its
//                    ${ISSUER}/.well-known/openid-configuration (fetched at start)
//   --scopes         scopes_supported in that metadata, default "mcp"
//   --open-catalog   a request with no credential at all is served as subject
//                    "anonymous" unless it holds a tools/call (then 401, with
//                    the challenge below): the tools are listed openly, calls
//                    need a user's token
// Ready line on stdout: {"url":"http://127.0.0.1:P/mcp"}, plus
//   "resource_metadata":"http://127.0.0.1:P/.well-known/oauth-protected-resource/mcp"
//   with --authorization-server
//
// MCP (POST/GET/DELETE /mcp, all authenticated, else 401 with
// `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`;
// with --authorization-server `, resource_metadata="<metadata URL>"` is appended,
// and a request carrying no credential at all gets just
// `Bearer resource_metadata="<metadata URL>"`):
//   whoami {}      -> {sub, session, claims} of the token on THIS request, as
//                     JSON text and as structuredContent
//   echo   {text}  -> text
// Test routes (no auth):
//   GET  /test/seen                -> [{session, sub, method, kid, http}] per
//        authenticated request (an initialize's session is the id it created)
//   GET  /test/subjects-per-session -> {session_id: [distinct subs]}
//   GET  /test/refused             -> [{reason, session, http}] per 401
//   POST /test/reset               -> clears the three lists
//   POST /test/reject?sub=alice    -> from now on that subject's JWTs issued up to
//        now are refused (401 invalid_token, reason "rejected: ..."): those with
//        iat before the current second, and those with iat in the current second
//        that this server has already seen; a token issued later (a refreshed one)
//        is accepted. Answers {"sub","not_before"}. Signature, issuer, audience
//        and expiry are still checked for every token.
// With --authorization-server (no auth):
//   GET /.well-known/oauth-protected-resource/mcp and /.well-known/oauth-protected-resource
//     -> {"resource":"http://127.0.0.1:P/mcp","authorization_servers":[ISSUER],
//         "bearer_methods_supported":["header"],"scopes_supported":[...]}
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
    "authorization-server": { type: "string" },
    scopes: { type: "string", default: "mcp" },
    // Requests without any credential are served as "anonymous", except
    // tools/call: the catalog is open, calls need a user's token.
    "open-catalog": { type: "boolean", default: false },
  },
});
const AS = opts["authorization-server"];
if (AS && (!opts.jwks || !opts.issuer)) {
  // The authorization server's own metadata names its issuer and keys.
  const where = `${AS.replace(/\/$/, "")}/.well-known/openid-configuration`;
  try {
    const res = await fetch(where);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const meta = await res.json();
    opts.jwks ??= meta.jwks_uri;
    opts.issuer ??= meta.issuer;
  } catch (e) {
    process.stderr.write(`identity_server: cannot read ${where}: ${e.message}\n`);
    process.exit(2);
  }
}
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
// Known once listening: this server's MCP URL, the audience when `--audience self`,
// and the protected-resource metadata URL (RFC 9728, path-inserted form).
let MCP_URL;
let AUDIENCE = opts.audience;
let RESOURCE_METADATA;

let seen = [];
let refused = [];
// /test/reject: sub -> {notBefore (epoch seconds), jtis seen up to then}
const rejected = new Map();
const jtisSeen = new Map(); // sub -> Set of jti of its verified tokens

class Unauthorized extends Error {
  constructor(message, { noCredential = false } = {}) {
    super(message);
    this.noCredential = noCredential;
  }
}

/** The credential of a request: {sub, claims, kid}, or throws Unauthorized. */
async function authenticate(req) {
  const raw = req.headers[HEADER];
  let token;
  if (raw === undefined) {
    const bearer = /^bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (SERVICE && HEADER !== "authorization" && bearer === SERVICE) token = SERVICE;
    else throw new Unauthorized(`no ${HEADER} header`, { noCredential: req.headers.authorization === undefined });
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
      audience: AUDIENCE,
    });
    if (typeof payload.sub !== "string") throw new Error("token has no sub");
    const rule = rejected.get(payload.sub);
    if (rule && typeof payload.iat === "number" && (payload.iat < rule.notBefore
      || (payload.iat === rule.notBefore && rule.jtis.has(payload.jti)))) {
      throw new Unauthorized(`rejected: a token of ${payload.sub} issued before /test/reject (iat ${payload.iat})`);
    }
    if (typeof payload.jti === "string") {
      if (!jtisSeen.has(payload.sub)) jtisSeen.set(payload.sub, new Set());
      jtisSeen.get(payload.sub).add(payload.jti);
    }
    return { sub: payload.sub, claims: payload, kid: protectedHeader.kid ?? null };
  } catch (e) {
    if (e instanceof Unauthorized) throw e;
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
  let body;
  if (req.method === "POST") {
    try {
      body = await readJson(req);
    } catch {
      return send(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
    }
  }
  const calls = (Array.isArray(body) ? body : [body]).some((m) => m?.method === "tools/call");
  let who;
  let e;
  try {
    who = await authenticate(req);
  } catch (err) {
    if (!(err instanceof Unauthorized)) throw err;
    if (opts["open-catalog"] && err.noCredential && !calls) {
      who = { sub: "anonymous", claims: {}, kid: null };
    }
    e = err;
  }
  if (!who) {
    refused.push({ reason: e.message, session: sid, http: req.method });
    const desc = e.message.replace(/["\\]/g, "'");
    const rm = RESOURCE_METADATA ? `resource_metadata="${RESOURCE_METADATA}"` : null;
    const challenge = rm && e.noCredential
      ? `Bearer ${rm}`
      : `Bearer error="invalid_token", error_description="${desc}"${rm ? `, ${rm}` : ""}`;
    return send(res, 401, { error: "invalid_token", error_description: e.message }, {
      "www-authenticate": challenge,
    });
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
  if (route === "POST /test/reject") {
    const sub = new URL(req.url, "http://127.0.0.1").searchParams.get("sub");
    if (!sub) return send(res, 400, { error: "sub is required" });
    const notBefore = Math.floor(Date.now() / 1000);
    rejected.set(sub, { notBefore, jtis: new Set(jtisSeen.get(sub) ?? []) });
    return send(res, 200, { sub, not_before: notBefore });
  }
  if (AS && req.method === "GET" && (pathname === "/.well-known/oauth-protected-resource/mcp"
    || pathname === "/.well-known/oauth-protected-resource")) {
    return send(res, 200, {
      resource: MCP_URL,
      authorization_servers: [AS],
      bearer_methods_supported: ["header"],
      scopes_supported: opts.scopes.split(/\s+/).filter(Boolean),
    });
  }
  if (pathname !== "/mcp") return send(res, 404, { error: "not_found" });
  handleMcp(req, res).catch((e) => {
    process.stderr.write(`identity_server: ${e.stack ?? e}\n`);
    if (!res.headersSent) send(res, 500, { jsonrpc: "2.0", error: { code: -32603, message: String(e) }, id: null });
    else res.end();
  });
});

http.listen(Number(opts.port), "127.0.0.1", () => {
  const base = `http://127.0.0.1:${http.address().port}`;
  MCP_URL = `${base}/mcp`;
  if (opts.audience === "self") AUDIENCE = MCP_URL;
  if (AS) RESOURCE_METADATA = `${base}/.well-known/oauth-protected-resource/mcp`;
  process.stdout.write(`${JSON.stringify({
    url: MCP_URL,
    ...(AS ? { resource_metadata: RESOURCE_METADATA } : {}),
  })}\n`);
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
