"""The built-in dynamic suite: determinism, fresh items per seed, verified answers."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from calipers.tasks import LoadContext, Task, data_hash, get_task, list_suites, list_tasks
from calipers.tasks.dynamic import SUITE, fewshot_loader, generate
from calipers.types import LoglikelihoodResult, ModelResponse, Sample, SampleOutput, Score

from ._oracles import (
    DISTRACTOR_MARKERS,
    WORD_PROBLEM_SOLVERS,
    date_answer,
    eval_expression,
    iso,
)

SEEDS = (0, 1, 7, 12345)


def load(name: str, seed: int = 0, n: int | None = None) -> list[Sample]:
    return list(get_task(name).load(LoadContext(seed=seed, n=n)))


def fewshot(name: str, seed: int = 0, n: int | None = None) -> list[Sample]:
    task = get_task(name)
    assert task.fewshot is not None
    return list(task.fewshot(LoadContext(seed=seed, n=n)))


# ---- the suite and the task cards ------------------------------------------------------


def test_dynamic_suite_is_registered() -> None:
    assert (
        list_suites()["dynamic"]
        == SUITE
        == (
            "dyn_word_problems",
            "dyn_arithmetic",
            "dyn_dates",
            "dyn_dates_mc",
        )
    )
    assert set(SUITE) <= set(list_tasks())


@pytest.mark.parametrize(
    ("name", "kind", "metrics"),
    [
        ("dyn_word_problems", "generate", ["acc", "acc_strict"]),
        ("dyn_arithmetic", "generate", ["acc", "acc_strict"]),
        ("dyn_dates", "generate", ["match"]),
        ("dyn_dates_mc", "multiple_choice", ["acc", "acc_norm"]),
    ],
)
def test_task_cards(name: str, kind: str, metrics: list[str]) -> None:
    task = get_task(name)
    assert (task.name, task.kind, task.metrics) == (name, kind, metrics)
    assert task.dynamic and task.version == "1" and task.source == "calipers (generated)"
    assert task.default_n == 50 and task.fewshot is not None
    needs = {s.needs for s in task.scorers}
    assert needs == {"loglikelihood" if kind == "multiple_choice" else "generation"}


# ---- determinism and freshness ---------------------------------------------------------


@pytest.mark.parametrize("name", SUITE)
def test_same_seed_same_items_other_seed_other_items(name: str) -> None:
    a, b = load(name, seed=3), load(name, seed=3)
    assert [s.model_dump() for s in a] == [s.model_dump() for s in b]
    assert data_hash(a) == data_hash(b)
    c = load(name, seed=4)
    assert data_hash(c) != data_hash(a)
    shared = {s.input for s in a} & {s.input for s in c}
    assert len(shared) <= 2  # fresh items, bar a rare coincidence


@pytest.mark.parametrize("name", SUITE)
def test_n_ids_and_prefix_stability(name: str) -> None:
    items = load(name, seed=9)
    assert len(items) == get_task(name).default_n == 50
    assert [s.id for s in items] == [f"9-{i}" for i in range(50)]
    assert load(name, seed=9, n=7) == items[:7]
    assert load(name, seed=9, n=0) == []
    assert len(load(name, seed=9, n=120)) == 120


@pytest.mark.parametrize("name", SUITE)
def test_fewshot_pool_is_disjoint_from_eval_items(name: str) -> None:
    for seed in SEEDS:
        items, shots = load(name, seed), fewshot(name, seed)
        assert len(shots) >= get_task(name).default_few_shot
        assert len(shots) == 10
        assert not {s.id for s in items} & {s.id for s in shots}
        assert not {s.input for s in items} & {s.input for s in shots}
        assert len({s.input for s in shots}) == len(shots)
        assert shots == fewshot(name, seed)


def test_fewshot_skips_collisions_with_eval_items() -> None:
    # A generator with only 30 distinct questions: the pool must avoid the eval items.
    def tiny(rng: random.Random, sample_id: str) -> Sample:
        return Sample(id=sample_id, input=str(rng.randint(0, 29)), target="x")

    items = generate("tiny", tiny, seed=0, n=20)
    shots = fewshot_loader("tiny", tiny, default_n=20)(LoadContext(seed=0))
    assert shots and not {s.input for s in items} & {s.input for s in shots}
    assert len({s.input for s in shots}) == len(shots) <= 10


# ---- every answer verified independently -----------------------------------------------


def test_word_problem_answers() -> None:
    templates: Counter[str] = Counter()
    distractors = 0
    for seed in SEEDS:
        for s in load("dyn_word_problems", seed, n=100) + fewshot("dyn_word_problems", seed):
            assert s.category == s.metadata["template"]
            answer = WORD_PROBLEM_SOLVERS[str(s.category)](s.input)
            assert answer > 0 and s.target == str(answer), s.input
            assert s.fields["solution"].endswith(f"\n#### {answer}")
            has = any(m in s.input for m in DISTRACTOR_MARKERS)
            assert has == s.metadata["distractor"], s.input
            templates[str(s.category)] += 1
            distractors += has
    assert set(templates) == set(WORD_PROBLEM_SOLVERS)
    assert 0.25 < distractors / sum(templates.values()) < 0.55


def test_arithmetic_answers() -> None:
    ops_seen, with_parens, with_division = set(), 0, 0
    for seed in SEEDS:
        for s in load("dyn_arithmetic", seed, n=100) + fewshot("dyn_arithmetic", seed):
            value, ops = eval_expression(s.input)
            assert value.denominator == 1 and s.target == str(value.numerator), s.input
            assert 2 <= ops <= 4 and s.category == f"{ops}_ops"
            ops_seen.add(ops)
            with_parens += "(" in s.input
            with_division += "/" in s.input
    assert ops_seen == {2, 3, 4}
    assert with_parens > 40 and with_division > 40


def test_date_answers() -> None:
    families: Counter[str] = Counter()
    for seed in SEEDS:
        for s in load("dyn_dates", seed, n=100) + fewshot("dyn_dates", seed):
            day, long = date_answer(s.input)
            want = day if str(s.category).startswith("weekday") else iso(long)
            assert s.target == want, s.input
            families[str(s.category)] += 1
    assert set(families) == {"weekday_after", "weekday_before", "date_after", "date_before"}


def test_date_mc_answers_and_options() -> None:
    for seed in SEEDS:
        for s in load("dyn_dates_mc", seed, n=100) + fewshot("dyn_dates_mc", seed):
            assert s.choices is not None and len(s.choices) == 4
            assert len(set(s.choices)) == 4
            assert isinstance(s.target, int) and 0 <= s.target < 4
            day, long = date_answer(s.input)
            want = day if str(s.category).startswith("weekday") else long
            assert s.choices[s.target] == want, s.input
    targets = Counter(s.target for s in load("dyn_dates_mc", 0, n=200))
    assert set(targets) == {0, 1, 2, 3}  # the right option is not always in one place


# ---- prompts and scorers work on the items ---------------------------------------------


@pytest.mark.parametrize("name", SUITE)
def test_prompts_render_plain_and_chat(name: str) -> None:
    task = get_task(name)
    shots = fewshot(name)[:3]
    for s in load(name, n=5):
        plain = task.prompt.plain(s, shots, "Be brief.")
        assert plain.startswith("Be brief.") and s.input in plain
        assert all(x.input in plain for x in shots)
        msgs = task.prompt.chat(s, shots, None)
        assert [m.role for m in msgs] == ["user", "assistant"] * 3 + ["user"]
        assert s.input in msgs[-1].content
        for shot, reply in zip(shots, msgs[1::2], strict=True):
            assert reply.content  # the few-shot answer is there
            if name in {"dyn_word_problems", "dyn_arithmetic"}:
                assert reply.content.endswith(f"#### {shot.target}")
            elif name == "dyn_dates_mc":
                assert reply.content == shot.target_text
        if task.kind == "multiple_choice":
            assert s.choices is not None
            assert task.prompt.continuations(s) == tuple(f" {c}" for c in s.choices)
            assert plain.endswith("\nAnswer:")


def _score(task: Task, s: Sample, output: SampleOutput) -> Score:
    return asyncio.run(task.scorers[0](s, output))


@pytest.mark.parametrize("name", ["dyn_word_problems", "dyn_arithmetic", "dyn_dates"])
def test_right_replies_score_one_and_wrong_replies_zero(name: str) -> None:
    task = get_task(name)
    for s in load(name, n=20):
        if name == "dyn_word_problems":
            right, wrong = s.fields["solution"], f"#### {int(str(s.target)) + 1}"
        elif name == "dyn_arithmetic":
            right, wrong = f"#### {s.target}", f"#### {int(str(s.target)) - 1}"
        else:
            right, wrong = f"The answer is {s.target}.", "The answer is 1999-01-01."
        assert _score(task, s, SampleOutput(response=ModelResponse(text=right))).value == 1.0
        assert _score(task, s, SampleOutput(response=ModelResponse(text=wrong))).value == 0.0


def test_dates_scorer_reads_the_last_weekday() -> None:
    task = get_task("dyn_dates")
    s = next(x for x in load("dyn_dates", n=50) if str(x.category).startswith("weekday"))
    start = str(s.input).split(" days ")[1].split(",")[0].split()[-1]
    reply = f"{start} plus some days is {s.target}."
    assert _score(task, s, SampleOutput(response=ModelResponse(text=reply))).value == 1.0


def test_dates_mc_scorer() -> None:
    task = get_task("dyn_dates_mc")
    for s in load("dyn_dates_mc", n=10):
        lps = tuple(-1.0 if i == s.target else -50.0 for i in range(4))
        result = LoglikelihoodResult(logprobs=lps, is_greedy=(False,) * 4, n_tokens=(3,) * 4)
        got = _score(task, s, SampleOutput(loglikelihood=result))
        assert got.values == {"acc": 1.0, "acc_norm": 1.0}
        assert got.answer == str(s.target)
