"""A scripted MCP client driven by toolgate's Rust integration tests.

Built on the official Python SDK, `mcp` 2.3.0 (`mcp.client.Client`).

Usage:
    python client_probe.py [--transport http|sse] --url URL [OPTIONS] SCRIPT_JSON
    python client_probe.py --transport stdio --command '["prog", "arg", ...]' [OPTIONS] SCRIPT_JSON

    OPTIONS: [--mode auto|legacy|2026-07-28] [--no-sampling] [--elicit CONTENT_JSON]
             [--url-elicitation] [--timeout SECONDS] [--bearer API_KEY]

Transports (the SDK's own client transports):
- `http` (default): Streamable HTTP to URL, e.g. http://127.0.0.1:8080/mcp.
- `sse`: the legacy HTTP+SSE transport; URL is the event stream, e.g.
  http://127.0.0.1:8080/sse (the server's `endpoint` event names where to POST).
- `stdio`: launches the JSON list given with `--command` (program, then
  arguments) and speaks over its stdin/stdout. The child gets the SDK's default
  environment plus `TOOLGATE_LOG` and `TOOLGATE_LOG_FORMAT` when they are set;
  its stderr goes to this script's stderr.

SCRIPT_JSON is a JSON list of steps (or `@path` to read it from a file, or `-`
for stdin). Steps run in order on one connection:

    {"op": "list_tools"}
    {"op": "list_resources"}
    {"op": "list_resource_templates"}
    {"op": "read_resource", "uri": "notes://readme"}
    {"op": "call_tool", "name": "count_down", "arguments": {"n": 3}, "progress": true}
    {"op": "list_prompts"}
    {"op": "get_prompt", "name": "review_code", "arguments": {"language": "rust", "code": "x"}}
    {"op": "set_logging_level", "level": "debug"}        (handshake-era servers only)
    {"op": "sync", "signal": "/tmp/a", "wait": "/tmp/b"} (creates the file `signal`, then waits
                                                          for `wait` to exist: the test acts meanwhile)
    {"op": "call_tool_url", "name": "whoami", "arguments": {}, "signal": "/tmp/a", "wait": "/tmp/b"}
                                                         (URL-mode elicitation, see below)

`call_tool` accepts `"progress": true` to pass a progress callback (so the
request carries a progress token); the progress updates received for that
call are reported in the step as `"progress": [{"progress", "total",
"message"}]`.

The connection uses the SDK's mode (`auto` by default: probe
`server/discover`, fall back to `initialize` on a pre-2026 server). A sampling
callback is always installed (unless `--no-sampling`): it answers
`sampling/createMessage` with the text `"sampled: <text of the first user
message>"` (model "probe-model", stopReason "endTurn").
With `--elicit CONTENT_JSON` an elicitation callback is installed too: it
accepts every `elicitation/create` with that content.

`--url-elicitation` (MCP 2025-11-25 URL mode) installs the elicitation
callback even without `--elicit`. Note that the SDK declares
`elicitation: {form: {}, url: {}}` whenever an elicitation callback is
installed, so `--elicit` alone declares URL mode as well; with neither option
there is no elicitation capability at all. The callback records every
`elicitation/create` in `elicitation_requests` and answers a URL-mode one with
`{"action": "accept"}` (the user agreed to open the URL; nothing is fetched),
a form-mode one with `--elicit`'s content, or `{"action": "decline"}` without it.

`call_tool_url` (`within`: seconds to wait for `wait`, default 60;
`complete_within`: seconds to wait for the completion notification, default 10):
1. calls the tool;
2. if that fails with -32042 (URLElicitationRequiredError), writes the `url`
   of the first entry of the error's `data.elicitations` into the file `signal`
   (atomically: `signal`.tmp, then rename), waits for the file `wait` to exist
   (the test runs the user agent meanwhile), waits up to `complete_within`
   seconds for a `notifications/elicitation/complete` naming that
   `elicitationId` (one that arrived earlier counts), then calls the tool again;
   if the first call did anything else, `signal` gets an empty file at once
   (so the test need not wait) and nothing else is done.
Its step output:

    {"op": "call_tool_url",
     "ok": <the retry's ok; the first call's when no URL elicitation was required>,
     "result" | "error": <the retry's (else the first call's), as in call_tool>,
     "first": {"ok": ..., "result" | "error": ...},
     "elicitation_required": true | false,
     "elicitations": [{"mode": "url", "elicitationId", "url", "message"}...],
     "signalled_url": <the URL written to `signal`> | null,
     "complete": {"received": true | false, "params": {"elicitationId": ...} | null,
                  "before_wait": <it had arrived before `wait` existed>,
                  "waited_ms": <after `wait` existed>},
     "retry": {"ok": ..., "result" | "error": ...}}

(`elicitations`, `signalled_url`, `complete` and `retry` only when a URL
elicitation was required.) The completion notification also appears in
`notifications`.

Output: exactly one JSON object on stdout:

    {"negotiated_version": "2025-11-25",
     "server_info": {"name": ..., "version": ...} | null,
     "mode_used": "legacy" | "modern",
     "steps": [{"op": ..., "ok": true, "result": {...}}
               | {"op": ..., "ok": false, "error": {"code": ..., "message": ..., "data"?: ...}}],
     "sampling_requests": [<CreateMessageRequestParams as JSON>...],
     "elicitation_requests": [<ElicitRequestParams as JSON>...],
     "notifications": [{"method": ..., "params": {...}}...]}

`result` is the SDK result's `model_dump(mode="json", by_alias=True,
exclude_none=True)`. `mode_used` is "modern" when the SDK adopted a
`server/discover` result (in `--mode 2026-07-28` one it made up itself: the
explicit mode sends no probe) and "legacy" when it fell back to (or was told to
use) the `initialize` handshake. `server_info` is null in the explicit modern
mode, since no discover result or `initialize` answer named the server. `notifications` lists the server notifications
(log messages, list changes, ...) in arrival order; progress notifications are
reported per step instead.

Exit status: 0 once connected, whatever the steps did (the test judges);
1 when the connection could not be made (reason on stderr, with a traceback
when CLIENT_PROBE_TRACEBACK is set); 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
import warnings
from typing import Any

from mcp.client import Client, ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    URL_ELICITATION_REQUIRED,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ServerNotification,
    TextContent,
)
from pydantic import BaseModel

# The probe deliberately exercises deprecated features (sampling, logging).
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


def dump(value: Any) -> Any:
    """The JSON form of an SDK value, as the wire would carry it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


