"""calipers compare on runs of the deterministic fake model, against hand-computed values."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy import stats

from calipers.analysis import ComparisonSet, compare, load_runs
from calipers.cli import cli
from calipers.errors import ConfigError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.types import Estimate, ModelRequest, ModelResponse

N = 40


@pytest.fixture
def yes_task(tmp_path: Path) -> Path:
    rows = [{"id": f"q{i}", "input": f"item {i}", "target": "yes"} for i in range(N)]
    (tmp_path / "yes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "yes.yaml"
    spec.write_text("name: answers\ndata: yes.jsonl\nscorers: [exact_match]\n")
    return spec


def right_on(items: range, name: str) -> FakeModel:
    def answer(req: ModelRequest) -> str:
        assert req.messages is not None
        i = int(req.messages[-1].content.split()[1])
        return "yes" if i in items else "no"

    return FakeModel(answer, name=name)


def make_run(spec: Path, model: FakeModel, **cfg: object) -> str:
    config = RunConfig(model=f"fake:{model.identity().name}", tasks=(str(spec),), **cfg)
    with Store.open() as store:
        return asyncio.run(arun(config, store, provider=model)).run_id


def run_compare(*ids: str, force: bool = False) -> ComparisonSet:
    with Store.open() as store:
        return compare(load_runs(store, ids), force=force)


def test_clear_improvement_matches_exact_mcnemar(yes_task: Path) -> None:
    a = make_run(yes_task, right_on(range(0, 20), "model-a"))
    b = make_run(yes_task, right_on(range(0, 32), "model-b"))
    [row] = run_compare(a, b).rows
    # discordant pairs: B right & A wrong on 12 items, the reverse on none
    expected_p = stats.binomtest(12, 12, 0.5).pvalue
    assert row.n == N and row.n_discordant == (12, 0) and row.test == "mcnemar-exact"
    assert row.p_value == pytest.approx(expected_p) and row.p_adjusted == pytest.approx(expected_p)
    assert row.diff.value == pytest.approx(12 / N)
    assert row.diff.low > 0 and row.significant
    assert row.verdict.startswith("model-b is better by 30.0 points [")


def test_no_difference_states_the_minimum_detectable_effect(yes_task: Path) -> None:
    a = make_run(yes_task, right_on(range(0, 20), "model-a"))
    b = make_run(yes_task, right_on(range(10, 30), "model-b"))
    [row] = run_compare(a, b).rows
    assert row.n_discordant == (10, 10) and row.p_value == pytest.approx(1.0)
    assert not row.significant and row.diff.value == 0
    # MDE for a paired binary design with discordance 0.5: (z_.975 + z_.8) sqrt(0.5 / n)
    mde = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * (0.5 / N) ** 0.5
    assert row.mde == pytest.approx(mde, rel=0.02)
    assert "no detectable difference" in row.verdict
    assert f"with n={N} only differences larger than {100 * mde:.1f} points" in row.verdict


def test_several_candidates_are_holm_corrected(yes_task: Path) -> None:
    base = make_run(yes_task, right_on(range(0, 20), "base"))
    c1 = make_run(yes_task, right_on(range(0, 27), "c1"))  # 7 discordant, all for c1
    c2 = make_run(yes_task, right_on(range(0, 26), "c2"))  # 6 discordant
    rows = run_compare(base, c1, c2).rows
    raw = [stats.binomtest(7, 7).pvalue, stats.binomtest(6, 6).pvalue]
    # Holm by hand: smallest p times 2, the next times 1, monotone
    holm = [min(1.0, 2 * raw[0]), max(min(1.0, 2 * raw[0]), raw[1])]
    assert [r.p_adjusted for r in rows] == [pytest.approx(h) for h in holm]


def test_different_methodology_is_refused_unless_forced(yes_task: Path) -> None:
    a = make_run(yes_task, right_on(range(0, 20), "a"))
    b = make_run(yes_task, right_on(range(0, 20), "b"), system_prompt="Answer yes or no.")
    with pytest.raises(ConfigError, match="system_prompt"):
        run_compare(a, b)
    forced = run_compare(a, b, force=True)
    assert forced.forced and any("system_prompt" in m for m in forced.mismatches)


def test_errors_and_unpaired_items_are_excluded_and_counted(yes_task: Path) -> None:
    def flaky(items: range, name: str) -> FakeModel:
        inner = right_on(items, name)

        def answer(req: ModelRequest) -> str | ModelResponse:
            assert req.messages is not None
            if req.messages[-1].content.endswith(" 3"):
                raise RuntimeError("server hiccup")
            return inner._responder(req)

        return FakeModel(answer, name=name)

    a = make_run(yes_task, right_on(range(0, 20), "a"))
    b = make_run(yes_task, flaky(range(0, 20), "b"))
    [row] = run_compare(a, b).rows
    assert row.n == N - 1 and row.excluded["only_a"] == 1 and row.excluded["errors_b"] == 1


def test_cli_compare_json_and_table(yes_task: Path) -> None:
    a = make_run(yes_task, right_on(range(0, 20), "model-a"))
    b = make_run(yes_task, right_on(range(0, 32), "model-b"))
    out = CliRunner().invoke(cli, ["compare", a, b, "--json"], catch_exceptions=False)
    data = json.loads(out.stdout)
    assert data["correction"] == "holm" and data["rows"][0]["significant"] is True
    out = CliRunner().invoke(cli, ["compare", a, b], catch_exceptions=False)
    assert out.exit_code == 0 and "model-b is better by 30.0 points" in out.stdout
    out = CliRunner().invoke(cli, ["compare", a])
    assert out.exit_code == 2 and "at least two runs" in out.stderr


def test_models_with_different_chat_templates_are_comparable(yes_task: Path) -> None:
    a = make_run(yes_task, right_on(range(0, 20), "a"))
    b = make_run(yes_task, right_on(range(0, 20), "b"))
    with Store.open() as store:
        ra, rb = load_runs(store, [a, b])
    from calipers.analysis import methodology_differences
    from calipers.analysis._align import StoredRun

    card = rb.record.methodology
    card["tasks"]["answers"]["chat_template_hash"] = "another-models-template"
    other = StoredRun(rb.record.model_copy(update={"methodology": card}), rb.samples)
    assert methodology_differences(ra, other, "answers") == []
    card["tasks"]["answers"]["chat_template"] = False  # template off vs on: not comparable
    off = StoredRun(rb.record.model_copy(update={"methodology": card}), rb.samples)
    assert any("chat_template" in d for d in methodology_differences(ra, off, "answers"))


def test_interval_excluding_zero_without_a_rejection_is_called_inconclusive() -> None:
    from types import SimpleNamespace

    from calipers.analysis._verdict import verdict

    row = SimpleNamespace(
        n=50,
        model_b="b",
        test="mcnemar-exact",
        p_adjusted=0.25,
        mde=0.157,
        score_a=Estimate(0.1, 0.04, 0.21, 50, "wilson"),
        score_b=Estimate(0.0, 0.0, 0.07, 50, "wilson"),
        diff=Estimate(-0.1, -0.214, -0.009, 50, "newcombe"),
    )
    text = verdict(row, None, significant=False, confidence=0.95, n_comparisons=4)
    assert text.startswith("inconclusive: -10.0 points [-21.4, -0.9]")
    assert "p=0.25 after correcting for 4 comparisons" in text


def test_overall_row_pools_the_tasks(yes_task: Path, tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "input": f"item {i}", "target": "yes"} for i in range(N)]
    (tmp_path / "more.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec2 = tmp_path / "more.yaml"
    spec2.write_text("name: more\ndata: more.jsonl\nscorers: [exact_match]\n")

    def two(model: FakeModel) -> str:
        cfg = RunConfig(model=f"fake:{model.identity().name}", tasks=(str(yes_task), str(spec2)))
        with Store.open() as store:
            return asyncio.run(arun(cfg, store, provider=model)).run_id

    a = two(right_on(range(0, 20), "a"))
    b = two(right_on(range(0, 25), "b"))  # 5 more right on each task
    result = run_compare(a, b)
    overall = result.rows[-1]
    assert [r.task for r in result.rows] == ["answers", "more", "(all tasks)"]
    assert overall.n == 2 * N and overall.n_discordant == (10, 0)
    assert overall.p_value == pytest.approx(stats.binomtest(10, 10).pvalue)
