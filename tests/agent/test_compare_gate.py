"""``calipers compare`` and ``calipers gate`` on two agent runs with trials (epochs): items
are paired on their mean over trials, never on trial records as if independent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.analysis import compare, load_runs
from calipers.cli import cli
from calipers.runner import run
from calipers.store import Store
from tests.agent import _world

# planted agent, 4 trials: per-item success r1 1, r2 .5, r3 0, r4 1, c1 1, x1 0
RATES = {"r1": 1.0, "r2": 0.5, "r3": 0.0, "r4": 1.0, "c1": 1.0, "x1": 0.0}


@pytest.fixture(autouse=True)
def world() -> None:
    _world.register()


def two_runs(store: Store) -> tuple[str, str]:
    a = run("planted:a", "till", store=store, epochs=4, temperature=0.7)
    b = run("baseline:do-nothing", "till", store=store, epochs=4, temperature=0.7)
    return a.run_id, b.run_id


def test_compare_pairs_items_over_trials(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        a, b = two_runs(store)
        runs = load_runs(store, [a, b])
    row = next(r for r in compare(runs).rows if r.metric == "success")
    assert row.n == 6  # items, not the 24 trial records
    assert row.score_a.value == pytest.approx(np.mean(list(RATES.values())))
    assert row.score_b.value == pytest.approx(1 / 6)  # do-nothing passes c1 only
    assert row.diff.value == pytest.approx(1 / 6 - np.mean(list(RATES.values())))


def test_compare_and_gate_from_the_command_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    with Store.open(store) as s:
        a, b = two_runs(s)
    r = CliRunner().invoke(cli, ["--store", store, "compare", a, b, "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert rows[0]["n"] == 6 and rows[0]["metric"] == "success"
    g = CliRunner().invoke(
        cli,
        ["--store", store, "gate", "--baseline", a, "--candidate", b, "--max-drop", "0.05"],
    )
    # do-nothing passes 1 item of 6, the agent 58% of trials: -41.7 points [-83.3, -8.3]
    assert g.exit_code == 1, g.output  # FAIL: the whole interval is below -0.05
    assert "success" in g.stdout
    g2 = CliRunner().invoke(
        cli,
        ["--store", store, "gate", "--baseline", a, "--candidate", a, "--max-drop", "0.05"],
    )
    assert g2.exit_code != 4, g2.output  # never a crash on agent runs
