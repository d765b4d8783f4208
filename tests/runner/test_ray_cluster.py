"""The Ray executor on a real two-node local Ray cluster (tests/_ray_cluster.py).

Rows are counted in the store with SQL, not through the code under test: every planned sample
once (no loss, no duplicate) after a worker is killed with SIGKILL mid-shard, after the driver
is killed and the run resumed with another number of workers, and after a sample that kills its
worker every time spends its retries.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calipers.models import FakeModel
from calipers.runner import RayExecutor, RunConfig, arun, comparable_hash, make_plan
from calipers.store import SampleRecord, Store
from calipers.types import ModelRequest
from tests._ray_cluster import RayCluster, running_cluster

pytestmark = pytest.mark.slow  # a cluster takes 10-30 s to start on a shared 2-core machine

TASKS = ("dyn_arithmetic", "dyn_dates_mc")  # a generation task and a log-likelihood one


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    with running_cluster() as cluster:
        yield cluster


def _counts(db: Path, run_id: str) -> tuple[int, int, int]:
    """(rows, distinct (task, sample, epoch) keys, rows with an error), straight from SQL."""
    with sqlite3.connect(db) as con:
        rows, keys, errors = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT task || '|' || sample_id || '|' || epoch), "
            "SUM(error IS NOT NULL) FROM samples WHERE run_id = ?",
            (run_id,),
        ).fetchone()
    return int(rows), int(keys), int(errors or 0)


def _outcome(records: list[SampleRecord]) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {
        r.key: (r.position, r.seed, r.response, r.answer, r.scores, r.error, r.prompt)
        for r in records
    }


class _Notes:
    """A Progress that keeps what it is told."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.advanced = 0
        self.totals: dict[str, tuple[int, int]] = {}

    def start_run(self, run_id: str) -> None:
        pass

    def note(self, message: str) -> None:
        self.notes.append(message)

    def start_task(self, task: str, total: int, done: int) -> None:
        self.totals[task] = (total, done)

    def advance(self, task: str, record: SampleRecord) -> None:
        self.advanced += 1

    def retrying(self, task: str, sample_id: str, retry: Any) -> None:
        pass

    def finish_task(self, task: str) -> None:
        pass


def test_ray_records_equal_the_local_executors(ray_cluster: RayCluster, tmp_path: Path) -> None:
    cfg = RunConfig(model="fake:sample=7|12|Paris|B,delay=0.02", tasks=TASKS, limit=15, seed=4)
    with Store.open(f"sqlite:///{tmp_path / 'local.db'}") as st:
        local = asyncio.run(arun(cfg, st))
        want = _outcome(st.get_samples(local.run_id))
    progress = _Notes()
    with Store.open(f"sqlite:///{tmp_path / 'ray.db'}") as st:
        ex = RayExecutor(address=ray_cluster.address, workers=3)
        got = asyncio.run(arun(cfg, st, executor=ex, progress=progress))
        have = _outcome(st.get_samples(got.run_id))
        run = st.get_run(got.run_id)
    assert len(want) == 30 and have == want  # same ids, responses, answers, scores
    # the methodology (and so comparability and cache keys) does not know the executor
    with Store.open(f"sqlite:///{tmp_path / 'local.db'}") as st:
        assert run.methodology_hash == st.get_run(local.run_id).methodology_hash
    for task in TASKS:
        a_hash = comparable_hash(local.methodology, task)
        assert comparable_hash(got.methodology, task) == a_hash
    assert got.methodology.model.key() == local.methodology.model.key()
    for task in TASKS:
        a, b = local.summary.tasks[task], got.summary.tasks[task]
        assert a.metrics == b.metrics and a.n_samples == b.n_samples == 15
    assert progress.advanced == 30 and progress.totals == {t: (15, 0) for t in TASKS}
    assert _counts(tmp_path / "ray.db", got.run_id) == (30, 30, 0)


