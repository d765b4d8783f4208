"""The gate as a library: the size check comes before any model call, several comparisons
are Bonferroni-adjusted, and the verdict rule on the interval of candidate − baseline."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.analysis import Paired
from calipers.analysis._gate import GateConfig, gate_row, prepare_gate, run_gate
from calipers.cli import cli
from calipers.models import FakeModel, ModelOptions, ModelProvider, resolve_model
from calipers.store import Store
from tests.gate._helpers import inputs, newcombe, right_on, size_needed, task_file


def test_size_check_flags_a_small_suite_before_any_model_call(tmp_path: Path) -> None:
    spec = task_file(tmp_path, "qa", 50)
    base, cand = FakeModel(name="a"), FakeModel(name="b")
    providers: dict[str, ModelProvider] = {"fake:echo,name=a": base, "fake:echo,name=b": cand}
    for strict in (True, False):
        config = GateConfig(
            baseline="fake:echo,name=a",
            candidate="fake:echo,name=b",
            suite=(str(spec),),
            max_drop=0.02,
            strict_size=strict,
        )
        with Store.open() as store:
            gp = prepare_gate(config, store, providers=providers)
            assert base.calls == cand.calls == 0 and store.list_runs() == []
            assert gp.size.items_needed == size_needed(0.02) == 4906
            assert gp.size.too_small == ["qa"] and gp.refused is strict
            assert gp.size.message is not None
            assert "too small for --max-drop 0.02: needs about 4,906 items" in gp.size.message
            result = asyncio.run(run_gate(gp, store))
            runs = len(store.list_runs())
        if strict:
            assert result.refused and result.exit_code == 2 and result.rows == []
            assert base.calls == cand.calls == 0 and runs == 0
        else:
            assert not result.refused and base.calls == cand.calls == 50 and runs == 2


def test_strict_size_on_the_command_line_calls_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[FakeModel] = []

    def recording(spec: str, options: ModelOptions | None = None) -> ModelProvider:
        provider = resolve_model(spec, options)
        assert isinstance(provider, FakeModel)
        made.append(provider)
        return provider

    monkeypatch.setattr("calipers.runner._plan.resolve_model", recording)
    spec = task_file(tmp_path, "qa", 30)
    r = CliRunner().invoke(
        cli,
        [
            "gate",
            "-s",
            str(spec),
            "--baseline",
            "fake:const=yes",
            "--candidate",
            "fake:const=no",
            "--strict-size",
            "--junit",
            "g.xml",
        ],
    )
    assert r.exit_code == 2, r.output
    message = " ".join(r.stderr.split())
    assert f"too small for --max-drop 0.02: needs about {size_needed(0.02):,} items" in message
    assert "qa has 30" in message and "refused" in message
    assert made and sum(p.calls for p in made) == 0
    with Store.open() as store:
        assert store.list_runs() == []
    suite = ET.parse(tmp_path / "g.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("skipped") == "1" and suite.get("failures") == "0"


def test_several_tasks_are_bonferroni_adjusted_and_any_failure_fails(tmp_path: Path) -> None:
    specs = [
        task_file(tmp_path, "qa", 60),
        task_file(tmp_path, "qb", 400),
        task_file(tmp_path, "qc", 40),
    ]
    common = inputs("qb", range(300)) + inputs("qc", range(38))
    base = right_on(tmp_path, "base", inputs("qa", range(60)) + common + inputs("qc", [38, 39]))
    cand = right_on(tmp_path, "cand", common)
    args = [a for s in specs for a in ("-s", str(s))]
    r = CliRunner().invoke(
        cli,
        [
            "gate",
            *args,
            "--baseline",
            base,
            "--candidate",
            cand,
            "--max-drop",
            "0.1",
            "--junit",
            "g.xml",
            "--json",
        ],
    )
    assert r.exit_code == 1, r.output
    conf = 1 - 0.05 / 3
    root = ET.parse(tmp_path / "g.xml").getroot()
    suites = root.findall("testsuite")
    assert len(suites) == 1
    counts = {k: suites[0].get(k) for k in ("tests", "failures", "skipped", "errors")}
    assert counts == {"tests": "3", "failures": "1", "skipped": "1", "errors": "0"}
    verdicts = {
        c.get("name"): (
            "fail"
            if c.find("failure") is not None
            else "inconclusive"
            if c.find("skipped") is not None
            else "pass"
        )
        for c in suites[0].findall("testcase")
    }
    assert verdicts == {
        "qa/exact_match": "fail",
        "qb/exact_match": "pass",
        "qc/exact_match": "inconclusive",
    }
    res = json.loads(r.stdout)
    assert res["confidence"] == pytest.approx(conf) and res["comparisons"] == 3
    qb = next(row for row in res["rows"] if row["task"] == "qb")
    assert (qb["diff"]["low"], qb["diff"]["high"]) == pytest.approx(
        newcombe(300, 0, 0, 100, confidence=conf), abs=1e-12
    )
    qc = next(row for row in res["rows"] if row["task"] == "qc")
    assert (qc["diff"]["low"], qc["diff"]["high"]) == pytest.approx(
        newcombe(38, 2, 0, 0, confidence=conf), abs=1e-12
    )


def paired(a: list[float], b: list[float]) -> Paired:
    return Paired(
        task="t",
        metric="m",
        ids=tuple(str(i) for i in range(len(a))),
        a=np.array(a),
        b=np.array(b),
        clusters=None,
        only_a=0,
        only_b=0,
        errors_a=0,
        errors_b=0,
    )


@pytest.mark.parametrize(("shift", "verdict"), [(0.0, "pass"), (-0.05, "pass"), (-0.3, "fail")])
def test_verdict_rule_on_continuous_scores(shift: float, verdict: str) -> None:
    # every per-item difference equal to the shift: the bootstrap interval is that point
    a = [0.5, 0.6, 0.7, 0.8] * 10
    row = gate_row(paired(a, [x + shift for x in a]), max_drop=0.1, alpha=0.05, power=0.8, seed=0)
    assert row.diff.low == pytest.approx(shift) and row.verdict == verdict
    assert row.points and ("worse than the baseline, but by less" in row.explanation) == (
        shift == -0.05
    )


def test_scores_outside_0_1_are_gated_in_their_own_units() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(10, 90, size=30)
    row = gate_row(
        paired(list(a), list(a + rng.normal(0, 5, size=30))),
        max_drop=1.0,
        alpha=0.05,
        power=0.8,
        seed=0,
    )
    assert not row.points and " points" not in row.explanation
    assert row.verdict == "inconclusive" and row.items_needed is not None
    d = np.array(row.diff.value)
    assert row.diff.low < -1.0 < row.diff.high and np.isfinite(d)
