"""An end user's OAuth consent in a real headless browser, for toolgate's
"OAuth toward upstream MCP servers" tests: Debian's Chromium driven by
Playwright (pinned in tests/requirements.txt). The browser-grade twin of
tests/node/user_agent.mjs: real cookies, real redirects, real form posts.

Usage:
    python browser_consent.py START_URL --login NAME [--password P] [--deny]
                              [--screenshot PATH] [--timeout SECONDS]

    START_URL          e.g. toolgate's http://127.0.0.1:P/oauth/start/<opaque>
    --login NAME       typed on the sign-in page (becomes the token's sub)
    --password P       typed as the password, default "password" (any works)
    --deny             press "Deny" on the consent page instead of "Approve"
    --screenshot PATH  save a PNG of the last page (also when the flow fails)
    --timeout SECONDS  for launching and for each page, default 30

It opens START_URL and, page after page, fills and submits the sign-in form
(form#login: inputs `login`, `password`) and presses Approve or Deny on the
consent form (form#consent: buttons name=decision value=approve|deny) of
tests/node/oauth_as.mjs, until the URL's path ends with /oauth/callback and
that page has loaded.

The browser: `$TOOLGATE_CHROMIUM` or /usr/bin/chromium (Debian's `chromium`;
Playwright never downloads one here), headless, with a fresh temporary
profile per run (Playwright's `launch`), so every run signs in and consents
anew. Only loopback hosts are reachable: names other than localhost resolve
to nothing and every other address goes to a dead proxy on 127.0.0.1:9.

Output, ONE JSON line on stdout:
    {"url": final URL, "status": its HTTP status, "title": page title,
     "h1": text of the first <h1> or null, "text": body text (<= 2000 chars),
     "hops": [every main-frame navigation URL, redirects included, in order]}
Exit status: 0 when the callback page was reached (whatever its status: the
test judges); 3 when the flow ended on another page with no form it knows
(the JSON line is still printed); 4 when the browser or a navigation failed
(or timed out); 2 on bad usage or a non-loopback START_URL. Reasons go to
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn
from urllib.parse import urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Chromium still calls Google (update.googleapis.com, accounts.google.com)
    # in the background: no DNS but for loopback, and a dead proxy for anything
    # not loopback (loopback bypasses a proxy), so it never leaves the machine.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--proxy-server=http://127.0.0.1:9",
]
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
MAX_PAGES = 10


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK


def is_callback(url: str) -> bool:
    return urlsplit(url).path.endswith("/oauth/callback")


def fail(code: int, message: str) -> NoReturn:
    print(f"browser_consent: {message}", file=sys.stderr)
    sys.exit(code)


def walk(page, args) -> tuple[int, str | None]:
    """Drives the flow; returns (final HTTP status, reason it stopped early or None)."""
    decision = "deny" if args.deny else "approve"
    response = page.goto(args.start_url, wait_until="load")
    for _ in range(MAX_PAGES):
        if is_callback(page.url):
            return response.status, None
        if page.locator("form#login").count():
            page.fill("form#login input[name=login]", args.login)
            page.fill("form#login input[name=password]", args.password)
            button = "form#login [type=submit]"
        elif page.locator("form#consent").count():
            button = f"form#consent button[name=decision][value={decision}]"
        else:
            return response.status, f"no login or consent form on {page.url} (HTTP {response.status})"
        with page.expect_navigation(wait_until="load") as navigation:
            page.click(button)
        response = navigation.value
    return response.status, f"gave up after {MAX_PAGES} pages at {page.url}"


def screenshot(page, path: str | None) -> None:
    if path:
        try:
            page.screenshot(path=path, full_page=True)
        except PlaywrightError as e:
            print(f"browser_consent: no screenshot: {e.message.splitlines()[0]}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description="OAuth consent in headless Chromium.")
    parser.add_argument("start_url", metavar="START_URL")
    parser.add_argument("--login", required=True)
    parser.add_argument("--password", default="password")
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--screenshot")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    if not is_loopback(args.start_url):
        fail(2, f"refusing a non-loopback START_URL: {args.start_url}")
    chromium = os.environ.get("TOOLGATE_CHROMIUM") or "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        fail(4, f"no Chromium at {chromium} (apt-get install chromium, or set TOOLGATE_CHROMIUM)")
    timeout_ms = args.timeout * 1000

    hops: list[str] = []
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(
                executable_path=chromium, headless=True, args=FLAGS, timeout=timeout_ms
            )
        except PlaywrightError as e:
            fail(4, f"cannot launch {chromium}: {e.message}")
        try:
            page = browser.new_page()
            page.set_default_timeout(timeout_ms)
            page.on(
                "request",
                lambda r: hops.append(r.url)
                if r.is_navigation_request() and r.frame == page.main_frame
                else None,
            )
            try:
                status, problem = walk(page, args)
            except PlaywrightError as e:
                screenshot(page, args.screenshot)
                fail(4, f"{e.message.splitlines()[0]} (at {page.url}; hops: {hops})")
            h1 = page.locator("h1")
            result = {
                "url": page.url,
                "status": status,
                "title": page.title(),
                "h1": h1.first.inner_text() if h1.count() else None,
                "text": page.inner_text("body")[:2000],
                "hops": hops,
            }
            screenshot(page, args.screenshot)
        finally:
            browser.close()
    print(json.dumps(result), flush=True)
    if problem:
        fail(3, problem)


if __name__ == "__main__":
    main()
