#!/usr/bin/env python3
"""A real host's tool loop in front of toolgate's search listing (issue 38),
driven by toolgate's Rust integration tests (tests/integration/hosts.rs).

The host is pydantic-ai's `Agent` (pinned in tests/requirements.txt) with
one `MCPToolset` connected to toolgate, and a scripted model
(`FunctionModel`) in place of an LLM. Like Claude Code, Codex or Cursor,
pydantic-ai declares to the model exactly the tools `tools/list` returned,
and its tool loop refuses a call of any other name ("Unknown tool name", a
retry prompt back to the model) without sending anything to the server.

The scripted model uses only what the framework gives it: the tool
definitions of `AgentInfo.function_tools`, the user prompt (the tasks, as
JSON) and the tool results in the message history. It recognises the
search listing's tools by their input schemas (the search tool takes
`query`, the describe tool `tools`, the call tool `name` and `arguments`),
then for each task: searches with the task's query, fetches the full
definitions of every tool the search returned, and calls each of them
through the call tool with arguments built from its fetched `inputSchema`
(every required property: the task's value for that name if it has one,
else the schema's default, its first enum value, or a value of its type).
After the first description fetch it also tries, as a model that read the
search result would, to call the first found tool by its own name; the
host must refuse that name, which it never listed.

Usage:
  host_loop.py --transport http --url URL [--mode MODE] TASKS_JSON
  host_loop.py --transport stdio --command '["toolgate", "stdio", ...]' [--mode MODE] TASKS_JSON

  MODE: the FastMCP client's era negotiation: legacy (the initialize
  handshake and a session, 2025-11-25), auto (its default: probes
  server/discover, so 2026-07-28 with toolgate), or a pinned 2026-07-28.

  TASKS_JSON: [{"query": "...", "limit": N, "values": {"param": value, ...}}, ...]

Output: one JSON object on stdout:
  {"host": {"pydantic_ai", "fastmcp"}, "mode_used": "legacy"|"modern",
   "negotiated_version", "instructions", "listed": [names declared to the model],
   "searches": [{"query", "found": [...]}], "found": [unique, in order],
   "described": [names whose full definition came back],
   "calls": {name: {"arguments", "ok", "outcome", "result" | "error", "cause"}}
   (through the call tool; an upstream tool error is a retry prompt, ok false),
   "called": [names], "failed": [names whose call came back as an error],
   "direct": {"name", "outcome", "cause", "refused", "message"} (refused: the
   host's own "unknown_tool" retry prompt),
   "wire_calls": [{"name", "arguments"}] (every tools/call the host sent),
   "unlisted_sent": [wire names the host had not listed], "output": the run's output}
Exit status: 0 once the run completed (the test judges), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from importlib.metadata import version
from typing import Any

import fastmcp
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

# Variables the stdio child gets on top of the SDK's default environment.
PASSED_ENV = ("TOOLGATE_LOG", "TOOLGATE_LOG_FORMAT")


def jsonable(value: Any) -> Any:
    """A tool return as the model saw it, in JSON (binary parts summarised)."""
    if isinstance(value, BinaryContent):
        return {"binary": value.media_type, "bytes": len(value.data)}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def loaded(value: Any) -> Any:
    """A tool result as data: pydantic-ai hands JSON text over already parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def requires(tool: ToolDefinition, *names: str) -> bool:
    """Whether `tool`'s input schema requires (at least) these parameters."""
    schema = tool.parameters_json_schema or {}
    return set(names) <= set(schema.get("required") or [])


def value_for(name: str, schema: dict[str, Any], values: dict[str, Any]) -> Any:
    """An argument for parameter `name` of this schema."""
    if name in values:
        return values[name]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {
        "integer": 1,
        "number": 1,
        "boolean": True,
        "array": [],
        "object": {},
    }.get(kind, "toolgate")


