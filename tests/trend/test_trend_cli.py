"""``calipers trend`` on stored runs of a fake model whose accuracy is planted per run."""

from __future__ import annotations

import json

from tests.trend.conftest import N, Planter, TrendRun, invoke


def test_a_drop_in_the_last_runs_is_a_regression_exit_1(planter: Planter, trend: TrendRun) -> None:
    ids = planter.runs([80, 81, 79, 80, 80, 79, 60, 61])
    res = trend()
    assert res.exit_code == 1, res.output
    assert "ALERT: regression" in res.stdout and ids[6] in res.stdout
    data = json.loads(trend("--json").stdout)
    reg = data["regression"]
    assert reg["run_id"] == ids[6]
    before, after = (80 + 81 + 79 + 80 + 80 + 79) / 6 / N, (60 + 61) / 2 / N
    shift = reg["change"]["shift"]
    assert abs(shift["value"] - (after - before)) < 0.01  # inverse-variance, near the plain means
    assert shift["low"] < after - before < shift["high"]
    assert reg["change"]["p_value"] < 0.01
    assert [p["run_id"] for p in data["points"]] == ids  # oldest first
    assert [p["estimate"]["value"] for p in data["points"]] == [
        k / N for k in (80, 81, 79, 80, 80, 79, 60, 61)
    ]


def test_a_flat_series_exits_0_with_no_change(planter: Planter, trend: TrendRun) -> None:
    planter.runs([80, 81, 79, 80, 82, 79, 80])
    res = trend()
    assert res.exit_code == 0, res.output
    assert "No regression" in res.stdout and "no change" in res.stdout
    data = json.loads(trend("--json").stdout)
    assert data["regression"] is None and data["stretches"][0]["changes"] == []


def test_a_small_drop_below_the_threshold_is_no_regression(
    planter: Planter, trend: TrendRun
) -> None:
    planter.runs([90, 90, 90, 90, 90, 80, 80, 80, 80])
    assert trend().exit_code == 1  # -10 points
    res = trend("--min-drop", "15")
    assert res.exit_code == 0, res.output
    assert "less than the practical threshold" in res.stdout


def test_a_methodology_change_is_marked_and_not_a_regression(
    planter: Planter, trend: TrendRun
) -> None:
    ids = planter.runs([80, 80, 81, 79])
    planter.task(template="Q: {input}\nA:")
    ids += planter.runs([60, 61, 60])
    res = trend()
    assert res.exit_code == 0, res.output
    assert "Methodology change" in res.stdout and "prompt_template.template" in res.stdout
    data = json.loads(trend("--json").stdout)
    (change,) = data["methodology_changes"]
    assert change["run_id"] == ids[4] and change["index"] == 4
    assert any(c.startswith("prompt_template.template:") for c in change["changes"])
    assert [(s["start"], s["end"], s["changes"]) for s in data["stretches"]] == [
        (0, 4, []),
        (4, 7, []),
    ]
    assert data["regression"] is None


def test_a_drop_after_a_methodology_change_is_found_within_it(
    planter: Planter, trend: TrendRun
) -> None:
    planter.runs([80, 80])
    planter.task(template="Q: {input}")
    ids = planter.runs([70, 71, 70, 69, 50, 50])
    data = json.loads(trend("--json").stdout)
    assert data["regression"]["run_id"] == ids[4]
    assert data["stretches"][1]["changes"][0]["index"] == 6


def test_clear_errors(planter: Planter, trend: TrendRun) -> None:
    res = trend()
    assert res.exit_code == 3 and "No runs of 'bot' on 'items'" in res.stderr
    planter.runs([50])
    res = trend("--metric", "accuracyy")
    assert res.exit_code == 3 and "metric 'accuracyy'" in res.stderr
    assert "exact_match" in res.stderr
    res = invoke("--store", planter.store, "trend", "nobody", "items")
    assert res.exit_code == 3 and "calipers runs" in res.stderr
    one = trend()
    assert one.exit_code == 0 and "nothing to compare" in one.stdout
    res = trend("--since", "2999-01-01")
    assert res.exit_code == 3 and "since 2999-01-01" in res.stderr


def test_a_rate_near_zero_keeps_its_level_inside_0_1(planter: Planter, trend: TrendRun) -> None:
    """0, 1 and 0 right of 100: the stretch's level is the Wilson interval of the pooled
    1/300 (statsmodels), never a normal interval reaching below 0%."""
    from statsmodels.stats.proportion import proportion_confint

    planter.runs([0, 1, 0])
    data = json.loads(trend("--json").stdout)
    (segment,) = data["stretches"][0]["segments"]
    low, high = proportion_confint(1, 3 * N, alpha=0.05, method="wilson")
    assert segment["mean"]["value"] == 1 / (3 * N)
    assert abs(segment["mean"]["low"] - low) < 1e-9 and abs(segment["mean"]["high"] - high) < 1e-9
