#!/usr/bin/env node
// A scripted "browser" for toolgate's OAuth tests: it walks an end user
// through an authorization code flow, from toolgate's own start URL through
// the authorization server's login and consent pages (oauth_as.mjs) to
// toolgate's callback. Plain HTTP (Node fetch, redirect: "manual") with a
// cookie jar; no JavaScript. Talks to loopback hosts only.
//
// Usage: node user_agent.mjs START_URL --login NAME [--password P] [--deny]
//                            [--stop-at-callback] [--max-hops N]
//   START_URL           e.g. toolgate's http://127.0.0.1:P/oauth/start/<opaque>
//   --login NAME        the login typed on the sign-in page (becomes the token's sub)
//   --password P        typed as the password, default "password" (the AS takes any)
//   --deny              press "Deny" on the consent page (error=access_denied)
//   --stop-at-callback  do not fetch the callback URL: print it instead
//   --max-hops N        give up after N requests, default 40
//
// It GETs START_URL, follows every redirect (301/302/303 become GET, 307/308
// keep method and body), and on a 200 HTML page submits:
//   - a form with an input named "login": login=NAME, password=P (plus the
//     form's hidden inputs);
//   - a form with a button or input named "decision": decision=approve, or
//     decision=deny with --deny (plus the form's hidden inputs);
// until the next URL's path ends with "/oauth/callback". That one is fetched
// (GET, with the cookies a browser would send) and its answer is the final one,
// redirect or not. Cookies follow RFC 6265 loosely: host-only or Domain, Path,
// Max-Age/Expires; kept per host, not per port, as browsers do; Secure cookies
// are sent too (127.0.0.1 is a trustworthy origin to browsers).
//
// Output, ONE JSON line on stdout:
//   {"status": <final HTTP status>, "url": <final URL>, "body": <final body,
//    at most 4000 chars>, "hops": [every URL requested, in order],
//    "location"?: <its Location header if the final answer is a redirect>}
// With --stop-at-callback, once the callback URL is reached:
//   {"callback": <the callback URL, not fetched>, "hops": [...]}
//   (if the flow ends elsewhere first, the first form with "callback": null).
// Exit status: 0 when the flow reached the callback or ended on an HTTP error
// status (>= 400; the test judges); 3 when it ended on a 2xx page with no form
// it knows (the JSON line is still printed), 4 when a request failed (network),
// 5 on a non-loopback URL or too many hops, 2 on bad usage. Reasons go to stderr.

import process from "node:process";
import { parseArgs } from "node:util";

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      login: { type: "string" },
      password: { type: "string", default: "password" },
      deny: { type: "boolean", default: false },
      "stop-at-callback": { type: "boolean", default: false },
      "max-hops": { type: "string", default: "40" },
    },
  });
} catch (e) {
  process.stderr.write(`user_agent: ${e.message}\n`);
  process.exit(2);
}
const { values: opts, positionals } = parsed;
if (positionals.length !== 1 || !opts.login) {
  process.stderr.write("usage: node user_agent.mjs START_URL --login NAME [--password P] [--deny] [--stop-at-callback]\n");
  process.exit(2);
}
const MAX_HOPS = Number(opts["max-hops"]) || 40;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

const hops = [];
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const giveUp = (code, msg, extra) => {
  process.stderr.write(`user_agent: ${msg}\n`);
  if (extra) out(extra);
  process.exit(code);
};

// --- cookie jar ----------------------------------------------------------------

/** @type {{name: string, value: string, host: string, hostOnly: boolean, path: string, expires: number}[]} */
let jar = [];

function defaultPath(pathname) {
  const i = pathname.lastIndexOf("/");
  return i <= 0 ? "/" : pathname.slice(0, i);
}

function storeCookies(url, headers) {
  for (const line of headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(";");
    const eq = pair.indexOf("=");
    if (eq <= 0) continue;
    const cookie = {
      name: pair.slice(0, eq).trim(),
      value: pair.slice(eq + 1).trim(),
      host: url.hostname,
      hostOnly: true,
      path: defaultPath(url.pathname),
      expires: Infinity,
    };
    let maxAge;
    for (const attr of attrs) {
      const i = attr.indexOf("=");
      const key = (i < 0 ? attr : attr.slice(0, i)).trim().toLowerCase();
      const val = i < 0 ? "" : attr.slice(i + 1).trim();
      if (key === "path" && val.startsWith("/")) cookie.path = val;
      else if (key === "domain" && val) {
        const domain = val.replace(/^\./, "").toLowerCase();
        if (url.hostname !== domain && !url.hostname.endsWith(`.${domain}`)) continue;
        cookie.host = domain;
        cookie.hostOnly = false;
      } else if (key === "max-age" && /^-?\d+$/.test(val)) maxAge = Number(val);
      else if (key === "expires") {
        const t = Date.parse(val);
        if (!Number.isNaN(t)) cookie.expires = t;
      }
    }
    if (maxAge !== undefined) cookie.expires = maxAge <= 0 ? 0 : Date.now() + maxAge * 1000;
    jar = jar.filter((c) => !(c.name === cookie.name && c.host === cookie.host && c.path === cookie.path));
    if (cookie.expires > Date.now()) jar.push(cookie);
  }
}

