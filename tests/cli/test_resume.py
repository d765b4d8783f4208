"""Interrupt a real `calipers run` process (Ctrl-C and kill -9) and resume it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

N = 150


def _task(tmp_path: Path) -> Path:
    rows = [{"id": f"i{i}", "input": f"item {i}", "target": f"item {i}"} for i in range(N)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "items.yaml"
    spec.write_text("name: items\ndata: items.jsonl\nscorers: [exact_match]\n")
    return spec


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("select count(*) from samples").fetchone()[0])
    except sqlite3.Error:
        return 0


def _default_sigint() -> None:
    # A shell's background job (`cmd &`, nohup) starts with SIGINT ignored, the child inherits
    # that, and Python then installs no KeyboardInterrupt handler: Ctrl-C would do nothing.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "calipers", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )


def _start_and_interrupt(tmp_path: Path, calipers_home: Path, sig: int) -> tuple[str, int]:
    env = {**os.environ, "CALIPERS_HOME": str(calipers_home)}
    proc = _cli(
        "run",
        "-m",
        "fake:echo,delay=0.02",
        "-t",
        str(_task(tmp_path)),
        "--concurrency",
        "1",
        "--no-cache",
        env=env,
    )
    db = calipers_home / "calipers.db"
    deadline = time.monotonic() + 60
    while _count(db) < 20:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no samples were written"
        time.sleep(0.05)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=30)
    with sqlite3.connect(db) as conn:
        run_id, status = conn.execute("select id, status from runs").fetchone()
    stored = _count(db)
    assert 20 <= stored < N
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "calipers run --resume" in err
        assert status == "interrupted"
    else:
        assert proc.returncode == -signal.SIGKILL and status == "running"
    return run_id, stored


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_interrupted_run_resumes_without_duplicates(
    tmp_path: Path, calipers_home: Path, sig: int
) -> None:
    run_id, _stored = _start_and_interrupt(tmp_path, calipers_home, sig)
    env = {**os.environ, "CALIPERS_HOME": str(calipers_home)}
    proc = _cli("run", "--resume", run_id, "--json", env=env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    data = json.loads(out)
    task = data["tasks"]["items"]
    assert data["run_id"] == run_id and task["n_samples"] == N
    assert task["metrics"]["exact_match"]["value"] == 1.0
    with sqlite3.connect(calipers_home / "calipers.db") as conn:
        rows = conn.execute("select sample_id from samples where run_id = ?", (run_id,))
        ids = [r[0] for r in rows]
    assert len(ids) == N == len(set(ids))