def build_arguments(input_schema: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: every required property of its fetched input schema."""
    properties = input_schema.get("properties") or {}
    return {name: value_for(name, properties.get(name) or {}, values) for name in input_schema.get("required") or []}


class ScriptedModel:
    """The model: a function of what the framework shows it (tools, prompt, results)."""

    def __init__(self, toolset: MCPToolset) -> None:
        self.toolset = toolset
        self.report: dict[str, Any] = {
            "listed": [],
            "instructions": None,
            "searches": [],
            "found": [],
            "described": [],
            "calls": {},
            "direct": None,
        }
        self.tasks: list[dict[str, Any]] = []
        self.task = -1
        self.definitions: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, tuple[str, Any]] = {}  # tool_call_id -> (what, detail)
        self.tools: dict[str, str] = {}  # role -> listed name
        self.ids = 0
        self.stage = "done"
        self.done = False

    def call(self, tool: str, args: dict[str, Any], what: str, detail: Any = None) -> ToolCallPart:
        self.ids += 1
        call_id = f"host-call-{self.ids}"
        self.pending[call_id] = (what, detail)
        return ToolCallPart(tool_name=tool, args=args, tool_call_id=call_id)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if not self.tasks:
            return self.start(last, info)
        if isinstance(last, ModelRequest):
            for part in last.parts:
                self.observe(part)
        return self.next()

    def start(self, first: ModelMessage, info: AgentInfo) -> ModelResponse:
        # What the framework declares to the model: the tools (and the server's instructions).
        self.report["listed"] = [t.name for t in info.function_tools]
        self.report["instructions"] = info.instructions
        client = self.toolset.client
        self.report["negotiated_version"] = client.protocol_version
        self.report["mode_used"] = "legacy" if client.initialize_result is not None else "modern"
        # The search listing's tools, recognised by what they take.
        for role, needs in (("search", ("query",)), ("describe", ("tools",)), ("call", ("name", "arguments"))):
            named = [t.name for t in info.function_tools if requires(t, *needs)]
            if len(named) != 1:
                raise RuntimeError(f"the listing has {len(named)} tools that take {needs}: {self.report['listed']}")
            self.tools[role] = named[0]
        prompt = next(p for p in first.parts if isinstance(p, UserPromptPart))
        self.tasks = json.loads(prompt.content if isinstance(prompt.content, str) else prompt.content[0])
        return self.next()

    def observe(self, part: Any) -> None:
        call_id = getattr(part, "tool_call_id", None)
        if call_id not in self.pending:
            return
        what, detail = self.pending.pop(call_id)
        # A call the host answered itself or the server refused comes back as a retry prompt
        # (a `ToolReturnPart` with `outcome="retried"`, or a legacy `RetryPromptPart`).
        outcome = "retried" if isinstance(part, RetryPromptPart) else getattr(part, "outcome", "success")
        retry = getattr(part, "retry", None)
        cause = getattr(retry, "cause", None)
        ok = outcome == "success"
        content = part.content
        if what == "search":
            found = [t["name"] for t in loaded(content)["tools"]] if ok else []
            self.report["searches"].append({"query": detail, "found": found, "error": None if ok else str(content)})
            for name in found:
                if name not in self.report["found"]:
                    self.report["found"].append(name)
        elif what == "describe":
            if ok:
                for name, definition in loaded(content).items():
                    self.definitions[name] = definition
                    if name not in self.report["described"]:
                        self.report["described"].append(name)
        elif what == "direct":
            self.report["direct"] = {
                "name": detail,
                "outcome": outcome,
                "cause": cause,
                "refused": outcome == "retried" and cause == "unknown_tool",
                "message": jsonable(content),
            }
        elif what == "call":
            name, arguments = detail
            entry: dict[str, Any] = {"arguments": arguments, "ok": ok, "outcome": outcome}
            if ok:
                entry["result"] = jsonable(content)
            else:
                entry["error"] = jsonable(content)
                entry["cause"] = cause
            self.report["calls"][name] = entry

    def next(self) -> ModelResponse:
        if self.pending:
            raise RuntimeError(f"results missing for {sorted(self.pending)}")
        if self.stage == "done":
            self.task += 1
            self.stage = "search"
        if self.task >= len(self.tasks):
            self.done = True
            return ModelResponse(parts=[TextPart(json.dumps({"tasks": len(self.tasks)}))])
        task = self.tasks[self.task]
        if self.stage == "search":
            self.stage = "describe"
            args = {"query": task["query"]}
            if "limit" in task:
                args["limit"] = task["limit"]
            return ModelResponse(parts=[self.call(self.tools["search"], args, "search", task["query"])])
        found = self.report["searches"][-1]["found"]
        if not found:
            self.stage = "done"
            return self.next()
        if self.stage == "describe":
            self.stage = "direct" if self.report["direct"] is None else "call"
            return ModelResponse(parts=[self.call(self.tools["describe"], {"tools": found}, "describe")])
        values = task.get("values") or {}
        if self.stage == "direct":
            # A model that takes the search result at its word calls the tool by its own name.
            self.stage = "call"
            name = found[0]
            arguments = build_arguments(self.definitions.get(name, {}).get("inputSchema") or {}, values)
            return ModelResponse(parts=[self.call(name, arguments, "direct", name)])
        # Every tool found, through the call tool, in one turn (as parallel tool calls).
        self.stage = "done"
        parts = []
        for name in found:
            arguments = build_arguments(self.definitions.get(name, {}).get("inputSchema") or {}, values)
            parts.append(self.call(self.tools["call"], {"name": name, "arguments": arguments}, "call", (name, arguments)))
        return ModelResponse(parts=parts)


def make_client(args: argparse.Namespace) -> fastmcp.Client:
    if args.transport == "stdio":
        command = json.loads(args.command)
        # Merged over the SDK's default environment (PATH, HOME, ...).
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        transport = StdioTransport(command=command[0], args=command[1:], env=env)
    else:
        transport = StreamableHttpTransport(args.url)
    return fastmcp.Client(transport, mode=args.mode, timeout=args.timeout)


async def run(args: argparse.Namespace, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    wire: list[dict[str, Any]] = []

    async def record(ctx: Any, call_tool: Any, name: str, tool_args: dict[str, Any]) -> Any:
        # The host's own hook around every tools/call it sends to the server.
        wire.append({"name": name, "arguments": tool_args})
        return await call_tool(name, tool_args)

    toolset = MCPToolset(
        make_client(args),
        include_instructions=True,
        process_tool_call=record,
        # Upstream tool errors are retry prompts to the model: let it make all its calls.
        max_retries=100,
    )
    model = ScriptedModel(toolset)
    agent = Agent(FunctionModel(model, model_name="scripted-host-model"), toolsets=[toolset], retries=2)
    result = await agent.run(json.dumps(tasks))
    report = model.report
    report["host"] = {"pydantic_ai": version("pydantic-ai-slim"), "fastmcp": version("fastmcp-slim")}
    report["completed"] = model.done
    report["output"] = result.output
    report["wire_calls"] = wire
    report["unlisted_sent"] = [c["name"] for c in wire if c["name"] not in report["listed"]]
    report["called"] = list(report["calls"])
    report["failed"] = [name for name, call in report["calls"].items() if not call["ok"]]
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=["http", "stdio"], default="http")
    parser.add_argument("--url")
    parser.add_argument("--command", help="JSON list: program and arguments (stdio)")
    parser.add_argument("--mode", default="auto", help="legacy, auto or a modern version such as 2026-07-28")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("tasks", help="JSON list of tasks")
    args = parser.parse_args()
    if (args.transport == "stdio") != (args.command is not None) or (args.transport == "http") != (args.url is not None):
        parser.error("http takes --url, stdio takes --command")
    try:
        report = asyncio.run(run(args, json.loads(args.tasks)))
    except Exception as e:  # noqa: BLE001 - the test wants the reason
        print(f"host_loop.py: the run failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
