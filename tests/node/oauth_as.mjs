#!/usr/bin/env node
// A real OAuth 2.1 authorization server (npm `oidc-provider`, pinned in
// package.json) for toolgate's "OAuth toward upstream MCP servers" tests:
// toolgate is the OAuth client, one consent per toolgate user, and the access
// tokens are for OAuth-protected upstream MCP servers (identity_server.mjs
// with --authorization-server).
//
// Usage: node oauth_as.mjs [--port N] [--client ID:SECRET:REDIRECT_URI]...
//                          [--access-ttl S] [--refresh-ttl S] [--no-dcr]
//                          [--default-resource URL] [--resource-scopes "mcp ..."]
//   --client            a pre-registered confidential client (repeatable; the
//                       same ID:SECRET again adds a redirect URI). Grant types
//                       authorization_code + refresh_token + client_credentials
//                       (a token for the client itself, sub = its id, for the
//                       `resource` asked), response type code,
//                       client_secret_basic or client_secret_post (both work)
//   --access-ttl        access token lifetime in seconds, default 300
//   --refresh-ttl       refresh token lifetime in seconds, default 86400
//   --no-dcr            no RFC 7591 registration endpoint (registration_endpoint null)
//   --default-resource  the resource used when an authorization request has no
//                       `resource`; without it such a request is refused with
//                       error=invalid_target (sent to the redirect_uri)
//   --resource-scopes   the scopes a resource grants, default "mcp"
// Ready line on stdout (the only stdout output):
//   {"issuer":"http://127.0.0.1:P","authorization_endpoint":".../auth",
//    "token_endpoint":".../token","registration_endpoint":".../reg"|null,
//    "revocation_endpoint":".../token/revocation",
//    "introspection_endpoint":".../token/introspection","jwks_uri":".../jwks"}
//
// Protocol:
// - Authorization code flow only; PKCE is required of every client (S256, the
//   only method oidc-provider 9 knows); a request without code_challenge is
//   answered error=invalid_request at the redirect_uri.
// - RFC 8707: `resource` must be an http://127.0.0.1[:port]/... URL (any port,
//   any path), else error=invalid_target. Exactly one resource per request.
//   At the token endpoint `resource` may be omitted (the granted one is used)
//   or repeated (it must be the granted one).
// - Access tokens: ES256 JWTs (header typ "at+jwt"), claims iss, sub (the login
//   name typed on the login page), aud (the resource, exactly as requested),
//   client_id, scope (the granted resource scopes, e.g. "mcp"), iat, exp, jti.
// - Scopes: "openid", "offline_access" and the resource scopes (default "mcp").
//   A request without `scope` is treated as scope=<resource scopes> (oidc-provider
//   would otherwise grant nothing and answer access_denied). "openid" adds an
//   id_token to the token response; offline_access is NOT needed for a refresh
//   token: every client allowed the refresh_token grant gets one.
// - Refresh tokens rotate on every use; presenting an already used one revokes
//   the whole grant (oidc-provider's reuse detection).
// - RFC 7009 revocation (refresh tokens; a JWT access token is answered 400
//   unsupported_token_type: oidc-provider cannot revoke structured tokens) and
//   RFC 7662 introspection (refresh tokens, same restriction for JWTs).
// - RFC 7591 registration (open, no initial access token) at /reg. Defaults
//   for a registered client: grant_types [authorization_code, refresh_token],
//   response_types [code], token_endpoint_auth_method client_secret_basic (send
//   "none" for a public client, or client_secret_post).
// - RFC 9207: every authorization response (success and error) carries `iss`;
//   metadata says authorization_response_iss_parameter_supported: true.
// - Discovery at /.well-known/openid-configuration and (same document)
//   /.well-known/oauth-authorization-server.
//
// Login and consent (this script's own pages, HTML, no JavaScript):
//   GET  /interaction/<uid>  shows one of two forms:
//     <form id="login" method="post" action="/interaction/<uid>/login">
//        fields: login (any name; becomes `sub`), password (anything)
//     <form id="consent" method="post" action="/interaction/<uid>/consent">
//        field: decision = "approve" | "deny" (two submit buttons of that name);
//        deny sends error=access_denied to the redirect_uri
//   Both POSTs are application/x-www-form-urlencoded and answer 303 to the
//   authorization endpoint's resume URL. The AS's cookies (_interaction,
//   _interaction_resume, _session, with .sig twins) must be kept, as a browser does.
//   Consent is asked once per (browser session, client, user); a new browser
//   session (fresh cookie jar) logs in and consents again.
//
// Test routes (no auth):
//   GET  /test/stats  -> {"authorizations" (codes issued), "token_code" (code
//        exchanges), "refreshes", "revocations" (successful calls to the
//        revocation endpoint), "registrations", "denied" (consents denied)}
//   POST /test/revoke-user?sub=alice -> {"sub","grants"}: destroys every grant
//        of that user with its refresh tokens and codes (their refresh answers
//        invalid_grant from then on)
// Stops on SIGTERM/SIGINT, or when stdin is a pipe and it closes.
// Needs Node 22 (oidc-provider warns on older runtimes).

