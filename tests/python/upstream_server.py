"""A realistic MCP server used as an upstream of toolgate in integration tests.

Built on the official Python SDK, `mcp` 2.3.0 (`mcp.server.mcpserver.MCPServer`).
It speaks both protocol eras the SDK knows: the `initialize` handshake
(2024-11-05 .. 2025-11-25) and the 2026-07-28 `server/discover` envelope.

Usage:
    python upstream_server.py stdio
    python upstream_server.py http --port N [--legacy-only]
    python upstream_server.py sse --port N

`http` serves Streamable HTTP on 127.0.0.1:N at path /mcp. `sse` serves the
legacy HTTP+SSE transport (2024-11-05) with the SDK's own
`MCPServer.sse_app()`: `GET /sse` opens the event stream, whose `endpoint`
event names `/messages/?session_id=<hex>` for the POSTs. With `--port 0` a
free port is picked. In `http` and `sse` mode the server prints exactly one
line to stdout, flushed, once it accepts connections:

    LISTENING http://127.0.0.1:<port>/mcp     (http)
    LISTENING http://127.0.0.1:<port>/sse     (sse)

Nothing else is ever written to stdout in those modes; diagnostics go to
stderr (level from UPSTREAM_LOG_LEVEL, default WARNING). In `stdio` mode
stdout carries the protocol only.

`--legacy-only` makes the server behave like a pre-2026 (mcp 1.x) server: a
POST carrying `server/discover` is answered with HTTP 400 and the JSON-RPC
error body that 1.x returns for any non-initialize request without a session
(`{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,
"message":"Bad Request: Missing session ID"}}`). Everything else is the SDK's.

Everything the server returns is deterministic so tests can assert it exactly.
Tools returning a string also get the SDK's structured form
(`structuredContent: {"result": <text>}` and a matching `outputSchema`).

Tools (their descriptions and schemas are deliberately long, like real ones):
- `get_weather_forecast(city: str, days: int = 3)`, days in 1..7. Fake data
  derived from the city name (CRC32). Structured output (has an
  `outputSchema`): `{"city", "days": [{"day", "condition", "high_c",
  "low_c", "precipitation_mm"}]}`. Day i (0-based) of city c, with
  h = crc32(c.lower().encode()): condition = CONDITIONS[(h + i) % 6],
  high_c = 10 + (h >> (i % 8)) % 15, low_c = high_c - 5 - (h + i) % 4,
  precipitation_mm = 0 for sunny/partly cloudy else ((h >> 3) + 7 * i) % 20.
  Example: city "Paris", days 2 gives day 0 overcast 18/11 C 12 mm and
  day 1 light rain 14/6 C 19 mm.
- `convert_currency(amount: float, from: str, to: str)`: fixed rates per USD
  (USD 1, EUR 0.9, GBP 0.8, JPY 150, CHF 0.88). Text result
  `"<amount> <FROM> = <converted> <TO>"` with two decimals, e.g.
  `"100.00 USD = 90.00 EUR"`. An unknown code gives an `isError` result
  with text `"Error executing tool convert_currency: Unknown currency code:
  XYZ"` (the SDK adds the prefix).
- `ask_llm_summary(text: str)`: asks the client for a sampling round trip
  (`sampling/createMessage` on handshake-era connections, an embedded input
  request in `InputRequiredResult` on 2026-07-28) with one user message
  `"Summarize in one sentence: <text>"`, maxTokens 200, and returns the text
  the client sampled, unchanged. A client without the sampling capability
  gets an error.
- `count_down(n: int, delay_ms: int = 0)`, n in 1..100: for i = n..1 sends a
  progress notification (progress = n - i + 1, total = n,
  message = "tick <i>") when the request carried a progress token, and a log
  message (level info, logger "count_down", data "tick <i>"), sleeping
  delay_ms between ticks; returns `"liftoff after <n> ticks"`.

Resources:
- `notes://readme` (text/plain): `README_TEXT` below.
- template `notes://{name}` (text/plain): `"Note <name>: this is the
  deterministic body of note <name>."`

Prompts:
- `review_code(language: str, code: str)`: two messages: user
  `"Please review this <language> code for bugs, style and security:"` and
  user "```<language>\\n<code>\\n```".
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import socket
import sys
import warnings
import zlib
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field

# Sampling and logging are deprecated in 2026-07-28, but they are exactly what
# the gateway must carry for older clients; keep stderr free of the warnings.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SERVER_NAME = "toolgate-test-upstream"
SERVER_VERSION = "1.0.0"

CONDITIONS = ["sunny", "partly cloudy", "overcast", "light rain", "thunderstorms", "snow"]
RATES_PER_USD = {"USD": 1.0, "EUR": 0.9, "GBP": 0.8, "JPY": 150.0, "CHF": 0.88}

README_TEXT = (
    "Test notes server.\n"
    "This resource is static text used by toolgate's integration tests.\n"
    "Read notes://{name} for a generated note.\n"
)

mcp = MCPServer(
    name=SERVER_NAME,
    version=SERVER_VERSION,
    instructions="A deterministic test server: weather, currency, sampling, progress, notes and a review prompt.",
    # The SDK logs every failed call at INFO; tests provoke failures on purpose.
    log_level=os.environ.get("UPSTREAM_LOG_LEVEL", "WARNING").upper(),  # type: ignore[arg-type]
)


class DayForecast(BaseModel):
    """One day of a forecast."""

    day: int = Field(description="0-based day offset from today.")
    condition: str = Field(description="Sky condition, one of: " + ", ".join(CONDITIONS) + ".")
    high_c: int = Field(description="Daily high in degrees Celsius.")
    low_c: int = Field(description="Daily low in degrees Celsius.")
    precipitation_mm: int = Field(description="Expected precipitation in millimetres.")


class Forecast(BaseModel):
    """A multi-day forecast for one city."""

    city: str = Field(description="The city name exactly as given.")
    days: list[DayForecast] = Field(description="One entry per requested day, in order.")


def forecast_for(city: str, days: int) -> Forecast:
    """The deterministic fake forecast; documented in the module docstring."""
    h = zlib.crc32(city.lower().encode("utf-8"))
    out = []
    for i in range(days):
        condition = CONDITIONS[(h + i) % len(CONDITIONS)]
        high = 10 + (h >> (i % 8)) % 15
        low = high - 5 - (h + i) % 4
        rain = 0 if condition in ("sunny", "partly cloudy") else ((h >> 3) + 7 * i) % 20
        out.append(DayForecast(day=i, condition=condition, high_c=high, low_c=low, precipitation_mm=rain))
    return Forecast(city=city, days=out)


@mcp.tool(
    title="Weather forecast",
    description=(
        "Get a day-by-day weather forecast for a city.\n\n"
        "Returns one entry per day starting today, each with the sky condition, the daily high and "
        "low temperature in degrees Celsius and the expected precipitation in millimetres. Use this "
        "when the user asks about upcoming weather, what to wear, or whether to plan outdoor "
        "activities. Do not use it for historical weather or climate averages: the data covers the "
        "next seven days only.\n\n"
        "The city is matched by name; include the country for ambiguous names (for example "
        "'Portland, Oregon'). Forecasts beyond three days are less reliable, so ask for more days "
        "only when the user needs them.\n\n"
        "Example: get_weather_forecast(city='Paris', days=2) returns the forecast for today and "
        "tomorrow."
    ),
)
def get_weather_forecast(
    city: Annotated[
        str,
        Field(
            description="City name, optionally followed by region or country, e.g. 'Lyon' or 'Portland, Oregon'.",
            min_length=1,
            max_length=100,
        ),
    ],
    days: Annotated[
        int,
        Field(description="Number of days to forecast, starting today (1 to 7).", ge=1, le=7),
    ] = 3,
) -> Forecast:
    return forecast_for(city, days)


def _convert_currency_signature(
    amount: Annotated[float, Field(description="The amount to convert, in the source currency. Must be positive.", gt=0)],
    from_: Annotated[str, Field(alias="from", description="ISO 4217 code of the source currency, e.g. 'USD'.")],
    to: Annotated[str, Field(description="ISO 4217 code of the target currency, e.g. 'EUR'.")],
) -> str:
    """Only its signature is used: the argument is named `from` on the wire, a Python keyword."""
    raise NotImplementedError


def convert_currency(**arguments: Any) -> str:
    # The SDK passes arguments by their wire names, so `from` arrives as a keyword argument.
    amount: float = arguments["amount"]
    src, dst = str(arguments["from"]).upper(), str(arguments["to"]).upper()
    for code in (src, dst):
        if code not in RATES_PER_USD:
            raise ToolError(f"Unknown currency code: {code}")
    converted = amount / RATES_PER_USD[src] * RATES_PER_USD[dst]
    return f"{amount:.2f} {src} = {converted:.2f} {dst}"


convert_currency.__signature__ = inspect.signature(_convert_currency_signature)  # type: ignore[attr-defined]
convert_currency.__annotations__ = dict(_convert_currency_signature.__annotations__)
mcp.tool(
    title="Currency converter",
    description=(
        "Convert an amount of money from one currency to another.\n\n"
        "Uses fixed reference rates (not live market data), so results are suitable for estimates "
        "and examples but not for settling payments. Supported ISO 4217 codes: "
        + ", ".join(sorted(RATES_PER_USD))
        + ". Codes are case-insensitive.\n\n"
        "The result is a single line of text of the form '<amount> <FROM> = <converted> <TO>' with "
        "two decimals. An unsupported currency code yields an error result naming the code; ask the "
        "user for a supported currency instead of retrying with guesses."
    ),
)(convert_currency)


def summary_request(text: str) -> Sample:
    """The sampling request `ask_llm_summary` sends; identical on every retry round."""
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize in one sentence: {text}"))],
        max_tokens=200,
        system_prompt="You write one-sentence summaries.",
    )


@mcp.tool(
    title="Summarize with the client's LLM",
    description=(
        "Summarize a text in one sentence using the language model of the connected client.\n\n"
        "This tool does not call any model itself: it sends a sampling request back to the client "
        "(MCP sampling) and returns whatever text the client's model produced. The client must "
        "declare the sampling capability; otherwise the call fails.\n\n"
        "Use it for long passages the user wants condensed. Keep the input under a few thousand "
        "characters: the summary is limited to 200 tokens."
    ),
)
async def ask_llm_summary(
    text: Annotated[str, Field(description="The text to summarize.", min_length=1)],
    sampled: Annotated[CreateMessageResult, Resolve(summary_request)],
) -> str:
    content = sampled.content
    if isinstance(content, TextContent):
        return content.text
    raise ToolError(f"client returned non-text sampling content: {content.type}")


@mcp.tool(
    title="Count down",
    description=(
        "Count down from n to 1, reporting each tick.\n\n"
        "Sends a progress notification per tick (when the caller asked for progress) and a log "
        "message per tick, then returns 'liftoff after <n> ticks'. Useful to check that a client "
        "shows progress for long-running operations.\n\n"
        "delay_ms pauses between ticks; keep it small, the total run time is n * delay_ms."
    ),
)
async def count_down(
    n: Annotated[int, Field(description="Where to start counting (1 to 100).", ge=1, le=100)],
    ctx: Context,
    delay_ms: Annotated[int, Field(description="Pause between ticks in milliseconds (0 to 1000).", ge=0, le=1000)] = 0,
) -> str:
    for i in range(n, 0, -1):
        await ctx.report_progress(n - i + 1, n, f"tick {i}")
        await ctx.log("info", f"tick {i}", logger_name="count_down")
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
    return f"liftoff after {n} ticks"


@mcp.resource("notes://readme", name="readme", title="Read me", description="What this notes server is.", mime_type="text/plain")
def readme() -> str:
    return README_TEXT


@mcp.resource("notes://{name}", name="note", title="A note", description="A generated note, by name.", mime_type="text/plain")
def note(name: str) -> str:
    return f"Note {name}: this is the deterministic body of note {name}."


@mcp.prompt(
    title="Code review",
    description="Ask the model for a review of a code snippet: bugs first, then style, then security.",
)
def review_code(
    language: Annotated[str, Field(description="Programming language of the snippet, e.g. 'rust'.")],
    code: Annotated[str, Field(description="The code to review.")],
) -> list[UserMessage]:
    return [
        UserMessage(f"Please review this {language} code for bugs, style and security:"),
        UserMessage(f"```{language}\n{code}\n```"),
    ]


LEGACY_REJECTION = json.dumps(
    {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}
).encode()


def legacy_only(app: Any) -> Any:
    """Wrap the ASGI app so a `server/discover` POST gets mcp 1.x's answer (see the module docstring)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if method == "server/discover":
            await send(
                {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": LEGACY_REJECTION})
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


async def serve_http(port: int, transport: str, legacy: bool) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    app: Any
    if transport == "sse":
        app, path = mcp.sse_app(sse_path="/sse", message_path="/messages/", host="127.0.0.1"), "/sse"
    else:
        app, path = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"), "/mcp"
    if legacy:
        app = legacy_only(app)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        sys.stdout.write(f"LISTENING http://127.0.0.1:{bound}{path}\n")
        sys.stdout.flush()

    announcer = asyncio.create_task(announce())
    try:
        await server.serve(sockets=[sock])
    finally:
        announcer.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio", help="serve MCP over stdin/stdout")
    http = sub.add_parser("http", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    http.add_argument("--port", type=int, required=True, help="TCP port; 0 picks a free one")
    http.add_argument("--legacy-only", action="store_true", help="answer server/discover like a pre-2026 server")
    sse = sub.add_parser("sse", help="serve legacy HTTP+SSE on 127.0.0.1:PORT/sse")
    sse.add_argument("--port", type=int, required=True, help="TCP port; 0 picks a free one")
    args = parser.parse_args()
    if args.transport == "stdio":
        mcp.run("stdio")
    else:
        asyncio.run(serve_http(args.port, args.transport, getattr(args, "legacy_only", False)))


if __name__ == "__main__":
    main()
