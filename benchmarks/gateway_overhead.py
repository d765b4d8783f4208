"""Gateway overhead: user latency through ``calipers gateway`` against calling the upstream
directly, at a steady open-loop load from a separate process.

Every component is its own process on 127.0.0.1: a minimal Starlette upstream returning a fixed
chat completion (the baseline), a second one as the candidate (healthy, slow, or absent), the
gateway (the real ``calipers gateway`` command, logging to SQLite in WAL mode), and the load
generator. The load generator sends on a fixed schedule (open loop) and measures each latency
from the moment the request was *due*, so a stalled client or server cannot hide its own
delay (no coordinated omission). It speaks HTTP/1.1 over raw asyncio streams with a keep-alive
pool: a lighter client than httpx, so less of the machine goes to measuring.

Target (issue 7): added latency p50 <= 2 ms and p99 <= 10 ms at 200 requests/s with shadowing
on, and user latency unchanged when the candidate is slow or down.

    python benchmarks/gateway_overhead.py [--rate 200] [--seconds 10] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ANSWER = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is 42."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18},
}).encode()  # fmt: skip


def body(i: int) -> bytes:
    """Request ``i``: the same system prompt every time, a user message of its own (so the
    gateway's redaction cache helps only as much as it would with real traffic)."""
    return json.dumps({
        "model": "bench", "max_tokens": 16,
        "messages": [{"role": "system", "content": "You are terse. Reply with a number."},
                     {"role": "user", "content": f"Question {i}: what is {i} times seven?"}],
    }).encode()  # fmt: skip


# -- the upstream (child process) ------------------------------------------------------------


def run_upstream(port: int, delay_s: float) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def chat(request: Request) -> Response:
        await request.body()
        if delay_s:
            await asyncio.sleep(delay_s)
        return Response(ANSWER, media_type="application/json")

    async def models(request: Request) -> Response:
        return Response(b'{"object":"list","data":[{"id":"bench"}]}', media_type="application/json")

    app = Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)]
    )
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )


# -- the load generator (child process) ------------------------------------------------------


class Pool:
    """Keep-alive HTTP/1.1 connections to one host; POSTs a fixed body, reads the answer."""

    def __init__(self, port: int, path: str) -> None:
        self.port = port
        self.head = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
            "content-type: application/json\r\ncontent-length: "
        ).encode()
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def _conn(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        now = time.monotonic()
        while self.idle:  # servers drop connections idle for 5 s: do not reuse those
            reader, writer, since = self.idle.pop()
            if now - since < 4.0 and not reader.at_eof():
                return reader, writer
            writer.close()
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, i: int = 0) -> int:
        reader, writer = await self._conn()
        data = body(i)
        writer.write(self.head + b"%d\r\n\r\n" % len(data) + data)
        status_line = await reader.readuntil(b"\r\n")
        length = 0
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        self.idle.append((reader, writer, time.monotonic()))
        return int(status_line.split()[1])


async def _load(
    port: int, path: str, rate: float, seconds: float, warmup_s: float
) -> dict[str, Any]:
    pool = Pool(port, path)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    errors: dict[str, int] = {}

    async def one(i: int, due: float, keep: bool) -> None:
        try:
            outcome = str(await pool.post(i))
        except (OSError, asyncio.IncompleteReadError) as e:
            outcome = type(e).__name__
        if keep:
            latencies.append((loop.time() - due) * 1000.0)
            if outcome != "200":
                errors[outcome] = errors.get(outcome, 0) + 1

    tasks = []
    n = int((warmup_s + seconds) * rate)
    start = loop.time() + 0.05
    for i in range(n):
        due = start + i / rate
        if (wait := due - loop.time()) > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(one(i, due, i >= warmup_s * rate)))
    await asyncio.gather(*tasks)
    return {"latencies_ms": latencies, "errors": errors}


def run_load(port: int, path: str, rate: float, seconds: float, warmup_s: float) -> None:
    print(json.dumps(asyncio.run(_load(port, path, rate, seconds, warmup_s))))


# -- the orchestrator --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


def start_upstream(delay_s: float) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "_upstream", str(port), str(delay_s)])
    wait_http(f"http://127.0.0.1:{port}/v1/models", proc)
    return proc, port


