"""Gateway replicas on one PostgreSQL database: logged requests per second with 1 and with 3
``calipers gateway`` processes behind a round-robin client.

Each component is its own process on 127.0.0.1: a minimal upstream (the one of
``gateway_overhead.py``), the gateways (the real command, ``--mode off``, logging to a fresh
schema of the given database, dropped afterwards) and this script as the load generator
(closed loop, ``--concurrency`` requests in flight, spread round-robin over the replicas).
A request counts as logged once its row is in the database: the clock stops when the last
row is there. On this 2-core machine the gateways, the upstream, the load generator and
PostgreSQL share the two cores, so 3 replicas cannot be 3 times faster here; on separate
machines each replica would have its own.

    python benchmarks/gateway_replicas.py [--store URL] [--requests 3000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from _measure import measured
from gateway_overhead import Pool, free_port, start_upstream, stop, wait_http


def start_gateways(n: int, store: str, upstream: int, folder: Path) -> list[tuple[Any, int]]:
    """``n`` gateways started together (they migrate the blank schema once between them)."""
    procs = []
    for i in range(n):
        port = free_port()
        cmd = [sys.executable, "-m", "calipers", "gateway", "--store", store, "--baseline",
               f"http://127.0.0.1:{upstream}/v1", "--mode", "off", "--port", str(port)]  # fmt: skip
        log = (folder / f"gateway-{i}.log").open("wb")
        procs.append((subprocess.Popen(cmd, stderr=log), port))
    for proc, port in procs:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
    return procs


async def drive(ports: list[int], n: int, concurrency: int) -> int:
    """Send ``n`` requests, ``concurrency`` at a time, round-robin; how many got a 200."""
    pools = [Pool(port, "/v1/chat/completions") for port in ports]
    ok = 0
    todo = iter(range(n))

    async def worker() -> None:
        nonlocal ok
        for i in todo:
            status = await pools[i % len(pools)].post(i)
            ok += status == 200

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok


def logged(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM traffic")).scalar_one())


def one_setting(replicas: int, base_url: str, upstream: int, n: int, c: int) -> dict[str, Any]:
    schema = f"bench_replicas_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    url = sa.make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    store = url.render_as_string(hide_password=False)
    engine = sa.create_engine(store)
    out: dict[str, Any] = {"replicas": replicas, "requests": n, "concurrency": c}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            procs = start_gateways(replicas, store, upstream, Path(tmp))
            try:
                asyncio.run(drive([p for _, p in procs], 200, c))  # warm-up
                while logged(engine) < 200:
                    time.sleep(0.05)
                before = logged(engine)
                with measured(out):
                    t0 = time.perf_counter()
                    out["answered"] = asyncio.run(drive([p for _, p in procs], n, c))
                    out["answer_seconds"] = time.perf_counter() - t0
                    deadline = time.monotonic() + 120
                    while logged(engine) < before + out["answered"]:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.02)
                out["logged"] = logged(engine) - before
                out["answered_per_s"] = out["answered"] / out["answer_seconds"]
                out["logged_per_s"] = out["logged"] / out["seconds"]
            finally:
                for proc, _ in procs:
                    stop(proc)
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default=os.environ.get("CALIPERS_TEST_POSTGRES_URL"),
                    help="a PostgreSQL URL (default: $CALIPERS_TEST_POSTGRES_URL)")  # fmt: skip
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    if not args.store:
        sys.exit("Give --store postgresql+psycopg://... (or set CALIPERS_TEST_POSTGRES_URL).")
    upstream, port = start_upstream(0.0)
    try:
        results = [
            one_setting(r, args.store, port, args.requests, args.concurrency) for r in (1, 3)
        ]
    finally:
        stop(upstream)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'replicas':>8} {'answered/s':>11} {'logged/s':>9} {'logged':>7} {'loadavg':>8}")
    for r in results:
        print(
            f"{r['replicas']:>8} {r['answered_per_s']:>11.0f} {r['logged_per_s']:>9.0f} "
            f"{r['logged']:>7} {r['loadavg_after']:>8.1f}"
        )


if __name__ == "__main__":
    main()
