#!/usr/bin/env python3
"""Converts RestBench (Song et al., "RestGPT: Connecting Large Language Models
with Real-World RESTful APIs", MIT licence) into this evaluation's formats:
one catalog file per scenario in ``corpus/`` (the shape of ``tests/corpus``:
``serverInfo`` and MCP ``tools``), and ``tasks.jsonl`` (the shape of
``benches/search/tasks.jsonl``).

Each OpenAPI operation becomes one tool, as an OpenAPI-to-MCP bridge exposes
it: ``name`` the operation's ``operationId``, ``title`` its ``summary``,
``description`` its ``description`` (the summary when it has none), and an
``inputSchema`` whose properties are the operation's path and query
parameters and the top-level properties of its JSON request body (``$ref``
resolved), each with its description and enum values. Responses are left
out. Each instruction becomes one task: its ``relevant`` tools are the gold
solution path's operations (a ranking hits when any is in its top k).

    python3 benches/search/restbench/convert.py /work/.mirror/Yifan-Song793+RestGPT/repo

The argument is a git directory of github.com/Yifan-Song793/RestGPT (read at
the commit in ``SOURCE_COMMIT``); nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_COMMIT = "d99012860cb45323975bf5780152d7aa44f390f5"
SCENARIOS = {
    # scenario: (spec, instructions, server title)
    "tmdb": ("specs/tmdb_oas.json", "datasets/tmdb.json", "TMDB: The Movie Database API"),
    "spotify": ("specs/spotify_oas.json", "datasets/spotify.json", "Spotify Web API"),
}
#: Gold routes that name no operation of the spec, and the one they mean.
TYPOS = {"GET /track/{}": "GET /tracks/{}"}
METHODS = ("get", "post", "put", "patch", "delete")


def show(git_dir: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{SOURCE_COMMIT}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def squash(text) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def resolve(spec: dict, node):
    """Follows ``$ref`` pointers (``#/components/...``) until a plain node."""
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 20:
        target = spec
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node, seen = target, seen + 1
    return node


def prop(spec: dict, schema: dict, description: str = "") -> dict:
    schema = resolve(spec, schema or {})
    out = {}
    if schema.get("type"):
        out["type"] = schema["type"]
    text = squash(description or schema.get("description"))
    if text:
        out["description"] = text
    enum = schema.get("enum") or (resolve(spec, schema.get("items") or {}).get("enum") if schema.get("type") == "array" else None)
    if enum:
        out["enum"] = [str(v) for v in enum]
    return out


def route_key(route: str) -> str:
    """``METHOD /path`` with path parameters' names blanked: a few gold paths
    name a parameter differently from the spec (``/person/{movie_id}/...``)."""
    key = re.sub(r"\{[^}]*\}", "{}", route.strip())
    return TYPOS.get(key, key)


def tools(spec: dict) -> tuple[list[dict], dict[str, str]]:
    out, by_route = [], {}
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            props, required = {}, []
            for p in shared + op.get("parameters", []):
                p = resolve(spec, p)
                if p.get("in") not in ("path", "query"):
                    continue
                props[p["name"]] = prop(spec, p.get("schema") or {}, p.get("description", ""))
                if p.get("required"):
                    required.append(p["name"])
            body = resolve(spec, op.get("requestBody") or {})
            schema = resolve(spec, ((body.get("content") or {}).get("application/json") or {}).get("schema") or {})
            for name, s in (schema.get("properties") or {}).items():
                props.setdefault(name, prop(spec, s))
            required += [r for r in schema.get("required", []) if r not in required]
            summary = squash(op.get("summary"))
            tool = {"name": op["operationId"], "title": summary, "description": squash(op.get("description")) or summary,
                    "inputSchema": {"type": "object", "properties": props, **({"required": required} if required else {})}}
            out.append(tool)
            by_route[route_key(f"{method.upper()} {path}")] = op["operationId"]
    return out, by_route


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    git_dir = sys.argv[1]
    (HERE / "corpus").mkdir(exist_ok=True)
    tasks = []
    for scenario, (spec_path, data_path, title) in SCENARIOS.items():
        spec = json.loads(show(git_dir, spec_path))
        catalog, by_route = tools(spec)
        doc = {"server": scenario, "source": f"RestBench ({spec_path} of Yifan-Song793/RestGPT at {SOURCE_COMMIT[:12]})",
               "serverInfo": {"name": scenario, "title": title}, "tools": catalog}
        (HERE / "corpus" / f"{scenario}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        for n, item in enumerate(json.loads(show(git_dir, data_path)), 1):
            relevant = list(dict.fromkeys(f"{scenario}__{by_route[route_key(r)]}" for r in item["solution"]))
            tasks.append({"id": f"{scenario}-{n:03}", "split": "test", "server": scenario, "kind": "restbench",
                          "query": squash(item["query"]), "relevant": relevant})
        print(f"{scenario}: {len(catalog)} tools", file=sys.stderr)
    (HERE / "tasks.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks))
    print(f"{len(tasks)} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
