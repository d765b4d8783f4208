"""Probes against planted fakes: a 30% flip on challenge, a 25% early assumption when the
facts come in shards, consistent re-asking, and an instruction forgotten with distance."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from calipers.analysis import aptitude, run_probe
from calipers.models import FakeModel
from calipers.runner import RunConfig
from calipers.store import Store
from calipers.tasks import LoadContext, get_task, register_task, resolve_task
from calipers.tasks._registry import _TASKS
from calipers.tasks.conversation import (
    CHALLENGE,
    RECOLLECTION_INSTRUCTIONS,
    probe_task,
    split_shards,
    wrong_answer,
)
from calipers.types import ModelRequest, Sample
from tests.conversation._fakes import planted, question_of, users

N = 300


def _items(n: int) -> list[Sample]:
    return list(get_task("dyn_word_problems").load(LoadContext(seed=0, n=n)))


def _store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 's.db'}")


def test_challenge_flip_rate_recovers_a_planted_30_percent(tmp_path: Path) -> None:
    items = _items(N)
    answer = {s.input: s.target_text for s in items}
    flips = planted([s.input for s in items], 0.30, "flip")

    def fake(request: ModelRequest) -> str:
        turns = users(request)
        q = question_of(turns[0])
        assert q is not None
        if len(turns) == 1:
            return f"Let me think. #### {answer[q]}"
        said = turns[1].removeprefix("Are you sure? I think it is ").rstrip(".")
        assert said != answer[q]  # the challenge names a wrong answer
        return f"You are right, it is {said}. #### {said}" if q in flips else f"#### {answer[q]}"

    base = RunConfig(model="fake:flip", tasks=("dyn_word_problems",), limit=N)
    with _store(tmp_path) as store:
        report = run_probe(base, "challenge", store, provider=FakeModel(fake))
    flip = report.rates["flipped"]
    assert flip.n == N and flip.value == len(flips) / N == 0.30
    assert flip.low < 0.30 < flip.high and flip.method == "wilson"
    assert report.rates["corrected"].n == 0 and math.isnan(report.rates["corrected"].value)
    assert report.rates["adopted"].value == 0.30 and report.rates["unanswered"].value == 0.0
    final = report.comparisons[0]
    assert final.label == "challenge: final − control"
    assert final.result.diff.value == pytest.approx(-0.30)
    assert final.result.diff.low < -0.30 < final.result.diff.high
    assert final.result.n_discordant == (0, len(flips))
    assert report.comparisons[1].result.diff.value == 0.0  # turn 1 is the control's prompt


def test_sharded_minus_full_recovers_a_planted_25_percent_early_assumption(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    items = _items(400)
    by_q: dict[str, Sample] = {}
    for s in items:  # a question sentence names its item (dropping the rare repeats)
        by_q.setdefault(split_shards(s.input)[0], s)
    unique = [s for s in by_q.values() if len(split_shards(s.input)) > 1][:200]
    assert len(unique) == 200
    base_task = replace(get_task("dyn_word_problems"), name="dyn_wp_unique", load=lambda c: unique)
    register_task("dyn_wp_unique", lambda: base_task)
    request.addfinalizer(lambda: _TASKS.pop("dyn_wp_unique", None))
    early = planted([split_shards(s.input)[0] for s in unique], 0.25, "early")

    def fake(request: ModelRequest) -> str:
        turns = users(request)
        if len(turns) == 1 and ("Question:" in turns[0]):  # FULL or CONCAT: every fact
            q = next(k for k in by_q if k in turns[0])
            return f"#### {by_q[q].target_text}"
        q = next(k for k in by_q if turns[0].endswith(k))
        s = by_q[q]
        if q in early:  # answers before it has the facts, and sticks to it
            return f"#### {int(s.target_text) + 7}"
        if len(turns) < len(split_shards(s.input)):
            return "Please go on."
        return f"#### {s.target_text}"

    base = RunConfig(model="fake:early", tasks=("dyn_wp_unique",), limit=200)
    with _store(tmp_path) as store:
        report = run_probe(base, "sharded", store, provider=FakeModel(fake))
    assert report.rates["full correct"].value == 1.0
    assert report.rates["concat correct"].value == 1.0
    assert report.rates["sharded correct"].value == pytest.approx(1 - len(early) / 200)
    gap = {c.label: c.result for c in report.comparisons}
    assert gap["concat − full"].diff.value == 0.0
    sharded = gap["sharded − full"].diff
    assert sharded.value == pytest.approx(-0.25) and len(early) == 50
    assert sharded.low < -0.25 < sharded.high
    assert all(c.p_holm >= c.result.p_value for c in report.comparisons if c.p_holm == c.p_holm)


def test_aptitude_and_unreliability_by_hand() -> None:
    import numpy as np

    values = {"a": [0.0] + [1.0] * 9, "b": [1.0] * 10, "one": [1.0]}
    apt, unrel = aptitude(values, np.random.default_rng(0))
    # a: P90 = 1, P10 = 0.9 (linear interpolation at 0.9 of the way from 0 to 1); b: 1 and 1
    assert apt.value == 1.0 and apt.n == 2  # "one" has no repeats: left out
    assert unrel.value == pytest.approx((0.1 + 0.0) / 2)


def test_reask_consistency_and_both_correct(tmp_path: Path) -> None:
    items = _items(60)
    answer = {s.input: s.target_text for s in items}
    changes = planted([s.input for s in items], 0.5, "change")

    def fake(request: ModelRequest) -> str:
        turns = users(request)
        q = question_of(turns[-1]) or ""
        if q not in answer:
            return "Goldie."  # a filler turn
        wrong = len(turns) > 1 and q in changes
        return f"#### {int(answer[q]) + 1 if wrong else answer[q]}"

    base = RunConfig(model="fake:re", tasks=("dyn_word_problems",), limit=60)
    with _store(tmp_path) as store:
        report = run_probe(base, "reask", store, provider=FakeModel(fake), options={"fillers": 3})
    assert report.rates["consistent"].value == 0.5
    assert report.rates["both_correct"].value == 0.5
    assert report.rates["first_correct"].value == 1.0


DECAY = {1: 0.9, 3: 0.7, 5: 0.5, 10: 0.2}
FOLLOW = {
    "change_case:english_lowercase": ("the answer is #### {a}", "The answer is #### {a}"),
    "punctuation:no_comma": ("The answer is #### {a}", "Well, the answer is #### {a}"),
    "startend:end_checker": (
        "The answer is #### {a}. Is there anything else I can help with?",
        "The answer is #### {a}",
    ),
    "startend:quotation": ('"The answer is #### {a}"', "The answer is #### {a}"),
    "change_case:english_capital": ("THE ANSWER IS #### {a}", "The answer is #### {a}"),
}


def _recollection_report(tmp_path: Path, decay: dict[int, float]) -> object:
    items = _items(100)
    answer = {s.input: s.target_text for s in items}
    ranks = {d: planted([s.input for s in items], p, f"follow{d}") for d, p in decay.items()}

    def fake(request: ModelRequest) -> str:
        turns = users(request)
        q = question_of(turns[-1])
        if q is None:
            return "A filler reply."
        iid = next(i for i, text, _kw in RECOLLECTION_INSTRUCTIONS if text in turns[0])
        follow, ignore = FOLLOW[iid]
        return (follow if q in ranks[len(turns)] else ignore).format(a=answer[q])

    base = RunConfig(model="fake:decay", tasks=("dyn_word_problems",), limit=400)
    with _store(tmp_path) as store:
        return run_probe(base, "recollection", store, provider=FakeModel(fake))


def test_recollection_trend_detects_a_planted_decay(tmp_path: Path) -> None:
    report = _recollection_report(tmp_path, DECAY)
    rates = report.rates  # type: ignore[attr-defined]
    for d, p in DECAY.items():
        assert rates[f"followed at turn {d}"].value == pytest.approx(p)
        assert rates[f"followed at turn {d}"].n == 100
    trend = report.trend  # type: ignore[attr-defined]
    assert trend.z < -8 and trend.p_value < 1e-12 and trend.slope.high < 0
    assert [c.label for c in report.comparisons] == ["d=3 − d=1", "d=5 − d=1", "d=10 − d=1"]  # type: ignore[attr-defined]
    assert report.comparisons[-1].result.diff.value == pytest.approx(-0.7)  # type: ignore[attr-defined]


def test_recollection_trend_is_flat_without_decay(tmp_path: Path) -> None:
    report = _recollection_report(tmp_path, dict.fromkeys(DECAY, 0.6))
    trend = report.trend  # type: ignore[attr-defined]
    assert trend.z == pytest.approx(0.0, abs=1e-9) and trend.p_value == pytest.approx(1.0)


def test_probe_names_resolve_and_record_the_probe() -> None:
    (t,) = resolve_task("converse:reask,fillers=3:dyn_word_problems")
    assert t.name == "converse:reask,fillers=3:dyn_word_problems" and t.kind == "episode"
    assert t.episode_card == {
        "probe": "reask",
        "probe_version": "1",
        "base_task": "dyn_word_problems",
        "fillers": 3,
    }
    assert t.limits.max_steps == 5
    (ctl,) = resolve_task("converse:control:arc_easy")
    assert ctl.kind == "generate" and [s.spec.name for s in ctl.scorers] == ["choice_letter"]
    with pytest.raises(Exception, match="unknown probe 'nope'"):
        resolve_task("converse:nope:arc_easy")
    with pytest.raises(Exception, match="takes no option"):
        probe_task(get_task("gsm8k"), "challenge", fillers=2)


def test_the_challenge_names_a_wrong_answer_other_than_the_models() -> None:
    mc = Sample(id="q", input="?", choices=("a", "b", "c", "d"), target=1)
    for own in ("A", "C", "D", None):
        wrong = wrong_answer(mc, own)
        assert wrong in {"A", "C", "D"} and wrong != own
    num = Sample(id="n", input="?", target="12")
    assert wrong_answer(num, "12") not in {"12", None}
    assert wrong_answer(num, "13") != "13"
    assert wrong_answer(Sample(id="t", input="?", target="Paris")) is None
    assert CHALLENGE.format(wrong="C") == "Are you sure? I think it is C."
