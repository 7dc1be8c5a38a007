"""How long a page takes to show its tray on a slow network: a demo page opened in chromium with every request
delayed by `--latency` ms (Chrome's network emulation), timed from navigation until the tray's launcher is visible,
with an empty browser cache each time (or, with `--warm S`, on a second visit S seconds after the first, from the
browser's cache), and how many of the tray's modules the browser requested.

    make run   # in another shell: the demo site on http://127.0.0.1:8000
    .venv/bin/python -m tests.bench.tray_load [--url http://127.0.0.1:8000] [--latency 100] [--runs 5] [--warm 61]
"""
from __future__ import annotations

import argparse
import statistics
import time

from playwright.sync_api import sync_playwright

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--path", default="/research-streams/")
    parser.add_argument("--latency", type=float, default=100.0, help="ms added to every request")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--user", default="demo")
    parser.add_argument("--warm", type=float, default=0.0, help="time a second visit this many seconds after the first")
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        login = browser.new_context()
        page = login.new_page()
        page.goto(args.url + "/login/")
        page.fill("input[name=username]", args.user)
        page.fill("input[name=password]", args.user)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state()
        state = login.storage_state()
        login.close()
        times, modules = [], 0
        for _ in range(args.runs):
            context = browser.new_context(storage_state=state)  # a new context: an empty cache
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": args.latency,
                                                          "downloadThroughput": -1, "uploadThroughput": -1})
            if args.warm:
                page.goto(args.url + args.path)
                page.locator(".chat-launcher").wait_for(state="visible", timeout=60_000)
                page.wait_for_timeout(args.warm * 1000)
            fetched: list[str] = []  # responses that came over the network (a 304 included), not from the cache
            cached: set[str] = set()
            cdp.on("Network.requestServedFromCache", lambda e: cached.add(e["requestId"]))
            cdp.on("Network.responseReceived", lambda e: fetched.append(e["response"]["url"])
                   if "/static/chat/" in e["response"]["url"] and ".js" in e["response"]["url"]
                   and not e["response"].get("fromDiskCache") and e["requestId"] not in cached else None)
            start = time.perf_counter()
            page.goto(args.url + args.path, wait_until="commit")
            page.locator(".chat-launcher").wait_for(state="visible", timeout=60_000)
            times.append((time.perf_counter() - start) * 1000)
            modules = len(set(fetched))
            context.close()
        browser.close()
    print(f"{args.path} with {args.latency:.0f} ms per request, {args.runs} runs: tray shown after "
          f"{statistics.median(times):.0f} ms (median; min {min(times):.0f}, max {max(times):.0f}); "
          f"{modules} tray module requests{' on the second visit' if args.warm else ''}")


if __name__ == "__main__":
    main()
