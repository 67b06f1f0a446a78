#!/usr/bin/env node
// A real OpenID provider (npm `oidc-provider`, pinned in package.json) for
// toolgate's "upstream identity" tests: it issues the end users' JWT access
// tokens (client_credentials) and exchanges them for upstream tokens by
// RFC 8693 token exchange or the RFC 7523 JWT bearer grant.
//
// Usage: node idp.mjs [--port N] [--downstream-audience A] [--exchange-ttl S]
//                     [--user-token-ttl S] [--client-secret S]
//   --downstream-audience  aud of the end users' tokens (toolgate's audience),
//                          default http://toolgate.test
//   --exchange-ttl         lifetime of exchanged tokens in seconds, default 300
//   --user-token-ttl       lifetime of the end users' tokens, default 3600
//   --client-secret        secret of the "toolgate" client, default toolgate-secret
// Ready line on stdout (the only stdout output):
//   {"issuer":"http://127.0.0.1:P","jwks_uri":".../jwks","token_endpoint":".../token"}
//
// Clients: alice, bob, carol (secret "<name>-secret", client_credentials; with
// resource=<downstream audience>, or no resource at all, the access token is
// an ES256 JWT with sub=<client id>, aud=<downstream audience>, iss=issuer);
// toolgate (client_secret_basic or _post; token-exchange, jwt-bearer,
// client_credentials).
//
// Test routes (no auth): GET /test/stats -> {"exchanges","jwt_bearer","refused"};
// POST /test/refuse | /test/accept (both grants answer access_denied while
// refusing); POST /test/delay?ms=N (both grants wait N ms before answering).
// Stops on SIGTERM/SIGINT, or when stdin is a pipe and it closes.
// Needs Node 22 (oidc-provider warns on older runtimes).

import { randomUUID } from "node:crypto";
import { fstatSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";
import { parseArgs } from "node:util";

// oidc-provider prints its notices with console.info (stdout): keep stdout for
// the ready line alone. Patched before the dynamic import below.
console.info = console.log = (...a) => console.error(...a);

const { Provider, errors } = await import("oidc-provider");
const { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify } = await import("jose");

const { values: opts } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    "downstream-audience": { type: "string", default: "http://toolgate.test" },
    "exchange-ttl": { type: "string", default: "300" },
    "user-token-ttl": { type: "string", default: "3600" },
    "client-secret": { type: "string", default: "toolgate-secret" },
    // A JWK Set (JSON): registers the client `toolgate-pk`, which
    // authenticates with private_key_jwt signed by one of these keys.
    "toolgate-jwks": { type: "string" },
  },
});
const DOWNSTREAM = opts["downstream-audience"];
const EXCHANGE_TTL = Number(opts["exchange-ttl"]);
const USER_TTL = Number(opts["user-token-ttl"]);

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const SUBJECT_TYPES = new Set([
  "urn:ietf:params:oauth:token-type:access_token",
  "urn:ietf:params:oauth:token-type:jwt",
]);
const END_USERS = ["alice", "bob", "carol"];

// One ES256 signing key, fresh per run: the provider signs the users' tokens
// with it and this script signs the exchanged ones with the same key.
const KID = `idp-${randomUUID().slice(0, 8)}`;
const { privateKey } = await generateKeyPair("ES256", { extractable: true });
const privateJwk = { ...(await exportJWK(privateKey)), kid: KID, alg: "ES256", use: "sig" };
const { d: _d, ...publicJwk } = privateJwk;
const localJwks = createLocalJWKSet({ keys: [publicJwk] });

// Test state.
const stats = { exchanges: 0, jwt_bearer: 0, refused: 0 };
let refusing = false;
let delayMs = 0;

// The port is known only after listen: bind first, then build the provider.
const http = createServer();
await new Promise((ok) => http.listen(Number(opts.port), "127.0.0.1", ok));
const ISSUER = `http://127.0.0.1:${http.address().port}`;

const provider = new Provider(ISSUER, {
  jwks: { keys: [privateJwk] },
  clientDefaults: { id_token_signed_response_alg: "ES256" },
  clients: [
    ...END_USERS.map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    })),
    {
      client_id: "toolgate",
      client_secret: opts["client-secret"],
      grant_types: [TOKEN_EXCHANGE, JWT_BEARER, "client_credentials"],
      response_types: [],
      redirect_uris: [],
      // Either basic or post is accepted by oidc-provider for a secret client.
      token_endpoint_auth_method: "client_secret_basic",
    },
    ...(opts["toolgate-jwks"]
      ? [
          {
            client_id: "toolgate-pk",
            grant_types: [TOKEN_EXCHANGE, JWT_BEARER],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: "private_key_jwt",
            token_endpoint_auth_signing_alg: "ES256",
            jwks: JSON.parse(opts["toolgate-jwks"]),
          },
        ]
      : []),
  ],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // End users may omit `resource`: their tokens are for toolgate anyway.
      defaultResource: async (_ctx, client, oneOf) =>
        oneOf ?? (END_USERS.includes(client?.clientId) ? DOWNSTREAM : undefined),
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource) => {
        if (resource !== DOWNSTREAM) throw new errors.InvalidTarget();
        return {
          audience: DOWNSTREAM,
          scope: typeof ctx.oidc.params.scope === "string" ? ctx.oidc.params.scope : "",
          accessTokenFormat: "jwt",
          accessTokenTTL: USER_TTL,
          jwt: { sign: { alg: "ES256" } },
        };
      },
    },
  },
  ttl: { ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? USER_TTL },
});