def start_gateway(
    base: int, cand: int, fraction: float, mode: str, store: Path
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "calipers",
        "--store",
        str(store),
        "gateway",
        "--baseline",
        f"http://127.0.0.1:{base}/v1",
        "--candidate",
        f"http://127.0.0.1:{cand}/v1",
        "--mode",
        mode,
        "--fraction",
        str(fraction),
        "--port",
        str(port),
        "--candidate-timeout",
        "30",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def load(port: int, rate: float, seconds: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "_load", str(port), "/v1/chat/completions", str(rate),
         str(seconds), "1.0"], capture_output=True, check=True, text=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def summary(result: dict[str, Any]) -> dict[str, float]:
    import numpy as np

    lat = np.asarray(result["latencies_ms"])
    p50, p95, p99 = np.percentile(lat, [50, 95, 99])
    return {
        "n": int(lat.size),
        "errors": sum(result["errors"].values()),
        "error_kinds": result["errors"],
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "max_ms": float(lat.max()),
    }


def fetch_stats(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/calipers/stats", timeout=5) as r:
        stats: dict[str, Any] = json.loads(r.read())
    return stats


SCENARIOS = [
    # name, gateway mode, fraction, candidate: delay in seconds or None for "down"
    ("gateway, mode off", "off", 0.0, 0.0),
    ("gateway, shadow 10%", "shadow", 0.1, 0.0),
    ("gateway, shadow 100%", "shadow", 1.0, 0.0),
    ("shadow 100%, candidate slow (2 s)", "shadow", 1.0, 2.0),
    ("shadow 100%, candidate down", "shadow", 1.0, None),
]


def run_all(rate: float, seconds: float) -> dict[str, Any]:
    results: dict[str, Any] = {
        "rate": rate,
        "seconds": seconds,
        "cpus": os.cpu_count(),
        "scenarios": [],
    }
    baseline, base_port = start_upstream(0.0)
    try:
        direct = summary(load(base_port, rate, seconds))
        results["scenarios"].append({"name": "direct to the upstream", **direct})
        for name, mode, fraction, delay in SCENARIOS:
            cand_proc, cand_port = (None, free_port()) if delay is None else start_upstream(delay)
            with tempfile.TemporaryDirectory() as d:
                gw, gw_port = start_gateway(base_port, cand_port, fraction, mode, Path(d) / "gw.db")
                try:
                    row: dict[str, Any] = {**summary(load(gw_port, rate, seconds))}
                    row["gateway"] = fetch_stats(gw_port)
                finally:
                    stop(gw)
                    if cand_proc is not None:
                        stop(cand_proc)
            row["added_p50_ms"] = row["p50_ms"] - direct["p50_ms"]
            row["added_p99_ms"] = row["p99_ms"] - direct["p99_ms"]
            results["scenarios"].append({"name": name, **row})
    finally:
        stop(baseline)
    return results


def print_table(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"{results['rate']:g} requests/s for {results['seconds']:g} s "
        f"({results['cpus']} CPUs)",
        header_style="bold",
    )
    for col in (
        "path",
        "n",
        "errors",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "+p50",
        "+p99",
        "mirrored",
        "shadow dropped",
        "log dropped",
    ):
        t.add_column(col, justify="left" if col == "path" else "right")
    for s in results["scenarios"]:
        gw = s.get("gateway") or {}
        shadow = gw.get("shadow") or {}
        t.add_row(
            s["name"], str(s["n"]), str(s["errors"]), f"{s['p50_ms']:.2f}", f"{s['p95_ms']:.2f}",
            f"{s['p99_ms']:.2f}", f"{s['max_ms']:.1f}",
            f"{s['added_p50_ms']:+.2f}" if "added_p50_ms" in s else "",
            f"{s['added_p99_ms']:+.2f}" if "added_p99_ms" in s else "",
            str(shadow.get("mirrored", "")), str(shadow.get("dropped_queue_full", "")),
            str(gw.get("log", {}).get("dropped_queue_full", "")),
        )  # fmt: skip
    Console().print(t)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_upstream":
        run_upstream(int(sys.argv[2]), float(sys.argv[3]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_load":
        run_load(
            int(sys.argv[2]),
            sys.argv[3],
            float(sys.argv[4]),
            float(sys.argv[5]),
            float(sys.argv[6]),
        )
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=200.0, help="requests per second")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per path")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    results = run_all(args.rate, args.seconds)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)


if __name__ == "__main__":
    main()