class Probe:
    """Collects what the server sends back besides results."""

    def __init__(self, elicit_content: dict[str, Any] | None = None) -> None:
        self.sampling_requests: list[Any] = []
        self.elicitation_requests: list[Any] = []
        self.notifications: list[Any] = []
        self.elicit_content = elicit_content

    async def elicitation(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.elicitation_requests.append(dump(params))
        if getattr(params, "mode", None) == "url":
            return ElicitResult(action="accept")
        if self.elicit_content is None:  # only --url-elicitation: no form content to give
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=self.elicit_content)

    def elicitation_complete(self, elicitation_id: str) -> dict[str, Any] | None:
        """The params of a received `notifications/elicitation/complete` for that id, if any."""
        for n in self.notifications:
            params = n.get("params") or {}
            if n.get("method") == "notifications/elicitation/complete" and params.get("elicitationId") == elicitation_id:
                return params
        return None

    async def sampling(self, context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        self.sampling_requests.append(dump(params))
        first = next((m for m in params.messages if m.role == "user"), None)
        text = ""
        if first is not None:
            blocks = first.content if isinstance(first.content, list) else [first.content]
            text = next((b.text for b in blocks if isinstance(b, TextContent)), "")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=f"sampled: {text}"),
            model="probe-model",
            stop_reason="endTurn",
        )

    async def on_message(self, message: Any) -> None:
        if isinstance(message, ServerNotification):
            method = getattr(message, "method", None)
            params = getattr(message, "params", None)
            if method == "notifications/progress":
                return  # reported per step through the progress callback
            self.notifications.append({"method": method, "params": dump(params)})
        elif isinstance(message, Exception):
            print(f"client_probe: transport error: {message!r}", file=sys.stderr)


def leaves(error: BaseException) -> list[BaseException]:
    """The innermost errors of an exception group (anyio wraps transport failures in groups)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def sync(step: dict[str, Any]) -> dict[str, Any]:
    """Creates the file `signal` names (if any), then waits until the one `wait` names exists."""
    if signal := step.get("signal"):
        with open(signal, "w", encoding="utf-8"):
            pass
    if wait := step.get("wait"):
        await wait_for_file(wait, float(step.get("within", 60)))
    return {}


def write_atomically(path: str, text: str) -> None:
    """Writes `text` to path+".tmp", then renames it to `path` (the reader never sees half a file)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


async def wait_for_file(path: str, within: float) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not os.path.exists(path):
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{path} did not appear")
        await asyncio.sleep(0.02)


