"""Leaderboards with rank intervals and sample-size plans, on fake-model runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy import stats

from calipers.analysis import load_runs
from calipers.analysis._leaderboard import Board, leaderboard
from calipers.analysis._sizing import plan_size
from calipers.cli import cli
from calipers.store import Store
from tests.compare.test_compare import make_run, right_on

N = 200


@pytest.fixture
def big_task(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "input": f"item {i}", "target": "yes"} for i in range(N)]
    (tmp_path / "big.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "big.yaml"
    spec.write_text("name: big\ndata: big.jsonl\nscorers: [exact_match]\n")
    return spec


def boards() -> list[Board]:
    with Store.open() as store:
        runs = load_runs(store, [r.id for r in store.list_runs()])
    return leaderboard(runs, n_resamples=500)


def test_separated_models_rank_with_degenerate_intervals(big_task: Path) -> None:
    make_run(big_task, right_on(range(0, 40), "weak"))
    make_run(big_task, right_on(range(0, 100), "middle"))
    make_run(big_task, right_on(range(0, 180), "strong"))
    odd = make_run(big_task, right_on(range(0, 200), "other-prompt"), system_prompt="Be brief.")
    [board] = boards()
    assert [e.model for e in board.entries] == ["strong", "middle", "weak"]
    assert [(e.rank, e.rank_low, e.rank_high) for e in board.entries] == [
        (1, 1, 1),
        (2, 2, 2),
        (3, 3, 3),
    ]
    assert [e.tie_group for e in board.entries] == [1, 2, 3]
    assert board.n_items == N and not board.saturated
    [unranked] = board.unranked
    assert unranked["run_id"] == odd and "system_prompt" in unranked["why"]


def test_indistinguishable_models_tie_and_the_board_says_saturated(big_task: Path) -> None:
    make_run(big_task, right_on(range(0, 120), "a"))
    make_run(big_task, right_on(range(2, 122), "b"))
    make_run(big_task, right_on(range(0, 20), "c"))
    [board] = boards()
    top = board.entries[:2]
    assert {e.model for e in top} == {"a", "b"} and top[0].tie_group == top[1].tie_group == 1
    assert all((e.rank_low, e.rank_high) == (1, 2) for e in top)
    assert board.saturated and board.saturation_note


def test_latest_run_of_a_model_counts(big_task: Path) -> None:
    make_run(big_task, right_on(range(0, 10), "m"))
    latest = make_run(big_task, right_on(range(0, 10), "m"), seed=1)
    make_run(big_task, right_on(range(0, 150), "n"))
    [board] = boards()
    assert [e.run_id for e in board.entries if e.model == "m"] == [latest]


def test_plan_matches_miller_formula() -> None:
    p = plan_size(delta=0.05, baseline_acc=0.7, correlation=0.5)
    pa, pb, r = 0.7, 0.75, 0.5
    var = pa * (1 - pa) + pb * (1 - pb) - 2 * r * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert p.n_paired == math.ceil(z * z * var / 0.05**2)
    assert p.n_unpaired > p.n_paired


def test_cli_plan_uses_two_pilots(big_task: Path) -> None:
    a = make_run(big_task, right_on(range(0, 100), "a"))
    b = make_run(big_task, right_on(range(0, 110), "b"))
    res = CliRunner().invoke(
        cli,
        ["plan", "--delta", "0.05", "--pilot", a, "--pilot", b, "--json"],
        catch_exceptions=False,
    )
    plan = json.loads(res.stdout)
    # the two pilots' per-item scores: phi correlation computed independently
    xa = [1.0 if i < 100 else 0.0 for i in range(N)]
    xb = [1.0 if i < 110 else 0.0 for i in range(N)]
    assert plan["correlation"] == pytest.approx(stats.pearsonr(xa, xb)[0])
    assert plan["baseline_acc"] == pytest.approx(0.5) and plan["task"] == "big"
    assert plan["items_available"] == N and plan["est_seconds_per_model"] is not None
    res = CliRunner().invoke(cli, ["plan", "--delta", "0.03"], catch_exceptions=False)
    assert "items, both models on the same items (paired)" in res.stdout
    assert "0.5 assumed" in res.stdout