import { randomBytes, randomUUID } from "node:crypto";
import { fstatSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";
import { parseArgs } from "node:util";

// oidc-provider prints its notices with console.info (stdout): keep stdout for
// the ready line alone. Patched before the dynamic import below.
console.info = console.log = (...a) => console.error(...a);

const { Provider, errors } = await import("oidc-provider");
const { exportJWK, generateKeyPair } = await import("jose");

const { values: opts } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    client: { type: "string", multiple: true, default: [] },
    "access-ttl": { type: "string", default: "300" },
    "refresh-ttl": { type: "string", default: "86400" },
    "no-dcr": { type: "boolean", default: false },
    "default-resource": { type: "string" },
    "resource-scopes": { type: "string", default: "mcp" },
  },
});
const ACCESS_TTL = Number(opts["access-ttl"]);
const REFRESH_TTL = Number(opts["refresh-ttl"]);
const DEFAULT_RESOURCE = opts["default-resource"];
const RESOURCE_SCOPES = opts["resource-scopes"].split(/\s+/).filter(Boolean);
const die = (msg) => {
  process.stderr.write(`oauth_as: ${msg}\n`);
  process.exit(2);
};
if (!(ACCESS_TTL > 0) || !(REFRESH_TTL > 0)) die("--access-ttl and --refresh-ttl must be positive");
if (RESOURCE_SCOPES.length === 0) die("--resource-scopes must name at least one scope");

// --client ID:SECRET:REDIRECT_URI (the URI keeps its own colons).
const clients = new Map();
for (const spec of opts.client) {
  const m = /^([^:]+):([^:]+):(.+)$/.exec(spec);
  if (!m) die(`--client wants ID:SECRET:REDIRECT_URI, got ${spec}`);
  const [, id, secret, uri] = m;
  const known = clients.get(id);
  if (known && known.client_secret !== secret) die(`--client ${id} given with two secrets`);
  if (known) known.redirect_uris.push(uri);
  else {
    clients.set(id, {
      client_id: id,
      client_secret: secret,
      redirect_uris: [uri],
      // Pre-registered clients may also get tokens for themselves.
      grant_types: ["authorization_code", "refresh_token", "client_credentials"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    });
  }
}

/** RFC 8707 policy: any http://127.0.0.1[:port] resource, nothing else. */
function isAcceptedResource(resource) {
  const url = URL.parse(resource);
  return url !== null && url.protocol === "http:" && url.hostname === "127.0.0.1";
}

// One ES256 signing key, fresh per run (access tokens and id tokens).
const KID = `as-${randomUUID().slice(0, 8)}`;
const { privateKey } = await generateKeyPair("ES256", { extractable: true });
const privateJwk = { ...(await exportJWK(privateKey)), kid: KID, alg: "ES256", use: "sig" };

const stats = {
  authorizations: 0, token_code: 0, refreshes: 0, revocations: 0, registrations: 0, denied: 0, client_credentials: 0,
};
const grantsOf = new Map(); // account id -> Set of grant ids

// The port is known only after listen: bind first, then build the provider.
const http = createServer();
await new Promise((ok) => http.listen(Number(opts.port), "127.0.0.1", ok));
const ISSUER = `http://127.0.0.1:${http.address().port}`;

const provider = new Provider(ISSUER, {
  jwks: { keys: [privateJwk] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  clients: [...clients.values()],
  clientDefaults: {
    grant_types: ["authorization_code", "refresh_token"],
    id_token_signed_response_alg: "ES256",
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  },
  responseTypes: ["code"], // OAuth 2.1: no implicit or hybrid flows
  scopes: ["openid", "offline_access", ...RESOURCE_SCOPES],
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
  // A refresh token for every client that may use the grant, offline_access or not.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  rotateRefreshToken: true,
  expiresWithSession: async () => false,
  ttl: {
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? ACCESS_TTL,
    AuthorizationCode: 60,
    RefreshToken: REFRESH_TTL,
    Grant: REFRESH_TTL,
    IdToken: 3600,
    Interaction: 600,
    Session: 86400,
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    registration: { enabled: !opts["no-dcr"], initialAccessToken: false },
    revocation: {
      enabled: true,
      // oidc-provider's default policy, spelled out (silences its notice).
      allowedPolicy: async (_ctx, client, token) =>
        token.clientId === client.clientId || client.clientAuthMethod !== "none",
    },
    introspection: {
      enabled: true,
      allowedPolicy: async (ctx, client, token) =>
        !(client.clientAuthMethod === "none" && token.clientId !== ctx.oidc.client.clientId),
    },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => {
        if (oneOf) return oneOf;
        if (DEFAULT_RESOURCE) return DEFAULT_RESOURCE;
        throw new errors.InvalidTarget("a resource parameter (RFC 8707) is required");
      },
      // The token endpoint may omit `resource`: the granted one is used.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!isAcceptedResource(resource)) {
          throw new errors.InvalidTarget("resource must be an http://127.0.0.1[:port] URL");
        }
        return {
          audience: resource,
          scope: RESOURCE_SCOPES.join(" "),
          accessTokenFormat: "jwt",
          accessTokenTTL: ACCESS_TTL,
          jwt: { sign: { alg: "ES256" } },
        };
      },
    },
  },
});