const fail = (code, description) => new errors.CustomOIDCProviderError(code, description);
const one = (v) => (Array.isArray(v) ? v[0] : v);
const many = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Verifies an end user's JWT: our key, our issuer, the downstream audience, not expired. */
async function verifySubject(token) {
  try {
    const { payload } = await jwtVerify(token, localJwks, { issuer: ISSUER, audience: DOWNSTREAM });
    if (typeof payload.sub !== "string" || !payload.sub) throw new Error("no sub");
    return payload;
  } catch (e) {
    throw fail("invalid_grant", `subject token rejected: ${e.code ? `${e.code} ` : ""}${e.message}`);
  }
}

/** Shared body of both grants: refuse/delay, verify, issue the upstream JWT. */
async function issue(ctx, kind, subjectToken) {
  if (delayMs > 0) await new Promise((ok) => setTimeout(ok, delayMs));
  try {
    if (refusing) throw fail("access_denied", "refused by the test");
    const { params, client } = ctx.oidc;
    const audience = [...new Set([...many(params.audience), ...many(params.resource)])];
    if (audience.length === 0) throw fail("invalid_target", "audience or resource is required");
    const subject = await verifySubject(subjectToken);
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      sub: subject.sub,
      aud: audience.length === 1 ? audience[0] : audience,
      client_id: client.clientId,
      act: { sub: client.clientId },
      ...(params.scope ? { scope: params.scope } : {}),
    };
    const jwt = await new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: KID, typ: "at+jwt" })
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(now + EXCHANGE_TTL)
      .setJti(randomUUID())
      .sign(privateKey);
    stats[kind] += 1;
    ctx.body = {
      access_token: jwt,
      issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
      token_type: "Bearer",
      expires_in: EXCHANGE_TTL,
      ...(params.scope ? { scope: params.scope } : {}),
    };
  } catch (e) {
    stats.refused += 1;
    throw e;
  }
}

// RFC 8693 token exchange (oidc-provider has none built in).
provider.registerGrantType(
  TOKEN_EXCHANGE,
  async (ctx) => {
    const p = ctx.oidc.params;
    if (!p.subject_token || !p.subject_token_type) {
      stats.refused += 1;
      throw fail("invalid_request", "subject_token and subject_token_type are required");
    }
    if (!SUBJECT_TYPES.has(p.subject_token_type)) {
      stats.refused += 1;
      throw fail("invalid_request", `unsupported subject_token_type ${p.subject_token_type}`);
    }
    await issue(ctx, "exchanges", one(p.subject_token));
  },
  ["subject_token", "subject_token_type", "audience", "resource", "scope",
    "requested_token_type", "actor_token", "actor_token_type"],
  ["audience", "resource"],
);

// RFC 7523 JWT bearer grant: the end user's JWT is the assertion.
provider.registerGrantType(
  JWT_BEARER,
  async (ctx) => {
    if (!ctx.oidc.params.assertion) {
      stats.refused += 1;
      throw fail("invalid_request", "assertion is required");
    }
    await issue(ctx, "jwt_bearer", ctx.oidc.params.assertion);
  },
  ["assertion", "audience", "resource", "scope"],
  ["audience", "resource"],
);

// Test routes first, everything else to the provider.
const oidc = provider.callback();
http.on("request", (req, res) => {
  const url = new URL(req.url, ISSUER);
  const json = (status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  if (!url.pathname.startsWith("/test/")) return oidc(req, res);
  const route = `${req.method} ${url.pathname}`;
  if (route === "GET /test/stats") return json(200, stats);
  if (route === "POST /test/refuse") { refusing = true; return json(200, { refusing }); }
  if (route === "POST /test/accept") { refusing = false; return json(200, { refusing }); }
  if (route === "POST /test/delay") {
    delayMs = Math.max(0, Number(url.searchParams.get("ms") ?? 0) || 0);
    return json(200, { delay_ms: delayMs });
  }
  return json(404, { error: "not_found" });
});

process.stdout.write(`${JSON.stringify({
  issuer: ISSUER,
  jwks_uri: provider.urlFor("jwks"),
  token_endpoint: provider.urlFor("token"),
})}\n`);

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
