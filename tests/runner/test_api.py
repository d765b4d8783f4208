"""The Python API mirrors the command line."""

from __future__ import annotations

import calipers
from calipers.types import Estimate


def test_run_from_python_stores_and_summarizes() -> None:
    result = calipers.run("fake:const=42", "dyn_arithmetic", limit=4, seed=1)
    task = result.summary.tasks["dyn_arithmetic"]
    acc = task.metrics["acc"]
    assert isinstance(acc, Estimate)
    assert acc.n == 4 and acc.method == "wilson" and task.n_errors == 0
    with calipers.Store.open() as store:
        assert store.get_run(result.run_id).status == "finished"
        assert len(store.get_samples(result.run_id)) == 4
