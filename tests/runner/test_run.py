"""The runner end to end with the deterministic fake model: scores, errors, cache, resume."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
from scipy.stats import norm

from calipers.errors import ConfigError, ModelCallError, ModelLoadError, ResumeError
from calipers.models import FakeModel
from calipers.runner import RunConfig, RunResult, aresume, arun
from calipers.store import RunRecord, SampleRecord, Store
from calipers.types import ModelRequest
from tests.conftest import CAPITALS

ANSWERS = {r["question"]: r["answer"] for r in CAPITALS}
ANSWERS["Capital of Japan?"] = "Kyoto"  # one wrong answer


def _question(req: ModelRequest) -> str:
    if req.prompt is not None:
        text = req.prompt
    else:
        assert req.messages is not None
        text = req.messages[-1].content
    return text.removeprefix("Q: ").removesuffix("\nA:")


def oracle(req: ModelRequest) -> str:
    q = _question(req)
    if q in ("Capital of Egypt?", "Capital of Kenya?"):
        raise ModelCallError("upstream 503")
    return ANSWERS[q]


def wilson(k: int, n: int, z: float = norm.ppf(0.975)) -> tuple[float, float]:
    """Wilson score interval from its closed form (Wilson 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _run(config: RunConfig, model: FakeModel) -> tuple[RunResult, list[SampleRecord], RunRecord]:
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=model))
        return result, store.get_samples(result.run_id), store.get_run(result.run_id)


def test_scores_errors_and_categories(capitals_task: Path) -> None:
    model = FakeModel(oracle, name="oracle")
    result, samples, run = _run(RunConfig(model="fake:oracle", tasks=(str(capitals_task),)), model)
    ts = result.summary.tasks["capitals"]
    assert (ts.n_samples, ts.n_scored, ts.n_errors) == (8, 6, 2)
    acc = ts.metrics["exact_match"]
    low, high = wilson(5, 6)
    assert acc.n == 6 and acc.method == "wilson"
    assert acc.value == pytest.approx(5 / 6)
    assert (acc.low, acc.high) == pytest.approx((low, high))
    cats = ts.categories
    assert cats["europe"].metrics["exact_match"].value == 1.0
    assert cats["asia"].metrics["exact_match"].value == pytest.approx(2 / 3)
    africa = cats["africa"]
    assert africa.n_errors == 2 and africa.metrics["exact_match"].n == 0
    assert math.isnan(africa.metrics["exact_match"].value)  # NaN, never 0
    stored = run.summary.model_dump(mode="json") if run.summary else {}
    assert stored["tasks"]["capitals"]["categories"]["africa"]["metrics"]["exact_match"] == {
        "value": None,  # JSON has no NaN: stored as null
        "low": None,
        "high": None,
        "n": 0,
        "method": "none",
        "confidence": 0.95,
    }
    # nothing lost: every sample stored, errors with their message and no score
    assert len(samples) == 8
    errs = [s for s in samples if s.error]
    assert {s.sample_id for s in errs} == {"eg", "ke"}
    assert all("upstream 503" in (s.error or "") and s.scores is None for s in errs)
    jp = next(s for s in samples if s.sample_id == "jp")
    assert (jp.response, jp.target, jp.scores) == ("Kyoto", "Tokyo", {"exact_match": 0.0})
    assert run.status == "finished"


def test_prompt_as_sent_plain_and_chat(capitals_task: Path) -> None:
    cfg = RunConfig(model="fake:x", tasks=(str(capitals_task),), limit=1, system_prompt="Be brief.")
    _, samples, _ = _run(cfg, FakeModel(oracle))
    msgs = samples[0].prompt["messages"]
    assert msgs == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q: Capital of France?\nA:"},
    ]
    _, samples, _ = _run(cfg.model_copy(update={"chat_template": False}), FakeModel(oracle))
    assert samples[0].prompt["prompt"] == "Be brief.\n\nQ: Capital of France?\nA:"
    assert samples[0].prompt["params"]["max_tokens"] == 8


