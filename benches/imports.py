#!/usr/bin/env python3
"""The import graph of one module folder: its rooms, arrows, circles and the
arrows that run back up.

    benches/imports.py [FOLDER]        default: src/gateway
    benches/imports.py src/gateway --edges

A room is one file of the folder (FOLDER.rs, the folder's own root, is the
room `<root>`; a subfolder counts as its parent file's room; tests are left
out). An arrow is a `use` (or a path in code) of `super::NAME` or
`crate::…::FOLDER::NAME` from one room to another, counted once per pair.
Floors: the rooms of a circle share one; a room's floor is one above the
highest floor it imports (a room that imports no other room is on floor 0),
and the root, which composes the folder, is on top. An arrow runs back up
when it goes to a room on the same floor or higher: into a circle, or into
the root (which imports everything, so anything importing it is below it).
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|type|fn|const|static|async fn)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def rooms_of(folder: Path) -> dict[str, list[Path]]:
    """Room name -> its source files (tests left out)."""
    rooms: dict[str, list[Path]] = {}
    root = folder.with_suffix(".rs")
    rooms["<root>"] = [root]
    for path in sorted(folder.rglob("*.rs")):
        rel = path.relative_to(folder)
        if path.name == "tests.rs" or "tests" in rel.parts[:-1] or path.name.endswith("_tests.rs"):
            continue
        room = rel.parts[0].removesuffix(".rs")
        rooms.setdefault(room, []).append(path)
    return rooms


USE_STMT = re.compile(r"\buse\s+(super|crate::gateway)::(.*?);", re.S)
PATH = re.compile(r"\b(super|crate::gateway)::([A-Za-z_][A-Za-z0-9_]*)")


def first_segments(tree: str) -> list[str]:
    """The first path segment of every name a `use` tree imports (`{a::B, C}` gives a, C)."""
    tree = tree.strip()
    if tree.startswith("{") and tree.endswith("}"):
        inner, depth, part, parts = tree[1:-1], 0, "", []
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(part)
                part = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            part += ch
        parts.append(part)
        return [seg for p in parts if p.strip() for seg in first_segments(p)]
    head = re.split(r"::|\s+as\s+", tree, maxsplit=1)[0].strip()
    return [head] if head and head != "self" else []


def references(text: str) -> list[tuple[str, bool]]:
    """(name, through `super::`) for every room or root item `text` names."""
    found = []
    for m in USE_STMT.finditer(text):
        found += [(name, m.group(1) == "super") for name in first_segments(m.group(2))]
    body = USE_STMT.sub("", text)
    found += [(m.group(2), m.group(1) == "super") for m in PATH.finditer(body)]
    return found


def strip_tests(text: str) -> str:
    """The code of `text`: without comments (doc links name rooms too) and
    `#[cfg(test)]` module declarations."""
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"#\[cfg\(test\)\]\s*mod\s+tests\s*;", "", text)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    folder = Path(args[0] if args else "src/gateway")
    rooms = rooms_of(folder)
    # Names the root itself defines (a `super::Gateway` is an arrow to it).
    root_text = strip_tests(rooms["<root>"][0].read_text())
    root_names = set(DECL.findall(root_text)) | {"GwSession"}
    arrows: set[tuple[str, str]] = set()
    for room, files in rooms.items():
        for path in files:
            text = strip_tests(path.read_text())
            in_sub = room != "<root>" and path.parent != folder
            for name, via_super in references(text):
                # In a file of a subfolder, `super::` is its own room.
                if in_sub and via_super:
                    continue
                if room == "<root>":
                    target = name if name in rooms else None
                elif name in rooms:
                    target = name
                elif name in root_names:
                    target = "<root>"
                else:
                    target = None
                if target and target != room:
                    arrows.add((room, target))
    graph = defaultdict(set)
    for a, b in arrows:
        graph[a].add(b)
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in rooms:
        if v not in index:
            visit(v)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    floor: dict[int, int] = {}

    def floor_of(c: int) -> int:
        if c not in floor:
            floor[c] = 0
            below = {comp_of[w] for v in comps[c] for w in graph[v] if comp_of[w] != c and w != "<root>"}
            floor[c] = 1 + max((floor_of(d) for d in below), default=-1)
        return floor[c]

    for c in range(len(comps)):
        floor_of(c)
    top = max(floor.values(), default=0) + 1
    level = {v: (top if v == "<root>" else floor[comp_of[v]]) for v in rooms}
    back = sorted((a, b) for a, b in arrows if level[b] >= level[a])
    circles = sorted((sorted(c) for c in comps if len(c) > 1), key=len, reverse=True)
    print(f"{folder}: {len(rooms)} rooms, {top + 1} floors, {len(arrows)} arrows, {len(back)} back up")
    print(f"  into the root: {sum(1 for _, b in arrows if b == '<root>')} arrows from {len({a for a, b in arrows if b == '<root>'})} rooms")
    for c in circles:
        print(f"  circle of {len(c)}: {', '.join(c)}")
    if "--edges" in sys.argv:
        for a, b in back:
            print(f"  back up: {a} -> {b}")


if __name__ == "__main__":
    main()
