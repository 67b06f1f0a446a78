#!/usr/bin/env python3
"""Asserts on one MCP HTTP answer saved by tests/docker/run.sh.

    check.py BODY_FILE EXPRESSION [DESCRIPTION]

BODY_FILE holds a JSON-RPC response, either as plain JSON or as an SSE
stream (the `data:` lines of its events). The response with an `id` (the
last one, on a stream) is bound to `m`, and EXPRESSION, a Python expression
over `m` and `json`, must be true. On failure the answer is printed and the
exit status is 1.
"""

import json
import sys


def message(text: str) -> dict:
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    found = None
    for line in text.splitlines():
        if line.startswith("data:"):
            data = line[len("data:"):].strip()
            if data:
                msg = json.loads(data)
                if "id" in msg:
                    found = msg
    if found is None:
        raise ValueError("no JSON-RPC response in the stream")
    return found


def main() -> int:
    path, expression = sys.argv[1], sys.argv[2]
    what = sys.argv[3] if len(sys.argv) > 3 else expression
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        m = message(text)
        ok = eval(expression, {"json": json}, {"m": m})  # noqa: S307 - test-defined expressions only
    except Exception as e:  # noqa: BLE001 - report any failure with the answer
        print(f"FAIL {what}: {type(e).__name__}: {e}\n--- answer ---\n{text[:4000]}", file=sys.stderr)
        return 1
    if not ok:
        print(f"FAIL {what}\n--- answer ---\n{text[:4000]}", file=sys.stderr)
        return 1
    print(f"ok   {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
