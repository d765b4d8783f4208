"""Peak memory and wall time of ``calipers run``/``show``/``compare``/``report``/``leaderboard``
at growing run sizes (issue 22 section 4: 10^6 samples under 1 GB, analysis under 30 s).

Each command runs as its own subprocess (``python -m calipers``) against one SQLite store in a
temporary folder; its peak RSS is the child's ``ru_maxrss`` (from ``os.wait4``), its time the
wall clock around it. The task is a generated JSONL task file (``n`` items, targets ``A``/``B``,
20 categories, clusters of 4 items) written into the temporary folder, never into the repo.
Run A answers with ``fake:sample=A|B`` (1% injected failures), run B with ``fake:cycle=A|B``,
so both runs have errors, categories, clusters and scores that differ item by item.

    python benchmarks/memory_scale.py --sizes 10000 100000 [--json]
    python benchmarks/memory_scale.py --sizes 1000000 --commands run,show,compare,report
    python benchmarks/memory_scale.py --python /other/checkout/.venv/bin/python  # "before"

``--python`` runs the commands with another interpreter (another checkout's virtual
environment), so the same script measures an older version of calipers.

``--synthetic`` measures the analysis commands where two real fake-model runs would take too
long on a shared machine: both runs are made with ``calipers run`` on 1,000 items, then their
samples are replaced by ``n`` rows of the same shape written straight into the store (what the
fake model writes: prompt, response, answer, target, scores, details) and their summaries
recomputed from the stored rows (``summarize_stored``). ``run`` is then not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

COMMANDS = ("run", "show", "compare", "report", "leaderboard")


def write_task(folder: Path, n: int) -> Path:
    """``n`` items in ``items.jsonl`` (streamed to disk) and the task file naming it."""
    with (folder / "items.jsonl").open("w") as f:
        for i in range(n):
            row = {
                "id": f"q{i}",
                "question": f"Item {i}: answer A or B.",
                "answer": "AB"[(i * 7919) % 3 == 0],
                "topic": f"topic{i % 20}",
                "group": f"g{i // 4}",
            }
            f.write(json.dumps(row) + "\n")
    spec = folder / "scale.yaml"
    spec.write_text(
        "name: scale\nversion: '1'\ndata: items.jsonl\n"
        "fields: {id: id, input: question, target: answer, category: topic, cluster: group}\n"
        "scorers: [exact_match]\ngeneration: {max_tokens: 4, temperature: 0}\n"
    )
    return spec


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str, float]:
    """Run ``cmd``; return (wall seconds, peak RSS in MiB, stdout, CPU seconds)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}:\n{stderr[-2000:]}")
    return wall, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime


def fill(db: Path, run_ids: list[str], n: int) -> None:
    """Replace the runs' samples by ``n`` rows each, shaped as the fake model writes them,
    and store summaries recomputed from those rows."""
    import sqlalchemy as sa

    from calipers.runner import summarize_stored
    from calipers.store import Store
    from calipers.store._schema import samples  # the benchmark writes rows directly

    with Store.open(f"sqlite:///{db}") as store:
        engine = store._engine
        for k, rid in enumerate(run_ids):
            with engine.begin() as conn:
                conn.execute(samples.delete().where(samples.c.run_id == rid))
            for start in range(0, n, 20_000):
                rows = []
                for i in range(start, min(n, start + 20_000)):
                    target = "AB"[(i * 7919) % 3 == 0]
                    failed = k == 0 and (i * 2654435761) % 100 == 0
                    answer = "AB"[(i * (k + 3)) % 2]
                    rows.append(
                        {
                            "run_id": rid,
                            "task": "scale",
                            "sample_id": f"q{i}",
                            "epoch": 0,
                            "position": i,
                            "category": f"topic{i % 20}",
                            "cluster": f"g{i // 4}",
                            "prompt": {"prompt": f"Item {i}: answer A or B.", "params": {}},
                            "response": None if failed else answer,
                            "answer": None,
                            "target": target,
                            "scores": None if failed else {"exact_match": float(answer == target)},
                            "score_details": None if failed else {"exact_match": {}},
                            "latency_s": 0.0001,
                            "input_tokens": 6,
                            "output_tokens": None if failed else 1,
                            "cost_usd": None,
                            "cached": False,
                            "error": "model: ModelCallError: fake model: injected failure"
                            if failed
                            else None,
                            "created_at": datetime.now(UTC),
                            "seed": None,
                        }
                    )
                with engine.begin() as conn:
                    conn.execute(sa.insert(samples), rows)
            run = store.get_run(rid)
            card = run.methodology
            summary = summarize_stored(
                store,
                rid,
                {"scale": ["exact_match"]},
                seed=card["seeds"]["bootstrap"],
                confidence=card.get("confidence", 0.95),
            )
            store.update_run(rid, summary=summary)


