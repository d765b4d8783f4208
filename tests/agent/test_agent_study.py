"""An agent study on the test till world: the planted agent's per-item success rates are
known for every trial, so success, pass^k, pass@k and the flip rate are checked against
hand-computed values; the do-nothing baseline passes the status-only item (invalid) and the
oracle fails the item whose grader is wrong (broken)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.analysis import (
    agent_report,
    list_studies,
    load_agent_study,
    plan_agent_study,
    run_agent_study,
)
from calipers.cli import cli
from calipers.errors import ConfigError
from calipers.runner import RunConfig
from calipers.store import Store
from tests.agent import _world

# planted agent, 4 trials (seeds 0..3): r1 4/4, r2 2/4, r3 0/4, r4 4/4, c1 4/4, x1 0/4
COUNTS = {"r1": 4, "r2": 2, "r3": 0, "r4": 4, "c1": 4, "x1": 0}


@pytest.fixture(autouse=True)
def world() -> None:
    _world.register()


def test_the_study_report_by_hand(tmp_path: Path) -> None:
    base = RunConfig(model="planted:agent", tasks=("till",), temperature=0.7)
    plan = plan_agent_study(base, 4)
    assert [c.model for c in plan.configs] == [
        "planted:agent",
        "baseline:do-nothing",
        "baseline:random-tool",
        "baseline:oracle",
    ]
    assert [c.epochs for c in plan.configs] == [4, 1, 4, 1]
    assert [c.use_cache for c in plan.configs] == [True, True, True, False]
    assert {c.study for c in plan.configs} == {plan.study} and plan.study.startswith("agent-")
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        run_agent_study(plan, store)
        runs = load_agent_study(store, plan.study)
        passed_by_baselines = {
            s.sample_id
            for r in runs[1:3]
            for s in r.samples
            if s.scores and s.scores["success"] == 1.0
        }
    report = agent_report(runs)
    (t,) = report.tasks
    rel = t.all_items
    assert t.metric == "success" and rel.n_items == 6 and rel.trials == 4
    assert rel.success.value == pytest.approx(14 / 24)
    assert rel.pass_hat_k[2].value == pytest.approx((1 + 1 / 6 + 0 + 1 + 1 + 0) / 6)
    assert rel.pass_hat_k[4].value == pytest.approx(3 / 6)
    assert rel.pass_at_k[2].value == pytest.approx((1 + 5 / 6 + 0 + 1 + 1 + 0) / 6)
    assert rel.pass_at_k[4].value == pytest.approx(4 / 6)
    assert rel.flip_rate is not None and rel.flip_rate.value == pytest.approx((4 / 6) / 6)
    # do-nothing passes the status-only item (and nothing it should not)
    assert t.baselines["baseline:do-nothing"].passed == ("c1",)
    assert t.baselines["baseline:do-nothing"].success.value == pytest.approx(1 / 6)
    assert "c1" in t.invalid and set(t.invalid) == passed_by_baselines
    keep = [i for i in COUNTS if i not in t.invalid]
    assert t.valid_items is not None
    assert t.valid_items.success.value == pytest.approx(
        sum(COUNTS[i] for i in keep) / (4 * len(keep))
    )
    assert t.oracle == "failed" and t.broken == ("x1",)
    assert set(t.components) == {"success", "end_state", "answered"}
    assert t.components["end_state"].value == pytest.approx(14 / 24)
    assert t.components["answered"].value == 1.0
    assert t.mdd is not None and 0 < t.mdd < 1
    d = report.to_dict()
    assert d["tasks"][0]["invalid_items"] == list(t.invalid)
    assert json.loads(json.dumps(d)) == d  # plain JSON: no NaN, nothing that does not apply


def test_trials_at_temperature_zero_are_refused_with_the_reason() -> None:
    base = RunConfig(model="planted:agent", tasks=("till",))
    with pytest.raises(ConfigError, match="scripted user says the same") as e:
        plan_agent_study(base, 3)
    assert "--temperature" in (e.value.hint or "")
    one = plan_agent_study(base, 1)  # one greedy trial is fine
    assert [c.epochs for c in one.configs] == [1, 1, 1, 1]


def test_a_world_without_an_oracle_skips_the_oracle_check() -> None:
    plan = plan_agent_study(RunConfig(model="planted:a", tasks=("till_no_oracle",)), 1)
    assert plan.no_oracle == ("till_no_oracle",)
    assert [c.model for c in plan.configs][-1] == "baseline:random-tool"


def test_a_task_that_is_not_an_agents_task_is_refused() -> None:
    with pytest.raises(ConfigError, match="not an agent's task"):
        plan_agent_study(RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), limit=2), 1)


def cli_run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_cli_run_report_and_list(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    r = cli_run(
        "--store", store, "agent", "run", "-t", "till", "-m", "planted:agent",
        "-k", "4", "--temperature", "0.7", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    task = out["tasks"][0]
    assert task["all_items"]["success"]["value"] == pytest.approx(14 / 24)
    assert task["all_items"]["pass_hat_k"]["4"]["value"] == pytest.approx(0.5)
    assert task["broken_items"] == ["x1"] and "c1" in task["invalid_items"]
    assert "min_detectable_difference" in task
    study = out["study"]
    text = cli_run("--store", store, "agent", "report", study).stdout
    assert text.index("Before comparing") < text.index("pass^2")
    for word in ("pass^4", "pass@4", "flip rate", "Invalid items", "Broken items", "x1"):
        assert word in text
    assert "baseline:do-nothing: 16.7%" in text
    with Store.open(store) as s:
        assert list_studies(s) == []  # not a sensitivity study
    listed = json.loads(cli_run("--store", store, "agent", "list", "--json").stdout)
    assert [s["study"] for s in listed] == [study] and listed[0]["runs"] == 4
    # a run id of the study finds the study
    again = json.loads(
        cli_run("--store", store, "agent", "report", out["agent_run"], "--json").stdout
    )
    assert again["study"] == study
    bad = CliRunner().invoke(
        cli, ["--store", store, "agent", "run", "-t", "till", "-m", "planted:a", "-k", "2"]
    )
    assert bad.exit_code == 2 and "temperature 0" in bad.stderr
