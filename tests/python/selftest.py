"""Self-test of the Python test peers: client_probe.py against upstream_server.py.

Run by tests/run.sh before the Rust tests, so a broken peer (or an SDK change
under a new pin) shows up as a peer failure instead of as a confusing gateway
failure. Connects the two directly, without toolgate:

- HTTP, client mode auto: the 2.3.0 server answers `server/discover`, so the
  client adopts 2026-07-28 ("modern").
- HTTP, client mode legacy: `initialize` handshake at 2025-11-25.
- HTTP, `--legacy-only` server, client mode auto: the discover probe is
  refused like a pre-2026 server does and the client falls back to
  `initialize`.
- stdio server, client mode auto, through the probe's `--transport stdio`
  (the SDK's stdio client): the server adopts 2026-07-28 ("modern").
- legacy HTTP+SSE server (`sse` mode), through the SDK's SSE client.

Prints one line per check and a closing `N passed, N failed`; exits non-zero
when a check failed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable

SCRIPT = [
    {"op": "list_tools"},
    {"op": "list_resources"},
    {"op": "list_resource_templates"},
    {"op": "read_resource", "uri": "notes://readme"},
    {"op": "read_resource", "uri": "notes://groceries"},
    {"op": "call_tool", "name": "get_weather_forecast", "arguments": {"city": "Paris", "days": 2}},
    {"op": "call_tool", "name": "convert_currency", "arguments": {"amount": 100, "from": "USD", "to": "EUR"}},
    {"op": "call_tool", "name": "convert_currency", "arguments": {"amount": 1, "from": "XYZ", "to": "EUR"}},
    {"op": "call_tool", "name": "ask_llm_summary", "arguments": {"text": "hello world"}},
    {"op": "call_tool", "name": "count_down", "arguments": {"n": 3}, "progress": True},
    {"op": "list_prompts"},
    {"op": "get_prompt", "name": "review_code", "arguments": {"language": "rust", "code": "fn main() {}"}},
    {"op": "read_resource", "uri": "bogus://nothing"},
]

PARIS = [
    {"day": 0, "condition": "overcast", "high_c": 18, "low_c": 11, "precipitation_mm": 12},
    {"day": 1, "condition": "light rain", "high_c": 14, "low_c": 6, "precipitation_mm": 19},
]


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # report every failing check, not just the first
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        else:
            self.passed += 1
            print(f"ok   {name}")


def text_of(step: dict[str, Any]) -> str:
    return step["result"]["content"][0]["text"]


def check_report(report: dict[str, Any], version: str, mode_used: str) -> None:
    assert report["negotiated_version"] == version, report["negotiated_version"]
    assert report["mode_used"] == mode_used, report["mode_used"]
    assert report["server_info"] == {"name": "toolgate-test-upstream", "version": "1.0.0"}, report["server_info"]
    s = report["steps"]
    assert [x["op"] for x in s] == [x["op"] for x in SCRIPT]
    assert [t["name"] for t in s[0]["result"]["tools"]] == [
        "get_weather_forecast",
        "convert_currency",
        "ask_llm_summary",
        "count_down",
    ]
    assert "from" in s[0]["result"]["tools"][1]["inputSchema"]["properties"]
    assert [r["uri"] for r in s[1]["result"]["resources"]] == ["notes://readme"]
    assert [t["uriTemplate"] for t in s[2]["result"]["resourceTemplates"]] == ["notes://{name}"]
    assert s[3]["result"]["contents"][0]["text"].startswith("Test notes server.\n")
    assert s[4]["result"]["contents"][0]["text"] == "Note groceries: this is the deterministic body of note groceries."
    assert s[5]["result"]["structuredContent"] == {"city": "Paris", "days": PARIS}
    assert text_of(s[6]) == "100.00 USD = 90.00 EUR"
    assert s[7]["result"]["isError"] is True and text_of(s[7]).endswith("Unknown currency code: XYZ")
    assert text_of(s[8]) == "sampled: Summarize in one sentence: hello world"
    assert text_of(s[9]) == "liftoff after 3 ticks"
    assert [p["message"] for p in s[9]["progress"]] == ["tick 3", "tick 2", "tick 1"]
    assert [p["name"] for p in s[10]["result"]["prompts"]] == ["review_code"]
    assert [m["content"]["text"] for m in s[11]["result"]["messages"]] == [
        "Please review this rust code for bugs, style and security:",
        "```rust\nfn main() {}\n```",
    ]
    assert s[12]["ok"] is False and s[12]["error"]["code"] == -32602, s[12]
    assert len(report["sampling_requests"]) == 1
    assert report["sampling_requests"][0]["maxTokens"] == 200
    logs = [n["params"]["data"] for n in report["notifications"] if n["method"] == "notifications/message"]
    assert logs == ["tick 3", "tick 2", "tick 1"], logs


def start_http(*extra: str, transport: str = "http") -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [PY, str(HERE / "upstream_server.py"), transport, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the server listens (or dies: then "")
    if not line.startswith("LISTENING "):
        proc.kill()
        raise RuntimeError(f"upstream_server did not announce itself: {line!r}")
    return proc, line.split(" ", 1)[1].strip()


def probe(url: str, mode: str) -> dict[str, Any]:
    return run_probe(["--url", url, "--mode", mode])


def probe_stdio() -> dict[str, Any]:
    server = json.dumps([PY, str(HERE / "upstream_server.py"), "stdio"])
    return run_probe(["--transport", "stdio", "--command", server])


def run_probe(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [PY, str(HERE / "client_probe.py"), *args, json.dumps(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise RuntimeError(f"client_probe exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


async def sse_tools(url: str) -> list[str]:
    from mcp.client import Client
    from mcp.client.sse import sse_client

    async with Client(sse_client(url), mode="legacy") as client:
        return [t.name for t in (await client.list_tools()).tools]


def main() -> int:
    checks = Checks()
    # Both servers and all probes run at once: each is mostly Python start-up time.
    modern, modern_url = start_http()
    legacy, legacy_url = start_http("--legacy-only")
    sse, sse_url = start_http(transport="sse")
    try:
        with ThreadPoolExecutor(max_workers=5) as pool:
            auto = pool.submit(probe, modern_url, "auto")
            forced = pool.submit(probe, modern_url, "legacy")
            fallback = pool.submit(probe, legacy_url, "auto")
            stdio = pool.submit(probe_stdio)
            over_sse = pool.submit(lambda: asyncio.run(sse_tools(sse_url)))
            checks.check("http auto -> modern", lambda: check_report(auto.result(), "2026-07-28", "modern"))
            checks.check("http legacy -> initialize", lambda: check_report(forced.result(), "2025-11-25", "legacy"))
            checks.check(
                "http auto vs pre-2026 server -> falls back",
                lambda: check_report(fallback.result(), "2025-11-25", "legacy"),
            )
            checks.check("stdio auto -> modern", lambda: check_report(stdio.result(), "2026-07-28", "modern"))
            checks.check("legacy SSE server", lambda: check_tools(over_sse.result()))
    finally:
        for server in (modern, legacy, sse):
            server.terminate()
            server.wait(timeout=10)
    print(f"peers: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


def check_tools(names: list[str]) -> None:
    assert names == ["get_weather_forecast", "convert_currency", "ask_llm_summary", "count_down"], names


if __name__ == "__main__":
    sys.exit(main())
