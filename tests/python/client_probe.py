"""A scripted MCP client driven by toolgate's Rust integration tests.

Built on the official Python SDK, `mcp` 2.3.0 (`mcp.client.Client`).

Usage:
    python client_probe.py [--transport http|sse] --url URL [OPTIONS] SCRIPT_JSON
    python client_probe.py --transport stdio --command '["prog", "arg", ...]' [OPTIONS] SCRIPT_JSON

    OPTIONS: [--mode auto|legacy|2026-07-28] [--no-sampling] [--elicit CONTENT_JSON] [--timeout SECONDS]

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
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
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
        return ElicitResult(action="accept", content=self.elicit_content)

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
        deadline = asyncio.get_running_loop().time() + float(step.get("within", 60))
        while not os.path.exists(wait):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{wait} did not appear")
            await asyncio.sleep(0.02)
    return {}


async def run_step(client: Client, step: dict[str, Any]) -> dict[str, Any]:
    op = step.get("op")
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
    return args.url


async def run(args: argparse.Namespace, steps: list[dict[str, Any]]) -> int:
    probe = Probe(args.elicit)
    target = args.url if args.transport != "stdio" else " ".join(args.command)
    client = Client(
        server_of(args),
        mode=args.mode,
        read_timeout_seconds=args.timeout,
        sampling_callback=None if args.no_sampling else probe.sampling,
        elicitation_callback=None if args.elicit is None else probe.elicitation,
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
            "steps": [await run_step(client, step) for step in steps],
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
    parser.add_argument("--timeout", type=float, default=30.0, help="read timeout per request, seconds")
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
