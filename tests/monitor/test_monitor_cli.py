"""``calipers monitor`` end to end through click: report, JSON, --fail-on-drift, export,
simulate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.suites import read_pool
from tests.monitor._monitor_fixtures import (
    BASE,
    COOKING,
    HOUR,
    LONGER,
    T0,
    store_url,
    write_windows,
)

SPAN = ["--since", T0.isoformat(), "--until", (T0 + 3 * HOUR).isoformat()]
FAST = ["--embeddings", "tfidf", "--outlier-quantile", "0.05", "--seed", "1"]


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_report_json_and_fail_on_drift(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_windows(url, [BASE, BASE, LONGER.replace(topics=COOKING.topics)], n=70, seed=9)
    code, out = invoke(["--store", url, "monitor", *SPAN, *FAST, "--price", "1/2", "--json"])
    assert code == 0, out
    d = json.loads(out)
    assert [w["n_requests"] for w in d["windows"]] == [70, 70, 70]
    cost = d["windows"][0]["arms"]["baseline"]["cost_per_request_usd"]
    assert cost["method"].startswith("bootstrap") and cost["value"] > 0
    assert d["n_drifted_windows"] >= 1 and d["drift"][-1]["drifted"]
    assert d["novelty"]["n_outliers"] >= 10 and d["novelty"]["new_clusters"]
    code, out = invoke(["--store", url, "monitor", *SPAN, *FAST, "--fail-on-drift"])
    assert code == 1, out
    for text in (
        "Metrics per window",
        "Drift alarms",
        "prompt_length",
        "New clusters",
        "calipers monitor export",
    ):
        assert text in out
    code, out = invoke(
        ["--store", url, "monitor", *SPAN, *FAST, "--window", "3h", "--fail-on-drift"]
    )
    assert code == 0 and "0 of 0 window(s)" in out  # one window: nothing to compare it with
    assert "No reference period holds traffic" in out and "--reference START..END" in out


def test_with_fail_on_drift_an_error_or_a_bug_never_reads_as_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_url(tmp_path)
    write_windows(url, [BASE, BASE], n=20, seed=3)
    bad = ["--store", url, "monitor", "--since", "not-a-time"]
    assert invoke(bad)[0] == 2  # an error, as for any command
    code, out = invoke([*bad, "--fail-on-drift"])
    assert code == 3 and "Error:" in out  # not 1, which would read as "drift"

    def broken(*_args: object, **_kw: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("calipers.cli._monitor._run", broken)
    assert invoke(["--store", url, "monitor", *SPAN, *FAST])[0] == 1  # a bug
    code, out = invoke(["--store", url, "monitor", *SPAN, *FAST, "--fail-on-drift"])
    assert code == 4 and "Internal error: RuntimeError: boom" in out


def test_export_commands(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    write_windows(url, [BASE, COOKING], n=80, seed=4)
    span = ["--since", T0.isoformat(), "--until", (T0 + 2 * HOUR).isoformat()]
    queue = tmp_path / "queue.jsonl"
    code, out = invoke(
        ["--store", url, "monitor", "export", *span, *FAST, "--to-review", str(queue), "--json"]
    )
    assert code == 0, out
    result = json.loads(out)
    rows = queue.read_text("utf-8").splitlines()
    assert result["exported"] == len(rows) == result["flagged"] >= 10
    # options given before the subcommand carry over to it
    code, out = invoke(["--store", url, "monitor", *span, *FAST, "export", "--to-suite", "fresh"])
    assert code == 0, out
    assert f"{len(rows)} exported to suite fresh" in out
    assert len(read_pool("fresh")[0]) == len(rows)
    code, out = invoke(["--store", url, "monitor", "export", *span, *FAST])
    assert code == 2 and "--to-suite" in out


def test_simulate_and_bad_options(tmp_path: Path) -> None:
    code, out = invoke(
        ["monitor", "simulate", "--reps", "3", "--n", "30", "--permutations", "99", "--json"]
    )
    assert code == 0, out
    d = json.loads(out)
    assert d["reps"] == 3 and d["drift"] == "none" and 0 <= d["alarms"] <= 3
    url = store_url(tmp_path)
    for bad in (["--window", "soon"], ["--price", "x=1/2"], ["--reference", "1d..2d"]):
        code, out = invoke(["--store", url, "monitor", *bad])
        assert code == 2, (bad, out)
