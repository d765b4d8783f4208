"""Fleet throughput: samples per second through ``calipers run`` against the number of
OpenAI-compatible endpoints of one model (a fleet, docs/fleet.md).

Two cases, each endpoint its own process on 127.0.0.1:

- ``fake``: a minimal Starlette server that answers after a fixed delay (0.1 s) and works on
  at most ``--slots`` requests at once (4; the rest queue), as a GPU server with a fixed batch
  would: one endpoint does ``slots / delay`` = 40 requests/s, and as the work is waiting, not
  computing, N endpoints should do about N times that (1, 2, 4, 8 endpoints).
- ``llama``: ``python -m llama_cpp.server`` on SmolLM2-135M (the bundled GGUF), one thread
  each, 1 and 2 processes. This is CPU-bound: this machine has 2 cores (shared with other
  work), so 2 processes can at best double 1, and nothing more would help.

Each point is a full run (planning, the fleet's AIMD windows, scoring, the SQLite store), no
cache. ``others_cpu`` is the share of the machine's CPU other processes used meanwhile.

    python benchmarks/fleet_throughput.py [--case fake|llama|both] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import measured


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_fake(port: int, delay_s: float, slots: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    gate = asyncio.Semaphore(slots)

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        async with gate:
            await asyncio.sleep(delay_s)
        text = body["messages"][-1]["content"]
        return JSONResponse({
            "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 4},
        })  # fmt: skip

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "bench"}]})

    app = Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)]
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s} s")


def start(case: str, args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    if case == "fake":
        cmd = [sys.executable, __file__, "_fake", str(port), str(args.delay), str(args.slots)]
    else:
        from calipers.models._gguf import bundled_smollm2

        cmd = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_smollm2()),
            "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
            "--n_threads_batch", "1", "--n_ctx", "1024",
        ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    wait_up(f"{url}/models", proc)
    return proc, url


def items_task(folder: Path, n: int) -> Path:
    rows = [{"id": f"i{i}", "input": f"Say the number {i}.", "target": str(i)} for i in range(n)]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "items.yaml"
    spec.write_text(
        "name: items\ndata: items.jsonl\nscorers: [exact_match]\n"
        "fields: {id: id, input: input, target: target}\n"
    )
    return spec


def one_point(case: str, urls: list[str], n_items: int, args: argparse.Namespace) -> dict[str, Any]:
    from calipers.models import FleetEndpoint, ModelOptions
    from calipers.runner import RunConfig, arun
    from calipers.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cap = 2 * args.slots if case == "fake" else 2  # room to queue: no slot idles
        config = RunConfig(
            model="openai:bench",
            tasks=(str(items_task(folder, n_items)),),
            use_cache=False,
            max_tokens=args.max_tokens,
            temperature=0.0,
            model_options=ModelOptions(
                fleet=tuple(FleetEndpoint(url=u, max_concurrency=cap) for u in urls)
            ),
        )
        out: dict[str, Any] = {"case": case, "endpoints": len(urls), "items": n_items}
        with Store.open(f"sqlite:///{folder / 'runs.db'}") as store, measured(out):
            result = asyncio.run(arun(config, store))
        out["errors"] = sum(t.n_errors for t in result.summary.tasks.values())
    out["per_s"] = n_items / out["seconds"]
    return out


def sweep(case: str, counts: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    rows = []
    try:
        for n in counts:
            while len(urls) < n:
                proc, url = start(case, args)
                procs.append(proc)
                urls.append(url)
            per = args.items_per_endpoint if case == "fake" else args.llama_items
            rows.append(one_point(case, urls[:n], per * n, args))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    base = rows[0]["per_s"]
    for r in rows:
        r["speedup"] = r["per_s"] / base
        # what the servers could do: slots / delay each (fake); one core each (llama: unknown)
        r["ideal_per_s"] = r["endpoints"] * args.slots / args.delay if case == "fake" else None
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_fake":
        run_fake(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=["fake", "llama", "both"], default="both")
    ap.add_argument("--delay", type=float, default=0.1, help="fake server: seconds per answer")
    ap.add_argument("--slots", type=int, default=4, help="fake server: answers at once")
    ap.add_argument("--items-per-endpoint", type=int, default=120, help="fake case")
    ap.add_argument("--llama-items", type=int, default=12, help="llama case, per endpoint")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    print(
        f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", file=sys.stderr
    )
    os.environ.setdefault("CALIPERS_HOME", tempfile.mkdtemp(prefix="calipers-bench-"))
    rows: list[dict[str, Any]] = []
    if args.case in ("fake", "both"):
        rows += sweep("fake", [1, 2, 4, 8], args)
    if args.case in ("llama", "both"):
        rows += sweep("llama", [1, 2], args)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'case':6} {'endpoints':>9} {'items':>6} {'seconds':>8} {'samples/s':>10} "
          f"{'ideal':>6} {'speedup':>8} {'errors':>6} {'client_ms/item':>14} "
          f"{'others_cpu':>10}")  # fmt: skip
    for r in rows:
        ideal = "-" if r["ideal_per_s"] is None else f"{r['ideal_per_s']:.0f}"
        print(
            f"{r['case']:6} {r['endpoints']:>9} {r['items']:>6} {r['seconds']:>8.2f} "
            f"{r['per_s']:>10.1f} {ideal:>6} {r['speedup']:>7.2f}x {r['errors']:>6} "
            f"{1000 * r['cpu_seconds'] / r['items']:>14.1f} {r['others_cpu_share']:>10.0%}"
        )


if __name__ == "__main__":
    main()
