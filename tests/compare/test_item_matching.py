"""The leaderboard's per-item scores and saturation's score matrix match items as sorted numpy
arrays; here they are checked against a plain dictionary implementation (the one they
replaced) on planted runs with two epochs, errors, NaN, a missing metric, fewer items and
reversed row order."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from calipers.analysis._align import StoredRun
from calipers.analysis._leaderboard import _scores
from calipers.analysis._saturation import common_matrix
from calipers.store import RunRecord, SampleRecord
from tests.runner.test_streaming import _planted


def _run(k: int, records: Sequence[SampleRecord]) -> StoredRun:
    record = RunRecord(
        id=f"r{k}",
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        finished_at=None,
        status="finished",
        tasks=["alpha", "beta", "gamma"],
        methodology={},
        methodology_hash="h",
        config={"model": f"fake:m{k}"},
        summary=None,
        calipers_version="test",
    )
    return StoredRun(record, tuple(records))


def _runs() -> list[StoredRun]:
    out = []
    for k, seed in enumerate((3, 5, 8)):
        recs = _planted(n_items=120 - 15 * k, seed=seed)
        out.append(_run(k, recs[::-1] if k == 2 else recs))
    return out


def _rows_by_id(run: StoredRun, task: str, metric: str, drop_nan: bool) -> dict[str, SampleRecord]:
    """Item id -> its last scored record (a later epoch replaces an earlier one)."""
    out: dict[str, SampleRecord] = {}
    for s in run.samples:
        if s.task != task or s.error is not None or not s.scores or metric not in s.scores:
            continue
        if drop_nan and np.isnan(s.scores[metric]):
            continue
        out[s.sample_id] = s
    return out


def _score(s: SampleRecord, metric: str) -> float:
    assert s.scores is not None
    return float(s.scores[metric])


CASES = [("alpha", "acc"), ("alpha", "score"), ("beta", "score"), ("beta", "nope")]


@pytest.mark.parametrize(("task", "metric"), CASES)
def test_leaderboard_scores_equal_a_dictionary_join(task: str, metric: str) -> None:
    runs = _runs()
    labels, got = _scores(runs, task, metric)
    rows = [_rows_by_id(r, task, metric, drop_nan=False) for r in runs]
    common = sorted(set.intersection(*(set(d) for d in rows)))
    assert [lab.split()[-1] for lab in labels] == ["(r0)", "(r1)", "(r2)"]
    for lab, d in zip(labels, rows, strict=True):
        assert got[lab].dtype == np.float64
        np.testing.assert_array_equal(got[lab], [_score(d[i], metric) for i in common])
    assert (len(common) > 50) == (metric != "nope")


@pytest.mark.parametrize(("task", "metric"), CASES)
def test_saturation_matrix_equals_a_dictionary_join(task: str, metric: str) -> None:
    runs = _runs()
    ids, cats, x = common_matrix(runs, task, metric)
    rows = [_rows_by_id(r, task, metric, drop_nan=True) for r in runs]
    common = set.intersection(*(set(d) for d in rows))
    first = rows[0]
    want = sorted(common, key=lambda i: (first[i].position, first[i].epoch, i))
    assert ids == want
    assert cats == [first[i].category for i in want]
    assert x.shape == (3, len(want))
    for j, d in enumerate(rows):
        np.testing.assert_array_equal(x[j], [_score(d[i], metric) for i in want])
    assert not np.isnan(x).any()