async def attempt(call: Any) -> dict[str, Any]:
    """Awaits `call`: {"ok": true, "result"} or {"ok": false, "error": {"code", "message", "data"?}}."""
    try:
        result = await call
    except MCPError as e:
        error: dict[str, Any] = {"code": e.error.code, "message": e.error.message}
        if e.error.data is not None:
            error["data"] = e.error.data
        return {"ok": False, "error": error}
    except Exception as e:  # the test judges; report instead of dying
        return {"ok": False, "error": {"code": None, "message": f"{type(e).__name__}: {e}"}}
    return {"ok": True, "result": dump(result)}


async def call_tool_url(client: Client, probe: Probe, step: dict[str, Any]) -> dict[str, Any]:
    """The `call_tool_url` step: a tool call that may need a URL-mode elicitation first."""
    out: dict[str, Any] = {"op": "call_tool_url"}
    first = await attempt(client.call_tool(step["name"], step.get("arguments")))
    out["first"] = first
    error = first.get("error") or {}
    data = error.get("data")
    elicitations = data.get("elicitations") if isinstance(data, dict) else None
    required = error.get("code") == URL_ELICITATION_REQUIRED and isinstance(elicitations, list) and bool(elicitations)
    out["elicitation_required"] = required
    signal = step.get("signal")
    if not required:
        if signal:
            write_atomically(signal, "")
        out.update({k: v for k, v in first.items()})
        return out

    out["elicitations"] = elicitations
    target = elicitations[0] if isinstance(elicitations[0], dict) else {}
    url = target.get("url")
    elicitation_id = target.get("elicitationId")
    out["signalled_url"] = url
    if signal:
        write_atomically(signal, url or "")
    complete: dict[str, Any] = {"received": False, "params": None, "before_wait": False, "waited_ms": 0}
    try:
        if wait := step.get("wait"):
            await wait_for_file(wait, float(step.get("within", 60)))
        loop = asyncio.get_running_loop()
        started = loop.time()
        params = probe.elicitation_complete(elicitation_id)
        complete["before_wait"] = params is not None
        deadline = started + float(step.get("complete_within", 10))
        while params is None and loop.time() < deadline:
            await asyncio.sleep(0.02)
            params = probe.elicitation_complete(elicitation_id)
        complete.update(received=params is not None, params=params, waited_ms=round((loop.time() - started) * 1000))
    except TimeoutError as e:
        out["complete"] = complete
        out.update(ok=False, error={"code": None, "message": f"TimeoutError: {e}"})
        return out
    out["complete"] = complete
    retry = await attempt(client.call_tool(step["name"], step.get("arguments")))
    out["retry"] = retry
    out.update({k: v for k, v in retry.items()})
    return out


async def run_step(client: Client, step: dict[str, Any], probe: Probe | None = None) -> dict[str, Any]:
    op = step.get("op")
    if op == "call_tool_url" and probe is not None:
        try:
            return await call_tool_url(client, probe, step)
        except Exception as e:  # a malformed step (no name, unwritable signal...): report it
            return {"op": op, "ok": False, "error": {"code": None, "message": f"{type(e).__name__}: {e}"}}
    out: dict[str, Any] = {"op": op}
    progress: list[dict[str, Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "total": total, "message": message})

    try:
        match op:
            case "list_tools":
                result = await client.list_tools()
            case "list_resources":
                result = await client.list_resources()
            case "list_resource_templates":
                result = await client.list_resource_templates()
            case "read_resource":
                result = await client.read_resource(step["uri"])
            case "call_tool":
                result = await client.call_tool(
                    step["name"],
                    step.get("arguments"),
                    progress_callback=on_progress if step.get("progress") else None,
                )
            case "list_prompts":
                result = await client.list_prompts()
            case "get_prompt":
                result = await client.get_prompt(step["name"], step.get("arguments"))
            case "set_logging_level":
                result = await client.set_logging_level(step["level"])
            case "sync":
                result = await sync(step)
            case _:
                raise ValueError(f"unknown op: {op!r}")
    except MCPError as e:
        error: dict[str, Any] = {"code": e.error.code, "message": e.error.message}
        if e.error.data is not None:
            error["data"] = e.error.data
        out.update(ok=False, error=error)
    except Exception as e:  # the test judges; report instead of dying
        out.update(ok=False, error={"code": None, "message": f"{type(e).__name__}: {e}"})
    else:
        out.update(ok=True, result=dump(result))
    if step.get("progress"):
        out["progress"] = progress
    return out


# Variables the stdio child gets on top of the SDK's default environment.
PASSED_ENV = ("TOOLGATE_LOG", "TOOLGATE_LOG_FORMAT")