provider.on("authorization.success", (_ctx, out) => { if (out?.code) stats.authorizations += 1; });
provider.on("grant.success", (ctx) => {
  const gty = ctx.oidc.params?.grant_type;
  if (gty === "authorization_code") stats.token_code += 1;
  else if (gty === "refresh_token") stats.refreshes += 1;
  else if (gty === "client_credentials") stats.client_credentials += 1;
});
provider.on("registration_create.success", () => { stats.registrations += 1; });
provider.on("grant.saved", (grant) => {
  if (!grantsOf.has(grant.accountId)) grantsOf.set(grant.accountId, new Set());
  grantsOf.get(grant.accountId).add(grant.jti);
});
// Revocation always answers 200 when it did its job (RFC 7009 §2.2).
provider.use(async (ctx, next) => {
  await next();
  if (ctx.method === "POST" && ctx.path === "/token/revocation" && ctx.status === 200) stats.revocations += 1;
});

// --- login and consent pages ---------------------------------------------------

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body><h1>${esc(title)}</h1>
${body}
</body></html>
`;

function sendHtml(res, status, html) {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
  res.end(html);
}

async function readForm(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

async function interaction(req, res, url) {
  const m = /^\/interaction\/([^/]+)(?:\/(login|consent))?$/.exec(url.pathname);
  if (!m) return sendHtml(res, 404, page("Not found", "<p>no such interaction page</p>"));
  const [, uid, action] = m;
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (e) {
    return sendHtml(res, 400, page("Interaction expired", `<p>${esc(e.message)}</p>`));
  }
  if (details.uid !== uid) return sendHtml(res, 400, page("Interaction mismatch", "<p>wrong interaction</p>"));
  const { prompt, params, session, grantId } = details;

  if (req.method === "GET" && !action) {
    if (prompt.name === "login") {
      return sendHtml(res, 200, page("Sign-in", `<p>Client <code>${esc(params.client_id)}</code> asks you to sign in.</p>
<form id="login" method="post" action="/interaction/${esc(uid)}/login">
  <input type="text" name="login" placeholder="any login" required autofocus>
  <input type="password" name="password" placeholder="any password">
  <button type="submit">Sign-in</button>
</form>`));
    }
    if (prompt.name === "consent") {
      const scopes = [...new Set([
        ...(prompt.details.missingOIDCScope ?? []),
        ...Object.values(prompt.details.missingResourceScopes ?? {}).flat(),
      ])];
      const resources = Object.keys(prompt.details.missingResourceScopes ?? {});
      return sendHtml(res, 200, page("Authorize", `<p>Client <code>${esc(params.client_id)}</code> asks
