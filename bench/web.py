"""Issue 15 benchmark: the web UI on a 10,000-memory project, served by a real
`lore serve` on loopback.

Prints the server time (the `Server-Timing: app;dur=` header: from the
request reaching the app to the response starting) p50/p95 of the memory
list page and the search page, and their first contentful paint in headless
chromium (Debian's, driven by playwright). Targets: server p50 ≤ 50 ms, FCP
≤ 300 ms.

    python bench/web.py [--memories 10000] [--embedding none|local] [--requests 200] [--reuse]
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from _common import BENCH_DATA, WORK, jsonl, percentile, row, timed_cli
from memory_search import build_project


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lore", "serve", "--port", str(port)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"lore serve failed: {proc.stderr.read()}") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("lore serve did not start")


def server_times(port: int, paths: list[str]) -> list[float]:
    """The app's own time (ms) per request, from Server-Timing, over one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    out = []
    for path in paths:
        conn.request("GET", path, headers={"Accept": "text/html"})
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:300]!r}")
        out.append(float(re.search(r"dur=([\d.]+)", response.getheader("server-timing")).group(1)))
    conn.close()
    return out


_FCP = """() => new Promise(resolve => {
  new PerformanceObserver(list => {
    const entry = list.getEntriesByName('first-contentful-paint')[0];
    if (entry) resolve(entry.startTime);
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => resolve(null), 5000);
})"""


def first_contentful_paint(base: str, paths: list[str]) -> list[float]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page()
        page.goto(base + paths[0])  # warm the browser's process and cache once
        for path in paths:
            page.goto(base + path, wait_until="load")
            fcp = page.evaluate(_FCP)
            if fcp is None:
                raise SystemExit(f"no first-contentful-paint entry for {path}")
            out.append(float(fcp))
        browser.close()
    return out


def summary(values: list[float]) -> str:
    return f"p50 {percentile(values, 50):.1f} ms   p95 {percentile(values, 95):.1f} ms   (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--embedding", default="none", help="none (BM25 only) or local (hybrid search)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--reuse", action="store_true", help="Reuse the project an earlier run built.")
    args = parser.parse_args()

    print(f"Lore web benchmark: {args.memories} memories, embedding={args.embedding}, loopback")
    root = WORK / f"memories-{args.memories}-{args.embedding}"
    if not (args.reuse and (root / ".lore/index.db").exists()):
        root = build_project(args.memories, args.embedding)
        build, _ = timed_cli(["index", "--no-code"], root)
        row("index build (lore index --no-code)", f"{build[0] / 1000:.1f} s")

    port = free_port()
    server = start_server(root, port)
    try:
        random.seed(2)
        queries = [q["text"] for q in jsonl(BENCH_DATA / "locomo/queries.jsonl")]
        types = ["fact", "lesson", "decision", "summary"]
        list_paths = ["/memories"] * (args.requests // 4)
        list_paths += [
            f"/memories?offset={random.randrange(0, args.memories - 50)}" for _ in range(args.requests // 4)
        ]
        list_paths += [
            "/memories?"
            + urlencode({"type": random.choice(types), "sort": random.choice(["title", "occurred_at"])})
            for _ in range(args.requests // 4)
        ]
        list_paths += [
            "/memories?" + urlencode({"since": f"2023-{random.randint(1, 12):02d}-01", "order": "asc"})
            for _ in range(args.requests - len(list_paths))
        ]
        search_paths = ["/search?" + urlencode({"q": random.choice(queries)}) for _ in range(args.requests)]
        server_times(port, ["/memories", "/search?q=warm+up"])  # warm caches
        row("memory list page, server time", summary(server_times(port, list_paths)))
        row("search page, server time", summary(server_times(port, search_paths)))
        base = f"http://127.0.0.1:{port}"
        row(
            "memory list page, first contentful paint", summary(first_contentful_paint(base, list_paths[:30]))
        )
        row("search page, first contentful paint", summary(first_contentful_paint(base, search_paths[:30])))
        status = Path(f"/proc/{server.pid}/status").read_text()
        rss = int(status.split("VmRSS:")[1].split()[0]) // 1024
        row("server RSS after the run", f"{rss} MB")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