function cookieHeader(url) {
  const now = Date.now();
  const path = url.pathname;
  const sent = jar
    .filter((c) => c.expires > now)
    .filter((c) => (c.hostOnly ? c.host === url.hostname
      : url.hostname === c.host || url.hostname.endsWith(`.${c.host}`)))
    .filter((c) => path === c.path || (path.startsWith(c.path)
      && (c.path.endsWith("/") || path[c.path.length] === "/")))
    .sort((a, b) => b.path.length - a.path.length);
  return sent.map((c) => `${c.name}=${c.value}`).join("; ");
}

// --- HTML forms ------------------------------------------------------------------

const decode = (s) => s
  .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
  .replace(/&#(\d+);/g, (_, d) => String.fromCodePoint(Number(d)))
  .replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
  .replace(/&amp;/g, "&");

function attributes(tagInside) {
  const attrs = {};
  const re = /([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g;
  for (const m of tagInside.matchAll(re)) {
    attrs[m[1].toLowerCase()] = decode(m[2] ?? m[3] ?? m[4] ?? "");
  }
  return attrs;
}

function forms(html) {
  const found = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributes(m[1]);
    const controls = [];
    for (const c of m[2].matchAll(/<(input|button)\b([^>]*)>/gi)) {
      controls.push({ tag: c[1].toLowerCase(), ...attributes(c[2]) });
    }
    found.push({ action: attrs.action ?? "", method: (attrs.method ?? "get").toLowerCase(), id: attrs.id, controls });
  }
  return found;
}

/** The form to submit on this page and its fields, or null. */
function fill(html) {
  for (const form of forms(html)) {
    const hidden = form.controls.filter((c) => c.tag === "input" && c.type === "hidden" && c.name);
    const fields = new URLSearchParams(hidden.map((c) => [c.name, c.value ?? ""]));
    if (form.controls.some((c) => c.tag === "input" && c.name === "login")) {
      fields.set("login", opts.login);
      fields.set("password", opts.password);
      return { form, fields, kind: "login" };
    }
    if (form.controls.some((c) => c.name === "decision")) {
      fields.set("decision", opts.deny ? "deny" : "approve");
      return { form, fields, kind: "consent" };
    }
  }
  return null;
}

// --- the walk ----------------------------------------------------------------------

const isCallback = (url) => url.pathname.endsWith("/oauth/callback");

let url;
try {
  url = new URL(positionals[0]);
} catch {
  giveUp(2, `not a URL: ${positionals[0]}`);
}
let method = "GET";
let body;

for (;;) {
  if (!LOOPBACK.has(url.hostname)) giveUp(5, `refusing a non-loopback URL: ${url.href}`);
  if (hops.length >= MAX_HOPS) giveUp(5, `gave up after ${MAX_HOPS} requests (a redirect loop?) at ${url.href}`);
  const callback = isCallback(url);
  if (callback && opts["stop-at-callback"]) {
    out({ callback: url.href, hops });
    process.exit(0);
  }
  hops.push(url.href);
  const headers = { accept: "text/html,application/xhtml+xml,*/*;q=0.8", "user-agent": "toolgate-test-user-agent/1" };
  const cookies = cookieHeader(url);
  if (cookies) headers.cookie = cookies;
  if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
  let res;
  try {
    res = await fetch(url, { method, headers, body, redirect: "manual" });
  } catch (e) {
    giveUp(4, `${method} ${url.href} failed: ${e.cause?.message ?? e.message}`);
  }
  storeCookies(url, res.headers);
  const location = res.headers.get("location");
  const redirect = [301, 302, 303, 307, 308].includes(res.status) && location;

  if (redirect && !callback) {
    await res.arrayBuffer();
    url = new URL(location, url);
    if (res.status !== 307 && res.status !== 308) {
      method = "GET";
      body = undefined;
    }
    continue;
  }

  const text = await res.text();
  const final = {
    status: res.status,
    url: url.href,
    body: text.slice(0, 4000),
    hops,
    ...(redirect ? { location: new URL(location, url).href } : {}),
    ...(opts["stop-at-callback"] ? { callback: null } : {}),
  };
  if (callback || res.status >= 300) {
    out(final);
    process.exit(0);
  }
  const next = fill(text);
  if (!next) giveUp(3, `no login or consent form on ${url.href} (HTTP ${res.status})`, final);
  if (next.form.method !== "post") giveUp(3, `the ${next.kind} form on ${url.href} is not method=post`, final);
  url = new URL(next.form.action || url.href, url);
  method = "POST";
  body = next.fields.toString();
}