def test_methodology_card(capitals_task: Path) -> None:
    cfg = RunConfig(model="fake:oracle", tasks=(str(capitals_task),), seed=3)
    _result, _, run = _run(cfg, FakeModel(oracle, name="oracle"))
    card = run.methodology
    task = card["tasks"]["capitals"]
    assert card["model"]["provider"] == "fake" and card["model"]["name"] == "oracle"
    assert task["version"] == "2" and task["n_items"] == 8 and "seed" not in task
    assert card["seeds"]["items"] == 3  # the run's seeds are recorded once, not per task
    assert task["prompt_template"]["template"] == "Q: {input}\nA:"
    assert len(task["data_hash"]) == 32 and len(task["prompt_hash"]) == 16
    assert task["scorers"] == [{"name": "exact_match", "args": {}}]
    assert task["decoding"]["max_tokens"] == 8 and task["decoding"]["temperature"] == 0.0
    assert task["chat_template"] is True and task["few_shot"] == 0
    assert card["calipers_version"] and "python" in card["packages"]
    assert run.config["tasks"] == [str(capitals_task)]


def test_cache_makes_identical_rerun_free(capitals_task: Path) -> None:
    cfg = RunConfig(model="fake:oracle", tasks=(str(capitals_task),))
    _run(cfg, FakeModel(oracle, name="oracle"))
    again = FakeModel(oracle, name="oracle")
    result, samples, _ = _run(cfg, again)
    assert again.calls == 2  # only the two errored requests are retried: errors are not cached
    assert result.summary.tasks["capitals"].n_cached == 6
    assert all(s.cached for s in samples if s.error is None)
    other = FakeModel(oracle, name="another-model")  # different identity: no cache sharing
    _run(cfg, other)
    assert other.calls == 8


def test_resume_after_interrupt_has_no_duplicates(capitals_task: Path) -> None:
    calls = {"n": 0}

    def flaky(req: ModelRequest) -> str:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return ANSWERS[_question(req)]

    cfg = RunConfig(
        model="fake:oracle", tasks=(str(capitals_task),), concurrency=1, use_cache=False
    )
    with Store.open() as store:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(arun(cfg, store, provider=FakeModel(flaky, name="oracle")))
        run = store.list_runs()[0]
        assert run.status == "interrupted"
        stored = {s.sample_id for s in store.get_samples(run.id)}
        assert stored == {"fr", "de", "it"}
        second = FakeModel(lambda r: ANSWERS[_question(r)], name="oracle")
        result = asyncio.run(aresume(run.id[:10], store, provider=second))
        assert second.calls == 5
        samples = store.get_samples(run.id)
        assert sorted(s.sample_id for s in samples) == sorted(r["id"] for r in CAPITALS)
        assert result.summary.tasks["capitals"].metrics["exact_match"].value == 7 / 8
        with pytest.raises(ResumeError, match="already finished"):
            asyncio.run(aresume(run.id, store, provider=second))


def test_resume_refuses_a_changed_model(capitals_task: Path) -> None:
    def boom(req: ModelRequest) -> str:
        raise KeyboardInterrupt

    cfg = RunConfig(model="fake:oracle", tasks=(str(capitals_task),), concurrency=1)
    with Store.open() as store:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(arun(cfg, store, provider=FakeModel(boom, name="a")))
        run = store.list_runs()[0]
        with pytest.raises(ResumeError, match="model is not the same"):
            asyncio.run(aresume(run.id, store, provider=FakeModel(oracle, name="b")))


def test_few_shot_draws_exclude_the_item_and_follow_the_seed(tmp_path: Path) -> None:
    rows = [{"q": f"{i}+{i}", "a": str(2 * i)} for i in range(12)]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[2:]))
    spec = tmp_path / "add.yaml"
    spec.write_text(
        "name: add\ndata: eval.jsonl\nfields: {input: q, target: a}\n"
        "few_shot: {k: 3, data: train.jsonl, seed: 5}\nscorers: [exact_match]\n"
        "prompt: {template: '{input} =', answer: ' {target}', fewshot_separator: \"\\n\"}\n"
    )
    cfg = RunConfig(model="fake:echo", tasks=(str(spec),), chat_template=False)
    _, first, run = _run(cfg, FakeModel())
    _, again, _ = _run(cfg, FakeModel())
    prompts = [s.prompt["prompt"] for s in first]
    assert prompts == [s.prompt["prompt"] for s in again]
    for s, p in zip(first, prompts, strict=True):
        lines = p.split("\n")
        assert len(lines) == 4 and lines[-1] == f"{s.sample_id}+{s.sample_id} ="
        assert all(line.split(" =")[0] != lines[-1].split(" =")[0] for line in lines[:3])
    assert run.methodology["tasks"]["add"]["few_shot"] == 3
    assert run.methodology["tasks"]["add"]["few_shot_seed"] == 5
    _, other_seed, _ = _run(cfg.model_copy(update={"few_shot_seed": 6}), FakeModel())
    assert [s.prompt["prompt"] for s in other_seed] != prompts


