"""Rater page latency: 20 raters at once against ``calipers review serve`` on loopback.

Starts the real server (a subprocess, SQLite store in a temporary folder) over a pairwise
campaign, signs 20 raters in with their personal links, and lets each answer ``--per-rater``
items: GET /rate (lease the next item, render it), then POST the answer (validate, store,
redirect). Prints p50/p95/p99/max of each, with the machine's load. Target (issue 18): p95
under 100 ms for the rater page.

``--think S``: each rater reads for S seconds on average (uniform 0.5-1.5 S) before answering,
as people do; ``--think 0`` (the default) answers as fast as the server allows, a stress test
in which 20 raters always queue behind each other on the one SQLite writer.

    python benchmarks/review_latency.py [--raters 20] [--items 600] [--per-rater 30] [--think 0]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from calipers.review import issue_token
from calipers.store import ReviewCampaignRecord, ReviewItemRecord, Store

sys.path.insert(0, str(Path(__file__).parent))
from _measure import measured

TARGET_MS = 100.0
QUESTIONS = [{"type": "preference", "id": "preference", "prompt": "Which is better?"}]


def _campaign(url: str, items: int, raters: int) -> list[str]:
    with Store.open(url) as store:
        store.create_campaign(
            ReviewCampaignRecord(name="bench", kind="pairwise", questions=QUESTIONS, k=3)
        )
        text = "An answer of a few sentences, as a model would give it. " * 8
        store.add_review_items(
            "bench",
            [
                ReviewItemRecord(
                    item_key=f"i{i:05d}",
                    payload={"prompt": f"Question {i}?", "a": f"A: {text}", "b": f"B: {text}"},
                    source={"a": {"model": "m1"}, "b": {"model": "m2"}},
                )
                for i in range(items)
            ],
        )
        tokens = []
        for r in range(raters):
            t = issue_token()
            store.add_rater("bench", f"r{r:02d}", t.hash, token_key=t.key)
            tokens.append(t.text)
        return tokens


def _serve(url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "calipers", "review", "serve", "bench", "--store", url,
           "--port", str(port)]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            httpx.get(f"http://127.0.0.1:{port}/favicon.ico")
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def _rater(
    base: str, token: str, n: int, times: dict[str, list[float]], go: Any, think: float
) -> None:
    pause = random.Random(token)
    with httpx.Client(base_url=base, follow_redirects=False, timeout=60) as c:
        c.get(f"/r/{token}")
        go.wait()
        for i in range(n):
            if think:
                time.sleep(think * pause.uniform(0.5, 1.5))
            t0 = time.perf_counter()
            page = c.get("/rate")
            t1 = time.perf_counter()
            m = re.search(r'action="/rate/(\d+)"', page.text)
            csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
            if m is None or csrf is None:
                return
            data = {"csrf": csrf.group(1), "q.preference": ("left", "right", "tie")[i % 3]}
            r = c.post(f"/rate/{m.group(1)}", data=data)
            t2 = time.perf_counter()
            times["GET /rate"].append(t1 - t0)
            if r.status_code == 303:
                times["POST /rate/ID"].append(t2 - t1)


def _row(name: str, xs: list[float]) -> list[str]:
    ms = sorted(1000 * x for x in xs)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return [name, str(len(ms)), f"{q[49]:.1f}", f"{q[94]:.1f}", f"{q[98]:.1f}", f"{ms[-1]:.1f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raters", type=int, default=20)
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--per-rater", type=int, default=30)
    ap.add_argument("--think", type=float, default=0.0, help="mean seconds a rater reads")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'calipers.db'}"
        tokens = _campaign(url, args.items, args.raters)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = _serve(url, port, Path(tmp) / "server.log")
        times: dict[str, list[float]] = {"GET /rate": [], "POST /rate/ID": []}
        go = threading.Barrier(args.raters + 1)
        threads = [
            threading.Thread(
                target=_rater,
                args=(f"http://127.0.0.1:{port}", t, args.per_rater, times, go, args.think),
            )
            for t in tokens
        ]
        for t in threads:
            t.start()
        load: dict[str, Any] = {}
        try:
            go.wait()
            with measured(load):
                for t in threads:
                    t.join()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    how = f"{args.think:g} s reading" if args.think else "no reading time"
    table = Table(
        title=f"calipers review serve: {args.raters} concurrent raters on loopback, {how}"
    )
    for col in ("request", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(col, justify="left" if col == "request" else "right")
    for name, xs in times.items():
        if xs:
            table.add_row(*_row(name, xs))
    console = Console()
    console.print(table)
    p95 = statistics.quantiles(times["GET /rate"], n=100, method="inclusive")[94] * 1000
    verdict = "meets" if p95 < TARGET_MS else "misses"
    console.print(
        f"GET /rate p95 {p95:.1f} ms {verdict} the target of {TARGET_MS:.0f} ms; "
        f"{load['seconds']:.1f} s wall, load average {load['loadavg_before']:.1f} -> "
        f"{load['loadavg_after']:.1f}, other processes used "
        f"{100 * load['others_cpu_share']:.0f}% of the CPU ({os.cpu_count()} cores)."
    )


if __name__ == "__main__":
    main()