def _kill_a_worker_when(
    cluster: RayCluster, db: Path, rows: int, killed: list[int], timeout: float = 120
) -> None:
    """Once ``rows`` samples are stored, SIGKILL one ShardWorker process mid-run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as con:
                n = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        except sqlite3.Error:
            n = 0
        pids = cluster.worker_pids()
        if n >= rows and pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            return
        time.sleep(0.1)


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    db = tmp_path / "kill.db"
    cfg = RunConfig(
        model="fake:sample=1|2|3,delay=0.4", tasks=("dyn_arithmetic",), limit=48, concurrency=2
    )
    killed: list[int] = []
    killer = threading.Thread(target=_kill_a_worker_when, args=(ray_cluster, db, 6, killed))
    progress = _Notes()
    with Store.open(f"sqlite:///{db}") as st:
        killer.start()
        ex = RayExecutor(address=ray_cluster.address, workers=2, shard_size=4)
        result = asyncio.run(arun(cfg, st, executor=ex, progress=progress))
        killer.join()
    assert killed, "no worker was found to kill"
    print(f"killed worker {killed[0]}; rows, keys, errors: {_counts(db, result.run_id)}")
    assert any("A Ray worker died" in n for n in progress.notes), progress.notes
    assert result.status == "finished"
    assert _counts(db, result.run_id) == (48, 48, 0)  # 0 lost, 0 duplicated, 0 errors


def _calipers(*args: str) -> list[str]:
    return [sys.executable, "-m", "calipers", *args]


def test_a_killed_driver_resumes_with_another_worker_count(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    db = tmp_path / "driver.db"
    store = ["--store", f"sqlite:///{db}"]
    common = ["--executor", "ray", "--address", ray_cluster.address, "--no-report", "--json"]
    n = 40
    model = ["-m", "fake:sample=1|2|3,delay=0.5", "-t", "dyn_arithmetic", "-n", str(n)]
    driver = subprocess.Popen(
        _calipers("run", *model, "--concurrency", "2", "--workers", "2", *common, *store),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        stored = 0
        while time.monotonic() < deadline and driver.poll() is None:
            try:
                with sqlite3.connect(db) as con:
                    stored = con.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            except sqlite3.Error:  # the store is not made yet
                stored = 0
            if stored >= 8:
                break
            time.sleep(0.1)
        assert driver.poll() is None, "the run ended before it could be killed"
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    with sqlite3.connect(db) as con:
        [(run_id, status)] = con.execute("SELECT id, status FROM runs").fetchall()
    before = _counts(db, run_id)
    assert status == "running" and 8 <= before[0] < n and before[0] == before[1]
    resumed = subprocess.run(
        _calipers("run", "--resume", run_id, "--workers", "3", *common, *store),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    print(
        f"rows, keys, errors after the driver's kill {before}, after --resume {_counts(db, run_id)}"
    )
    assert _counts(db, run_id) == (n, n, 0)  # exactly the missing samples were added
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "finished"


def test_a_run_through_ray_client(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """``--address ray://HOST:PORT``: the driver joins through the head's Ray Client server
    (what a laptop outside the cluster does) and stores every sample once."""
    db = tmp_path / "client.db"
    n = 20
    done = subprocess.run(
        _calipers(
            "--store", f"sqlite:///{db}", "run", "-m", "fake:sample=1|2|3,delay=0.05",
            "-t", "dyn_arithmetic", "-n", str(n), "--executor", "ray",
            "--address", ray_cluster.client_address, "--workers", "2", "--no-report", "--json",
        ),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = json.loads(done.stdout)["run_id"]
    assert _counts(db, run_id) == (n, n, 0)


def _last_message(request: object) -> str:
    assert isinstance(request, ModelRequest) and request.messages
    return str(request.messages[-1].content)


def _poisoned(marker: str) -> FakeModel:
    def respond(request: ModelRequest) -> str:
        text = str(request.messages[-1].content if request.messages else request.prompt)
        if marker in text:
            os._exit(1)  # the worker process dies on this sample, every time
        return "7"

    return FakeModel(respond, name="poison", delay_s=0.05)


def test_a_sample_that_always_kills_its_worker_becomes_an_error_row(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    import ray

    pickle_by_value: Any = ray.cloudpickle.register_pickle_by_value
    pickle_by_value(sys.modules[__name__])  # the responder goes to the actors by value
    cfg = RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), limit=12, seed=2)
    items = make_plan(cfg).tasks[0].samples
    victim = items[5]
    marker = _last_message(victim.request)
    assert sum(marker in _last_message(p.request) for p in items) == 1
    db = tmp_path / "poison.db"
    ex = RayExecutor(address=ray_cluster.address, workers=2, shard_size=3, max_restarts=8)
    with Store.open(f"sqlite:///{db}") as st:
        result = asyncio.run(arun(cfg, st, provider=_poisoned(marker), executor=ex))
        rows = {r.sample_id: r for r in st.get_samples(result.run_id)}
        assert _counts(db, result.run_id)[:2] == (12, 12)  # nothing dropped, nothing twice
        bad = rows[victim.sample.id]
        print(f"rows, keys, errors: {_counts(db, result.run_id)}; {bad.error}")
        assert bad.error is not None and bad.error.startswith("executor: the worker died 4 times")
        assert bad.prompt["messages"][-1]["content"] == marker  # the row keeps its prompt
        # a neighbour caught in the same deaths may also have spent its retries: still a row
        others = [r for sid, r in rows.items() if sid != victim.sample.id]
        assert all(r.error is None or r.error.startswith("executor:") for r in others)
    unpickle: Any = ray.cloudpickle.unregister_pickle_by_value
    unpickle(sys.modules[__name__])