def test_multiple_choice_needs_loglikelihood(tmp_path: Path) -> None:
    """Unless it offers a generation formulation (tests/runner/test_fallback.py)."""

    class NoLL(FakeModel):
        supports_loglikelihood = False

    with pytest.raises(ConfigError, match="log-likelihood"):
        _run(RunConfig(model="fake:echo", tasks=("truthfulqa_mc1",), limit=2), NoLL())


def test_a_model_that_cannot_load_fails_the_run_not_the_samples(capitals_task: Path) -> None:
    def unloadable(req: ModelRequest) -> str:
        raise ModelLoadError("weights are corrupt")

    cfg = RunConfig(model="fake:x", tasks=(str(capitals_task),))
    with Store.open() as store:
        with pytest.raises(ModelLoadError):
            asyncio.run(arun(cfg, store, provider=FakeModel(unloadable)))
        run = store.list_runs()[0]
        assert run.status == "failed" and "weights are corrupt" in (run.error or "")
        assert store.get_samples(run.id) == []


def test_clustered_items_get_cluster_robust_intervals(tmp_path: Path) -> None:
    # 4 passages x 3 questions; the model is right on every question of passages p0 and p1
    rows = [
        {"id": f"p{p}q{q}", "input": f"p{p}q{q}", "target": "yes", "passage": f"p{p}"}
        for p in range(4)
        for q in range(3)
    ]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "name: c\ndata: c.jsonl\nfields: {id: id, input: input, target: target, "
        "cluster: passage}\nscorers: [exact_match]\n"
    )
    model = FakeModel(lambda r: "yes" if _question(r)[:2] in ("p0", "p1") else "no")
    result, _, _ = _run(RunConfig(model="fake:x", tasks=(str(spec),)), model)
    est = result.summary.tasks["c"].metrics["exact_match"]
    # Independent computation: cluster means 1, 1, 0, 0; with whole clusters agreeing the
    # cluster-robust SE is the SE of the 4 cluster means (G/(G-1) correction, t on 3 df).
    from scipy import stats

    means = [1.0, 1.0, 0.0, 0.0]
    se = stats.sem(means)
    half = stats.t.ppf(0.975, df=3) * se
    assert est.method == "cluster-t" and est.n == 12
    assert est.value == pytest.approx(0.5)
    assert (est.low, est.high) == pytest.approx((0.5 - half, 0.5 + half))


def test_task_level_derived_metrics_reach_the_summary(capitals_task: Path) -> None:
    from dataclasses import replace

    from calipers.tasks import register_task
    from calipers.tasks._registry import _TASKS
    from calipers.tasks._spec import load_task_spec
    from calipers.types import Estimate

    def ratio(records: Sequence[SampleRecord]) -> dict[str, Estimate]:
        right = sum(1 for r in records if r.scores and r.scores["exact_match"] == 1)
        wrong = sum(1 for r in records if r.scores and r.scores["exact_match"] == 0)
        return {"right_per_wrong": Estimate(right / wrong, 0.0, 99.0, len(records), "test")}

    register_task(
        "capitals_derived",
        lambda: replace(load_task_spec(capitals_task), name="capitals_derived", derived=ratio),
    )
    try:
        result, _, _ = _run(
            RunConfig(model="fake:oracle", tasks=("capitals_derived",)),
            FakeModel(oracle, name="oracle"),
        )
    finally:
        _TASKS.pop("capitals_derived")
    metrics = result.summary.tasks["capitals_derived"].metrics
    assert metrics["right_per_wrong"].value == 5.0  # 5 right, 1 wrong, 2 errors
    assert metrics["right_per_wrong"].method == "test"
