"""A writer killed with SIGKILL loses nothing it committed and leaves nothing half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import sqlalchemy as sa

from calipers.store import Store
from tests.store.conftest import run_record

BATCH = 10
PAYLOAD = "x" * 2000 + "é"

# Writes batches of samples as fast as it can until it is killed.
WRITER = """
import sys
from calipers.store import SampleRecord, Store

url, run_id, batch, payload = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with Store.open(url) as store:
    n = 0
    while True:
        store.add_samples([
            SampleRecord(
                run_id=run_id, task="t", sample_id=f"{n + k:06d}", position=n + k,
                prompt={"payload": payload, "n": n + k}, response=payload[::-1],
                scores={"acc": 1.0},
            )
            for k in range(batch)
        ])
        n += batch
"""


def test_kill_9_mid_write_keeps_every_committed_batch_whole(store_url: str, store: Store) -> None:
    store.create_run(run_record("r1"))
    env = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, "-c", WRITER, store_url, "r1", str(BATCH), PAYLOAD]
    child = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        # The parent reads through its own Store while the child writes: no lock errors.
        while len(store.done_keys("r1")) < 20 * BATCH:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            assert time.monotonic() < deadline, "the writer is too slow"
            time.sleep(0.01)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        if child.stderr:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    store.close()

    with Store.open(store_url) as reopened:
        got = reopened.get_samples("r1")
        n = len(got)
        assert n >= 20 * BATCH and n % BATCH == 0  # whole batches only
        assert [s.position for s in got] == list(range(n))
        for s in got:
            assert s.prompt == {"payload": PAYLOAD, "n": s.position}
            assert s.response == PAYLOAD[::-1] and s.scores == {"acc": 1.0}
        if store_url.startswith("sqlite"):
            with reopened._engine.connect() as conn:
                assert conn.execute(sa.text("PRAGMA integrity_check")).scalar() == "ok"
        # and the run goes on where it stopped
        more = [got[0].model_copy(update={"sample_id": "next", "position": n, "id": None})]
        assert reopened.add_samples(more) == 1
        assert len(reopened.done_keys("r1")) == n + 1