<code>${esc(session?.accountId ?? "")}</code> for access.</p>
<ul><li>scopes: ${scopes.map((s) => `<code>${esc(s)}</code>`).join(" ") || "(none new)"}</li>
<li>resources: ${resources.map((r) => `<code>${esc(r)}</code>`).join(" ") || esc(params.resource ?? "")}</li></ul>
<form id="consent" method="post" action="/interaction/${esc(uid)}/consent">
  <button type="submit" name="decision" value="approve" autofocus>Approve</button>
  <button type="submit" name="decision" value="deny">Deny</button>
</form>`));
    }
    return sendHtml(res, 501, page("Not implemented", `<p>prompt ${esc(prompt.name)}</p>`));
  }

  if (req.method !== "POST" || !action) return sendHtml(res, 405, page("Method not allowed", ""));
  const form = await readForm(req);
  if (action !== prompt.name) {
    return sendHtml(res, 400, page("Wrong step", `<p>this interaction asks for ${esc(prompt.name)}</p>`));
  }
  if (action === "login") {
    const login = (form.get("login") ?? "").trim();
    if (!login) return sendHtml(res, 400, page("Sign-in", "<p>login is required</p>"));
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  // consent
  const decision = form.get("decision");
  if (decision === "deny") {
    stats.denied += 1;
    return provider.interactionFinished(req, res, {
      error: "access_denied",
      error_description: "the end user denied the authorization",
    }, { mergeWithLastSubmission: false });
  }
  if (decision !== "approve") return sendHtml(res, 400, page("Authorize", "<p>decision must be approve or deny</p>"));
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(" "));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const result = { consent: { grantId: await grant.save() } };
  return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

// --- test routes -----------------------------------------------------------------

async function revokeUser(sub) {
  const ids = [...(grantsOf.get(sub) ?? [])];
  for (const id of ids) {
    await Promise.all([
      provider.AccessToken.adapter.revokeByGrantId(id),
      provider.RefreshToken.adapter.revokeByGrantId(id),
      provider.AuthorizationCode.adapter.revokeByGrantId(id),
      provider.Grant.adapter.destroy(id),
    ]);
  }
  grantsOf.delete(sub);
  return ids.length;
}

// --- dispatch ----------------------------------------------------------------------

const oidc = provider.callback();
const json = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
http.on("request", (req, res) => {
  const url = new URL(req.url, ISSUER);
  const fail = (e) => {
    process.stderr.write(`oauth_as: ${e.stack ?? e}\n`);
    if (!res.headersSent) json(res, 500, { error: "server_error", error_description: String(e) });
    else res.end();
  };
  if (url.pathname.startsWith("/test/")) {
    const route = `${req.method} ${url.pathname}`;
    if (route === "GET /test/stats") return json(res, 200, stats);
    if (route === "POST /test/revoke-user") {
      const sub = url.searchParams.get("sub");
      if (!sub) return json(res, 400, { error: "sub is required" });
      return revokeUser(sub).then((n) => json(res, 200, { sub, grants: n }), fail);
    }
    return json(res, 404, { error: "not_found" });
  }
  if (url.pathname.startsWith("/interaction/")) return interaction(req, res, url).catch(fail);
  // RFC 8414 discovery: the same document as OpenID discovery.
  if (url.pathname === "/.well-known/oauth-authorization-server") {
    req.url = `/.well-known/openid-configuration${url.search}`;
  }
  // No scope: ask for the resource scopes (else oidc-provider grants nothing).
  if (req.method === "GET" && url.pathname === "/auth" && !url.searchParams.has("scope")) {
    url.searchParams.set("scope", RESOURCE_SCOPES.join(" "));
    req.url = `${url.pathname}${url.search}`;
  }
  return oidc(req, res);
});

process.stdout.write(`${JSON.stringify({
  issuer: ISSUER,
  authorization_endpoint: provider.urlFor("authorization"),
  token_endpoint: provider.urlFor("token"),
  registration_endpoint: opts["no-dcr"] ? null : provider.urlFor("registration"),
  revocation_endpoint: provider.urlFor("revocation"),
  introspection_endpoint: provider.urlFor("introspection"),
  jwks_uri: provider.urlFor("jwks"),
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