def measure(
    n: int, python: str, commands: tuple[str, ...], synthetic: bool = False
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="calipers-scale-") as d:
        folder = Path(d)
        spec = write_task(folder, 1000 if synthetic else n)
        env = {**os.environ, "CALIPERS_HOME": str(folder / "home"), "COLUMNS": "160"}
        base = [python, "-m", "calipers", "--store", f"sqlite:///{folder / 'scale.db'}"]
        ids = []
        for i, model in enumerate(("fake:sample=A|B,fail=0.01", "fake:cycle=A|B")):
            cmd = [*base, "run", "-m", model, "-t", str(spec), "--no-report", "--json"]
            wall, rss, out, cpu = timed(cmd, env)
            ids.append(json.loads(out)["run_id"])
            if i == 0 and "run" in commands and not synthetic:
                rows.append(_row(n, "run", wall, rss, cpu))
        if synthetic:  # in a child process: a child's peak RSS starts from its parent's
            filler = [python, __file__, "--fill", str(folder / "scale.db"), str(n), *ids]
            timed(filler, env)
        analysis = {
            "show": ["show", ids[0], "--failures", "5"],
            "compare": ["compare", ids[0], ids[1], "--json"],
            "report": ["report", ids[0], ids[1], "--out", str(folder / "reports")],
            "leaderboard": ["leaderboard", "--json"],
        }
        for name, args in analysis.items():
            if name in commands:
                wall, rss, _out, cpu = timed([*base, *args], env)
                rows.append(_row(n, name, wall, rss, cpu))
    return rows


def _row(n: int, command: str, wall: float, rss: float, cpu: float) -> dict[str, Any]:
    return {"n": n, "command": command, "seconds": wall, "cpu_seconds": cpu, "peak_rss_mib": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated")
    ap.add_argument("--python", default=sys.executable, help="interpreter to run calipers")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument(
        "--synthetic", action="store_true", help="analysis commands on rows written directly"
    )
    ap.add_argument("--fill", nargs="+", help=argparse.SUPPRESS)  # DB N RUN_ID...: internal
    args = ap.parse_args()
    if args.fill:
        fill(Path(args.fill[0]), args.fill[2:], int(args.fill[1]))
        return
    commands = tuple(c for c in args.commands.split(",") if c)
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        ap.error(f"unknown commands: {', '.join(sorted(unknown))}")
    rows = [r for n in args.sizes for r in measure(n, args.python, commands, args.synthetic)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="calipers at scale: peak RSS and wall time per command (fake model)")
    for c in ("samples", "command", "seconds", "CPU s", "peak RSS (MiB)", "target"):
        table.add_column(c, justify="left" if c == "command" else "right")
    for r in rows:
        target = "< 1 GB" if r["command"] == "run" else "< 30 s"
        table.add_row(
            f"{r['n']:,}",
            r["command"],
            f"{r['seconds']:.1f}",
            f"{r['cpu_seconds']:.1f}",
            f"{r['peak_rss_mib']:,.0f}",
            target,
        )
    Console().print(table)


if __name__ == "__main__":
    main()
