"""A minimal modern-only (2026-07-28) MCP server over Streamable HTTP, for
toolgate's upstream-leg tests. Standard library only.

Usage: python modern_echo_server.py --port 0

Prints `LISTENING http://127.0.0.1:<port>/mcp` once it accepts connections.
Every POST must carry the 2026-07-28 envelope; GET and DELETE get 405.
`server/discover` answers with serverInfo in `_meta`. Tools:
- `echo_headers` (arguments `region` → `x-mcp-header: Region`, `note` →
  `Note`, `count` (integer) → `Count`, `flag` (boolean) → `Flag`): returns, as
  JSON text, the request's HTTP headers (lower-cased names; one sent twice
  as "a, b") and its `params._meta`, so a test can see what toolgate sent;
  its result carries the server's own `serverInfo` in `_meta`;
- `bad_number_header`: an `x-mcp-header` on a `number` property (invalid: a
  client must leave the tool out).
Anything else gets -32601 (HTTP 404).
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "2026-07-28"

TOOLS = [
    {
        "name": "echo_headers",
        "description": "Echoes the request's headers and envelope.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "note": {"type": "string", "x-mcp-header": "Note"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            },
        },
    },
    {
        "name": "bad_number_header",
        "description": "Declares a header on a number (invalid).",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}},
    },
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        rid = message.get("id")
        meta = (message.get("params") or {}).get("_meta") or {}
        if rid is None:
            # Notifications have no place in this era's HTTP leg.
            return self.reply(404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "no notifications"}})
        if "io.modelcontextprotocol/protocolVersion" not in meta or "io.modelcontextprotocol/clientCapabilities" not in meta:
            return self.reply(400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "missing _meta envelope"}})
        if self.headers.get("MCP-Protocol-Version") != meta["io.modelcontextprotocol/protocolVersion"]:
            return self.reply(400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32020, "message": "version header mismatch"}})
        if meta["io.modelcontextprotocol/protocolVersion"] != VERSION:
            data = {"supported": [VERSION], "requested": meta["io.modelcontextprotocol/protocolVersion"]}
            return self.reply(400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "unsupported", "data": data}})
        if self.headers.get("Mcp-Method") != message.get("method"):
            return self.reply(400, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32020, "message": "Mcp-Method mismatch"}})
        method = message.get("method")
        result = None
        if method == "server/discover":
            result = {
                "resultType": "complete",
                "supportedVersions": [VERSION],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-echo", "version": "1.0.0"}},
            }
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": TOOLS, "ttlMs": 0, "cacheScope": "public"}
        elif method == "tools/call" and message["params"].get("name") == "echo_headers":
            # A header sent twice shows as "a, b".
            headers = {k.lower(): ", ".join(self.headers.get_all(k)) for k in self.headers.keys()}
            seen = {"headers": headers, "meta": meta}
            result = {
                "resultType": "complete",
                "content": [{"type": "text", "text": json.dumps(seen)}],
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-echo", "version": "1.0.0"}},
            }
        if result is None:
            return self.reply(404, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"LISTENING http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
