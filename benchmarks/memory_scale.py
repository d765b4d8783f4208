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
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
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


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak RSS in MiB, stdout)."""
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
    return wall, usage.ru_maxrss / 1024, stdout


def measure(n: int, python: str, commands: tuple[str, ...]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="calipers-scale-") as d:
        folder = Path(d)
        spec = write_task(folder, n)
        env = {**os.environ, "CALIPERS_HOME": str(folder / "home"), "COLUMNS": "160"}
        base = [python, "-m", "calipers", "--store", f"sqlite:///{folder / 'scale.db'}"]
        ids = []
        for i, model in enumerate(("fake:sample=A|B,fail=0.01", "fake:cycle=A|B")):
            cmd = [*base, "run", "-m", model, "-t", str(spec), "--no-report", "--json"]
            wall, rss, out = timed(cmd, env)
            ids.append(json.loads(out)["run_id"])
            if i == 0 and "run" in commands:
                rows.append({"n": n, "command": "run", "seconds": wall, "peak_rss_mib": rss})
        analysis = {
            "show": ["show", ids[0], "--failures", "5"],
            "compare": ["compare", ids[0], ids[1], "--json"],
            "report": ["report", ids[0], ids[1], "--out", str(folder / "reports")],
            "leaderboard": ["leaderboard", "--json"],
        }
        for name, args in analysis.items():
            if name in commands:
                wall, rss, _out = timed([*base, *args], env)
                rows.append({"n": n, "command": name, "seconds": wall, "peak_rss_mib": rss})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated")
    ap.add_argument("--python", default=sys.executable, help="interpreter to run calipers")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    commands = tuple(c for c in args.commands.split(",") if c)
    unknown = set(commands) - set(COMMANDS)
    if unknown:
        ap.error(f"unknown commands: {', '.join(sorted(unknown))}")
    rows = [r for n in args.sizes for r in measure(n, args.python, commands)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="calipers at scale: peak RSS and wall time per command (fake model)")
    for c in ("samples", "command", "seconds", "peak RSS (MiB)", "target"):
        table.add_column(c, justify="left" if c == "command" else "right")
    for r in rows:
        target = "< 1 GB" if r["command"] == "run" else "< 30 s"
        table.add_row(
            f"{r['n']:,}",
            r["command"],
            f"{r['seconds']:.1f}",
            f"{r['peak_rss_mib']:,.0f}",
            target,
        )
    Console().print(table)


if __name__ == "__main__":
    main()
