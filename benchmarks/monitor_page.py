"""The Monitor page and ``calipers monitor --json`` against the size of the gateway's log.

Fills a store with N traffic rows as the gateway writes them (``Store.add_traffic``, the
gateway log writer's call, in batches): synthetic shadow traffic, so two rows (baseline and
candidate) per request, spread over 24 hourly windows, the last hour drifted (longer prompts,
a new topic). Then times, in this process, ``GET /monitor`` and ``GET /api/monitor`` through
the real app (FastAPI's TestClient) and ``calipers monitor --json`` as a subprocess (its
import time included), over the whole day with the page's default TF-IDF embeddings.

N = 10^4, 10^5, 10^6 by default, on SQLite and, when ``CALIPERS_TEST_POSTGRES_URL`` is set,
on PostgreSQL (a schema of its own, ``calipers_bench_monitor_<N>``, dropped afterwards
unless ``--keep``). A filled SQLite store is kept in ``--work`` and reused by later runs.

    python benchmarks/monitor_page.py [--rows 10000 100000 1000000] [--work DIR] [--json]
        [--no-postgres] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
from rich.console import Console
from rich.table import Table

from calipers.monitor import TrafficProfile, synthetic_traffic
from calipers.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from _measure import measured

T0 = datetime(2026, 3, 2, tzinfo=UTC)
HOURS, BATCH, TARGET_S = 24, 5000, 5.0
PG_ENV = "CALIPERS_TEST_POSTGRES_URL"


def fill(url: str, rows: int, seed: int = 0) -> float:
    """``rows`` traffic rows (``rows // 2`` shadow requests) over 24 hours; the seconds taken."""
    base = TrafficProfile()
    drifted = base.replace(topics={**base.topics, "cooking": 0.25}, mean_words=11.0)
    rng = np.random.default_rng(seed)
    per_hour = np.full(HOURS, rows // 2 // HOURS)
    per_hour[: rows // 2 - int(per_hour.sum())] += 1
    start = time.perf_counter()
    with Store.open(url) as store:
        for h, n in enumerate(per_hour.tolist()):
            a = T0 + timedelta(hours=h)
            for b in range(0, n, BATCH):  # a batch at a time, as the log writer does
                span = (a + timedelta(hours=b / n), a + timedelta(hours=min(n, b + BATCH) / n))
                store.add_traffic(
                    synthetic_traffic(
                        min(BATCH, n - b),
                        start=span[0],
                        end=span[1],
                        rng=rng,
                        profile=drifted if h == HOURS - 1 else base,
                        prefix=f"h{h:02d}b{b:07d}-",
                    )
                )
    return time.perf_counter() - start


def query() -> dict[str, str]:
    return {
        "since": T0.isoformat(),
        "until": (T0 + timedelta(hours=HOURS)).isoformat(),
        "embeddings": "tfidf",
    }


def time_page(url: str, profile: Path | None) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from calipers.web import create_app

    out: dict[str, Any] = {}
    q = urlencode(query())
    with TestClient(create_app(url), base_url="http://127.0.0.1") as client:
        warm = {**query(), "until": (T0 + timedelta(hours=2)).isoformat()}
        client.get(f"/monitor?{urlencode(warm)}")  # the first load's imports: not timed
        prof = cProfile.Profile() if profile else None
        page: dict[str, Any] = {}
        with measured(page):
            if prof:
                prof.enable()
            r = client.get(f"/monitor?{q}")
            if prof:
                prof.disable()
        assert r.status_code == 200, r.text[:500]
        if prof and profile:
            prof.dump_stats(str(profile))
        api: dict[str, Any] = {}
        with measured(api):
            j = client.get(f"/api/monitor?{q}")
        assert j.status_code == 200, j.text[:500]
    data = j.json()
    out["page"], out["api"] = page, api
    out["n_requests"] = sum(w["n_requests"] for w in data["windows"])
    out["n_drifted_windows"] = data["n_drifted_windows"]
    out["notes"] = data["notes"]
    return out


def time_cli(url: str) -> dict[str, Any]:
    q = query()
    cmd = [sys.executable, "-m", "calipers", "--store", url, "monitor", "--since", q["since"],
           "--until", q["until"], "--embeddings", "tfidf", "--json"]  # fmt: skip
    out: dict[str, Any] = {}
    with measured(out):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"calipers monitor failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    out["children_cpu_s"] = sum(os.times()[2:4])
    out["n_requests"] = sum(w["n_requests"] for w in json.loads(proc.stdout)["windows"])
    return out


def _pg_schema(base: str, name: str, create: bool) -> str:
    """A schema of our own on the test server (the benchmark's store), and its URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(base)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
            if create:
                conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
    finally:
        engine.dispose()
    url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={name}"})
    return url.render_as_string(hide_password=False)


def one(backend: str, rows: int, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    res: dict[str, Any] = {"backend": backend, "rows": rows}
    if backend == "sqlite":
        path = work / f"monitor_{rows}.db"
        url = f"sqlite:///{path}"
        if not (path.exists() and (work / f"monitor_{rows}.done").exists()):
            path.unlink(missing_ok=True)
            res["fill_s"] = fill(url, rows)
            (work / f"monitor_{rows}.done").touch()
    else:
        url = _pg_schema(os.environ[PG_ENV], f"calipers_bench_monitor_{rows}", create=True)
        res["fill_s"] = fill(url, rows)
    try:
        prof = args.profile.with_suffix(f".{backend}.{rows}.prof") if args.profile else None
        res.update(time_page(url, prof))
        res["cli"] = time_cli(url)
    finally:
        if backend == "postgresql" and not args.keep:
            _pg_schema(os.environ[PG_ENV], f"calipers_bench_monitor_{rows}", create=False)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "calipers-bench")
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--sqlite-only", dest="no_postgres", action="store_true")
    ap.add_argument("--keep", action="store_true", help="Keep the PostgreSQL databases.")
    ap.add_argument("--profile", type=Path, help="cProfile the page load into FILE.*.prof")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    backends = ["sqlite"] + (
        ["postgresql"] if os.environ.get(PG_ENV) and not args.no_postgres else []
    )
    results = [one(b, n, args.work, args) for b in backends for n in args.rows]
    if args.json:
        print(json.dumps(results, indent=2, default=str))
        return
    table = Table(title=f"Monitor over 24 hourly windows (target: page < {TARGET_S:g} s at 10^6)")
    for col in ("store", "rows", "requests", "page s", "page cpu s", "api s", "cli s", "others"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r["backend"],
            f"{r['rows']:,}",
            f"{r['n_requests']:,}",
            f"{r['page']['seconds']:.2f}",
            f"{r['page']['cpu_seconds']:.2f}",
            f"{r['api']['seconds']:.2f}",
            f"{r['cli']['seconds']:.2f}",
            f"{r['page']['others_cpu_share']:.0%}",
        )
    Console().print(table)
    for r in results:
        for note in r["notes"]:
            print(f"{r['backend']} {r['rows']:,}: {note}")


if __name__ == "__main__":
    main()
