"""Run summaries are typed; stores written before they were still read.

``tests/data/store-65d1b4a.db.gz`` is a SQLite store written by calipers at commit 65d1b4a
(summaries stored as plain dicts), with one finished run: the fake model answering six
capitals (categories europe 3, asia 2, africa 1) with Japan answered wrong and Egypt failing
with "upstream 503", scored by exact match, seed 7.
"""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter, ValidationError
from scipy.stats import norm

from calipers.cli import cli
from calipers.store import RunRecord, Store
from calipers.types import CallCounts, Estimate, RunSummary, TopError

LEGACY = Path(__file__).parents[1] / "data" / "store-65d1b4a.db.gz"


def wilson(k: int, n: int, z: float = norm.ppf(0.975)) -> tuple[float, float]:
    """Wilson score interval from its closed form (Wilson 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture
def legacy_db(tmp_path: Path) -> Path:
    path = tmp_path / "calipers.db"
    path.write_bytes(gzip.decompress(LEGACY.read_bytes()))
    return path


def _stored_json(path: Path) -> dict[str, Any]:
    con = sqlite3.connect(path)
    try:
        [(text,)] = con.execute("SELECT summary FROM runs").fetchall()
    finally:
        con.close()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_a_store_written_by_65d1b4a_reads_typed(legacy_db: Path) -> None:
    raw = _stored_json(legacy_db)
    with Store.open(f"sqlite:///{legacy_db}") as store:
        run = store.get_run("latest")
        samples = store.get_samples(run.id)
    assert isinstance(run.summary, RunSummary)
    ts = run.task_summary("capitals")
    assert ts is not None and ts.primary == "exact_match"
    assert (ts.n_samples, ts.n_scored, ts.n_errors, ts.n_cached) == (6, 5, 1, 0)
    acc = ts.primary_estimate
    assert isinstance(acc, Estimate)
    assert (acc.n, acc.method) == (5, "wilson") and acc.value == pytest.approx(4 / 5)
    assert (acc.low, acc.high) == pytest.approx(wilson(4, 5))
    cats = ts.categories
    assert {c: (v.n, v.n_errors) for c, v in cats.items()} == {
        "africa": (1, 1),
        "asia": (2, 0),
        "europe": (3, 0),
    }
    assert cats["europe"].metrics["exact_match"].value == 1.0
    assert cats["asia"].metrics["exact_match"].low == pytest.approx(wilson(1, 2)[0])
    africa = cats["africa"].metrics["exact_match"]
    assert math.isnan(africa.value) and africa.n == 0  # stored as null: NaN, never 0
    assert ts.top_error == TopError(message="model: ModelCallError: upstream 503", count=1)
    assert ts.errors == ("model",)
    assert ts.calls == CallCounts(retries=0, samples_retried=0, rate_limited=0, wait_s=0.0)
    assert (ts.n_tampering, ts.tampering) == (0, ())
    assert (ts.latency_s.n, ts.latency_s.method) == (5, "bootstrap-bca")
    assert ts.input_tokens == sum(s.input_tokens or 0 for s in samples)
    assert run.summary.elapsed_s == raw["elapsed_s"] and run.summary.judge_calibration is None
    # written back, the typed summary is the very dict that was stored
    assert run.summary.model_dump(mode="json") == raw


def test_show_json_prints_the_stored_summary_unchanged(legacy_db: Path) -> None:
    raw = _stored_json(legacy_db)
    res = CliRunner().invoke(cli, ["show", "latest", "--json", "--store", f"sqlite:///{legacy_db}"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["summary"] == raw


def _legacy_record(legacy_db: Path, summary: dict[str, Any]) -> RunRecord:
    with Store.open(f"sqlite:///{legacy_db}") as store:
        run = store.get_run("latest")
    return RunRecord.model_validate(run.model_dump() | {"summary": summary})


def test_older_shapes_read_with_what_they_did_not_record_as_unknown(legacy_db: Path) -> None:
    shape1 = _stored_json(legacy_db)  # before retries, top errors and tampering were counted
    del shape1["calls"]
    for key in ("top_error", "calls", "n_tampering", "tampering"):
        del shape1["tasks"]["capitals"][key]
    run = _legacy_record(legacy_db, shape1)
    assert run.summary is not None and run.summary.calls is None
    ts = run.summary.tasks["capitals"]
    assert (ts.calls, ts.top_error, ts.n_tampering, ts.tampering) == (None, None, 0, ())
    assert ts.metrics["exact_match"].value == pytest.approx(4 / 5)


def test_a_summary_that_fits_no_shape_is_refused(legacy_db: Path) -> None:
    odd = _stored_json(legacy_db)
    odd["tasks"]["capitals"]["n_scored_twice"] = 10
    with pytest.raises(ValidationError, match="n_scored_twice"):
        _legacy_record(legacy_db, odd)
    missing = _stored_json(legacy_db)
    del missing["tasks"]["capitals"]["latency_s"]  # every shape had it
    with pytest.raises(ValidationError, match="latency_s"):
        _legacy_record(legacy_db, missing)


def test_an_estimate_field_round_trips_nan_through_json() -> None:
    summary = RunSummary.model_validate(
        {
            "tasks": {},
            "calls": None,
            "judge_calibration": {"t": {"agreement": Estimate.empty().to_dict()}},
        }
    )
    dumped = summary.model_dump(mode="json")
    assert "elapsed_s" not in dumped  # absent, as before it was measured
    est = Estimate(float("nan"), float("nan"), float("nan"), 0, "none")
    back = TypeAdapter(Estimate).validate_python(est.to_dict())
    assert back.n == 0 and math.isnan(back.value) and math.isnan(back.high)
    assert TypeAdapter(Estimate).dump_python(back) == est.to_dict()
    assert json.dumps(est.to_dict()) == (
        '{"value": null, "low": null, "high": null, "n": 0, "method": "none", "confidence": 0.95}'
    )