def server_of(args: argparse.Namespace) -> Any:
    """What `Client` connects to for the chosen transport."""
    if args.transport == "stdio":
        program, *rest = args.command
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        return StdioServerParameters(command=program, args=rest, env=env or None)
    if args.transport == "sse":
        return sse_client(args.url, sse_read_timeout=args.timeout)
    if args.bearer:
        # The SDK's own transport, with the credential on every request.
        import httpx2  # the SDK's HTTP client

        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {args.bearer}"}, timeout=httpx2.Timeout(args.timeout)
        )
        return streamable_http_client(args.url, http_client=http)
    return args.url


async def run(args: argparse.Namespace, steps: list[dict[str, Any]]) -> int:
    probe = Probe(args.elicit)
    target = args.url if args.transport != "stdio" else " ".join(args.command)
    client = Client(
        server_of(args),
        mode=args.mode,
        read_timeout_seconds=args.timeout,
        sampling_callback=None if args.no_sampling else probe.sampling,
        elicitation_callback=probe.elicitation if args.elicit is not None or args.url_elicitation else None,
        message_handler=probe.on_message,
        log_level="debug",
        cache=None,  # every step must reach the server (through the gateway)
    )
    try:
        await client.__aenter__()
    except Exception as e:  # any failure to connect is reported the same way
        reasons = "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves(e))
        print(f"client_probe: cannot connect to {target}: {reasons}", file=sys.stderr)
        if os.environ.get("CLIENT_PROBE_TRACEBACK"):
            traceback.print_exc(file=sys.stderr)
        return 1
    try:
        session = client.session
        report: dict[str, Any] = {
            "negotiated_version": client.protocol_version,
            "server_info": dump(client.server_info),
            "mode_used": "modern" if session.discover_result is not None else "legacy",
            "steps": [await run_step(client, step, probe) for step in steps],
            "sampling_requests": probe.sampling_requests,
            "elicitation_requests": probe.elicitation_requests,
            "notifications": probe.notifications,
        }
    finally:
        try:
            await client.__aexit__(None, None, None)
        except Exception as e:  # closing errors must not hide the report
            print(f"client_probe: error while closing: {e!r}", file=sys.stderr)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0


def load_script(raw: str) -> list[dict[str, Any]]:
    if raw == "-":
        text = sys.stdin.read()
    elif raw.startswith("@"):
        with open(raw[1:], encoding="utf-8") as f:
            text = f.read()
    else:
        text = raw
    steps = json.loads(text)
    if not isinstance(steps, list) or not all(isinstance(s, dict) and "op" in s for s in steps):
        raise ValueError("SCRIPT_JSON must be a JSON list of objects with an 'op' field")
    return steps


def parse_command(raw: str) -> list[str]:
    """`--command`: a non-empty JSON list of strings."""
    command = json.loads(raw)
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError("--command must be a non-empty JSON list of strings")
    return command


def main() -> int:
    parser = argparse.ArgumentParser(description="Scripted MCP client for toolgate's integration tests.")
    parser.add_argument("--transport", choices=("http", "sse", "stdio"), default="http", help="default http")
    parser.add_argument("--url", help="http: the MCP endpoint; sse: the event-stream URL")
    parser.add_argument("--command", help='stdio: the server to launch, as a JSON list ["prog", "arg", ...]')
    parser.add_argument("--mode", default="auto", help="auto (default), legacy, or a modern version such as 2026-07-28")
    parser.add_argument("--no-sampling", action="store_true", help="do not declare the sampling capability")
    parser.add_argument(
        "--elicit", type=json.loads, help="accept every elicitation with this JSON object as its content"
    )
    parser.add_argument(
        "--url-elicitation",
        action="store_true",
        help="declare elicitation {form, url} (MCP 2025-11-25 URL mode) and accept URL-mode elicitations",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="read timeout per request, seconds")
    parser.add_argument("--bearer", help="http: send `Authorization: Bearer BEARER` on every request (an API key)")
    parser.add_argument("script", help="JSON list of steps, @file, or - for stdin")
    args = parser.parse_args()
    if args.transport == "stdio":
        if args.command is None or args.url is not None:
            parser.error("--transport stdio takes --command and no --url")
        try:
            args.command = parse_command(args.command)
        except ValueError as e:
            parser.error(str(e))
    elif args.url is None or args.command is not None:
        parser.error(f"--transport {args.transport} takes --url and no --command")
    try:
        steps = load_script(args.script)
    except (OSError, ValueError) as e:
        print(f"client_probe: bad script: {e}", file=sys.stderr)
        return 2
    return asyncio.run(run(args, steps))


if __name__ == "__main__":
    sys.exit(main())
