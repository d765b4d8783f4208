"""The command line's fixed cost: ``calipers --help``, ``calipers show latest`` on a 200-sample
run, and a cached re-run of ``calipers run --limit 16`` against its first run.

Every command runs as a fresh process (``python -m calipers ...``), as a user runs it, in a
temporary ``CALIPERS_HOME``; the figures are wall seconds, medians of ``--repeat`` runs, with
the load average and the share of CPU other processes used meanwhile (on a shared machine the
figures are only comparable when that share is near 0). The 200-sample run for ``show`` is
made with the fake model (4 dynamic tasks x 50 items); the first run and its re-runs use
``--model`` (default: the embedded SmolLM2). The re-run must not load the model: every sample
comes from the response cache.

Targets (issue 16, section 7): ``--help`` < 0.5 s, ``show`` < 1 s, cached re-run >= 50x faster
than the first run.

    python benchmarks/cli_overhead.py [--repeat 5] [--limit 16] [--no-extra-buffers]

``--no-extra-buffers`` makes the first run load the model without llama.cpp's extra buffer
types (see ``benchmarks/threads_under_load.py``: AMX faults on some virtual machines). It
costs the first run the import of llama_cpp; the re-runs run plainly.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from _measure import measured

SRC = Path(__file__).resolve().parents[1] / "src"
_NO_EXTRA_BUFFERS = """
import llama_cpp.llama_cpp as lc
default = lc.llama_model_default_params
def params():
    p = default()
    p.use_extra_bufts = False
    return p
lc.llama_model_default_params = params
from calipers.cli import main
main()
"""


def _calipers(args: list[str], home: Path, *, patched: bool = False) -> dict[str, Any]:
    env = {
        **os.environ,
        "CALIPERS_HOME": str(home),
        "COLUMNS": "160",
        "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    cmd = (
        [sys.executable, "-c", _NO_EXTRA_BUFFERS] if patched else [sys.executable, "-m", "calipers"]
    )
    out: dict[str, Any] = {}
    with measured(out):
        proc = subprocess.run(
            [*cmd, *args], env=env, cwd=home.parent, capture_output=True, text=True, timeout=3600
        )
    if proc.returncode != 0:
        raise SystemExit(
            f"calipers {' '.join(args)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        )
    out["stdout"] = proc.stdout
    return out


def _repeat(args: list[str], home: Path, n: int) -> list[dict[str, Any]]:
    return [_calipers(args, home) for _ in range(n)]


def _row(table: Table, label: str, runs: list[dict[str, Any]], target: str, ok: bool) -> None:
    secs = [r["seconds"] for r in runs]
    table.add_row(
        label,
        " ".join(f"{s:.2f}" for s in secs),
        f"{statistics.median(secs):.2f}",
        target,
        "pass" if ok else "FAIL",
        f"{statistics.median(r['loadavg_after'] for r in runs):.1f}",
        f"{100 * statistics.median(r['others_cpu_share'] for r in runs):.0f}%",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--limit", type=int, default=16)
    ap.add_argument("--no-extra-buffers", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        shows, runs = work / "show-home", work / "run-home"
        helps = _repeat(["--help"], shows, args.repeat)
        _calipers(["run", "-m", "fake:echo", "-n", "50", "--no-report"], shows)
        show = _repeat(["show", "latest"], shows, args.repeat)
        run = ["run", "-m", args.model, "--limit", str(args.limit), "--json"]
        first = _calipers(run, runs, patched=args.no_extra_buffers)
        again = _repeat(run, runs, args.repeat)
    cached = [json.loads(r["stdout"]) for r in again]
    n_cached = {sum(t["n_cached"] for t in c["tasks"].values()) for c in cached}
    n_samples = sum(t["n_samples"] for t in json.loads(first["stdout"])["tasks"].values())
    rerun = statistics.median(r["seconds"] for r in again)
    speedup = first["seconds"] / rerun
    table = Table(title=f"calipers command line, fresh processes, median of {args.repeat}")
    for c in ("command", "seconds (each)", "median s", "target", "", "load avg", "others' CPU"):
        table.add_column(c, justify="right")
    _row(
        table,
        "calipers --help",
        helps,
        "< 0.5 s",
        statistics.median(r["seconds"] for r in helps) < 0.5,
    )
    _row(
        table,
        "calipers show latest (200 samples)",
        show,
        "< 1 s",
        statistics.median(r["seconds"] for r in show) < 1.0,
    )
    _row(table, f"calipers run -m {args.model} --limit {args.limit}: first run", [first], "", True)
    _row(table, "... cached re-run", again, f">= 50x: {speedup:.0f}x", speedup >= 50)
    console = Console(width=160)
    console.print(table)
    console.print(f"Re-runs answered {sorted(n_cached)} of {n_samples} samples from the cache.")


if __name__ == "__main__":
    main()
