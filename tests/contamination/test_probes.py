"""Memorisation probes against a fake model that memorised a known subset of items: each probe
must find that subset, and find nothing when nothing was memorised."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import math
import re
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import pytest
from rich.console import Console

from calipers.contamination._completion import completion_probe, continuation_score
from calipers.contamination._controls import (
    item_rng,
    item_text,
    normalise,
    prefix_match,
    rouge_l_f1,
    shuffle_words,
    split_half,
)
from calipers.contamination._minkpp import min_k_pp, min_k_pp_probe, robust_z
from calipers.contamination._probes import PROBES, run_probes
from calipers.contamination._result import (
    ItemScore,
    ProbeResult,
    paired_result,
    render_probe,
    with_reference,
)
from calipers.contamination._tsguess import clean_guess, masked_option, ts_guessing_probe
from calipers.errors import ConfigError
from calipers.models import FakeModel, ModelOptions, ModelProvider
from calipers.models._openai import OpenAIModel
from calipers.tasks import LoadContext, get_task
from calipers.types import ModelRequest, Sample, TokenStatsResult
from tests._data import DATA, require

T = TypeVar("T")


class ProbeFn(Protocol):
    """What the three probes share: model and items, and a seed."""

    def __call__(
        self, model: ModelProvider, samples: Sequence[Sample], *, seed: int = ...
    ) -> Coroutine[Any, Any, ProbeResult]: ...


PROBE_FNS: dict[str, ProbeFn] = {
    "min-k%++": min_k_pp_probe,
    "completion": completion_probe,
    "ts-guessing": ts_guessing_probe,
}


def synthetic(n: int, seed: int) -> list[Sample]:
    """Multiple-choice items of made-up words: 12-word questions, 4 two-word options."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("bcdfghklmnprstvz"))
    vowels = np.array(list("aeiou"))

    def word() -> str:
        return "".join(
            str(c) + str(v)
            for c, v in zip(rng.choice(letters, 3), rng.choice(vowels, 3), strict=True)
        )

    return [
        Sample(
            id=f"syn{seed}-{i}",
            input=" ".join(word() for _ in range(12)) + "?",
            choices=tuple(f"{word()} {word()}" for _ in range(4)),
            target=int(rng.integers(4)),
        )
        for i in range(n)
    ]


def arc(n: int, seed: int | None = None) -> list[Sample]:
    require("arc/ARC-Challenge")
    pool = list(get_task("arc_challenge").load(LoadContext(data_dir=DATA)))
    if seed is None:
        return pool[:n]
    return [pool[int(i)] for i in np.random.default_rng(seed).choice(len(pool), n, replace=False)]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def replying(text: str) -> Callable[[ModelRequest], str]:
    """A responder that always answers ``text``."""
    return lambda _request: text


@pytest.fixture(params=["synthetic", "arc"])
def bench_items(request: pytest.FixtureRequest) -> list[Sample]:
    return synthetic(40, 1) if request.param == "synthetic" else arc(40)


def memorise(items: Sequence[Sample], k: int = 10, seed: int = 7) -> tuple[FakeModel, set[str]]:
    chosen = np.random.default_rng(seed).choice(len(items), k, replace=False)
    subset = [items[int(i)] for i in chosen]
    return FakeModel(memorised=[item_text(s) for s in subset]), {s.id for s in subset}


# -- each probe finds the memorised subset -------------------------------------------------


@pytest.mark.parametrize("probe", PROBES)
def test_probe_finds_the_memorised_subset(probe: str, bench_items: list[Sample]) -> None:
    model, truth = memorise(bench_items)
    result: ProbeResult = run(PROBE_FNS[probe](model, bench_items, seed=3))
    if probe == "completion":  # questions under 8 words cannot be split and tested
        short = {s.id for s in bench_items if split_half(s.input) is None}
        assert result.n_excluded == len(short)
        truth -= short
    found = set(result.flagged)
    assert len(found & truth) / len(truth) >= 0.9, (probe, sorted(truth - found))
    assert len(found & truth) / max(1, len(found)) >= 0.9, (probe, sorted(found - truth))
    assert result.difference.low > 0, result.difference
    assert result.p_value < 0.01
    assert result.skipped is None and result.n_errors == 0
    assert result.item_mean.value > result.control_mean.value


@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("source", ["synthetic", "arc"])
def test_nothing_memorised_gives_no_difference(probe: str, source: str) -> None:
    covered, flagged = 0, 0
    for seed in range(10):
        items = synthetic(40, 100 + seed) if source == "synthetic" else arc(40, seed)
        result: ProbeResult = run(PROBE_FNS[probe](FakeModel(), items, seed=seed))
        d = result.difference
        covered += d.low <= 0 <= d.high
        flagged += len(result.flagged)
    assert covered >= 8, f"{probe}: 0 in the interval for only {covered} of 10 seeds"
    assert flagged <= 8, f"{probe}: {flagged} of 400 clean items flagged (over 2%)"


def test_the_paired_difference_is_what_is_memorised() -> None:
    """Memorising 0, 10 and 20 of 40 items: TS-Guessing's difference is that share exactly
    (the fake recalls every memorised option and guesses nothing else)."""
    items = synthetic(40, 2)
    for k in (0, 10, 20):
        model = memorise(items, k)[0] if k else FakeModel()
        result: ProbeResult = run(ts_guessing_probe(model, items))
        assert result.difference.value == pytest.approx(k / 40)
        assert result.item_mean.method == "wilson"
        assert result.difference.method == "newcombe-paired"


# -- does not apply: skipped with a reason, never zero -------------------------------------


def test_min_k_pp_is_skipped_without_token_stats() -> None:
    model = OpenAIModel("some-model", ModelOptions(base_url="http://127.0.0.1:9/v1"))
    result: ProbeResult = run(min_k_pp_probe(model, synthetic(5, 0)))
    assert result.skipped is not None
    assert "cannot give per-token log-probabilities" in result.skipped
    assert result.model == "openai"  # the server is not reachable: the provider's name
    for e in (result.item_mean, result.control_mean, result.difference):
        assert e.n == 0 and math.isnan(e.value)
    assert math.isnan(result.p_value) and result.items == ()
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert d["difference"]["value"] is None and d["skipped"] == result.skipped
    text = _render(result)
    assert "skipped:" in text and "cannot give per-token" in text


def test_probes_that_do_not_apply_say_why() -> None:
    arithmetic = list(get_task("dyn_arithmetic").load(LoadContext(seed=0, n=5)))
    ts: ProbeResult = run(ts_guessing_probe(FakeModel(), arithmetic))
    assert ts.skipped and "multiple choice" in ts.skipped and ts.n_excluded == 5
    short = [Sample(id=str(i), input="Too short a question?") for i in range(3)]
    comp: ProbeResult = run(completion_probe(FakeModel(), short))
    assert comp.skipped and "8 or more words" in comp.skipped and comp.n_excluded == 3
    empty: ProbeResult = run(min_k_pp_probe(FakeModel(), []))
    assert empty.skipped == "no items to probe" and empty.difference.n == 0


def test_failed_calls_are_counted_not_scored() -> None:
    items = synthetic(40, 1)
    model, truth = memorise(items)
    flaky = FakeModel(memorised=model._memorised, fail_rate=0.2)
    for probe in PROBES:
        result: ProbeResult = run(PROBE_FNS[probe](flaky, items))
        assert 0 < result.n_errors < 40, probe
        assert result.difference.n == 40 - result.n_errors - result.n_excluded
        assert set(result.flagged) <= truth, probe


# -- arithmetic against hand-computed values -----------------------------------------------


def test_min_k_pp_hand_computed() -> None:
    """A 3-token vocabulary. At a position with p = (.5, .25, .25) the log-probabilities are
    ln .5 or ln .25 with mass 1/2 each: mean -1.5 ln 2, sd ln 2 / 2, and token 0 scores +1.
    With p = (.8, .1, .1): ln .8 (mass .8) or ln .1 (mass .2), sd .4 ln 8; token 1 scores -2."""
    ln2 = math.log(2.0)
    mu_a, sd_a = -1.5 * ln2, ln2 / 2
    mu_b, sd_b = 0.8 * math.log(0.8) + 0.2 * math.log(0.1), 0.4 * math.log(8.0)
    stats = TokenStatsResult(
        tokens=("x", "y", "x", "y", "z"),
        logprobs=(math.log(0.5), math.log(0.1), math.log(0.25), math.log(0.8), 0.0),
        mean_logprob=(mu_a, mu_b, mu_a, mu_b, 0.0),
        std_logprob=(sd_a, sd_b, sd_a, sd_b, 0.0),  # the last: a certain token, scores 0
    )
    # per-token scores: +1, -2, -1, +0.5, 0
    assert min_k_pp(stats, 0.2) == pytest.approx(-2.0)  # floor(5 * .2) = 1 token
    assert min_k_pp(stats, 0.4) == pytest.approx(-1.5)  # the 2 lowest: -2, -1
    assert min_k_pp(stats, 0.1) == pytest.approx(-2.0)  # at least one token
    assert min_k_pp(stats, 1.0) == pytest.approx((1 - 2 - 1 + 0.5 + 0) / 5)
    empty = TokenStatsResult(tokens=(), logprobs=(), mean_logprob=(), std_logprob=())
    assert math.isnan(min_k_pp(empty))
    with pytest.raises(ValueError, match="k must be"):
        min_k_pp(stats, 0.0)


def test_robust_z() -> None:
    null = [1.0, 2.0, 3.0, 4.0, 5.0]  # median 3, MAD 1
    np.testing.assert_allclose(robust_z([6.0, 3.0, math.nan], null)[:2], [3 / 1.4826, 0.0])
    assert math.isnan(robust_z([6.0, 3.0, math.nan], null)[2])
    flat = robust_z([2.0, 5.0], [2.0, 2.0, 2.0])  # MAD 0 and sd 0: above the null is inf
    assert flat[0] == 0.0 and math.isinf(flat[1])
    assert math.isnan(robust_z([1.0], [1.0])[0])  # no null to speak of


def test_rouge_l_textbook_examples() -> None:
    # Lin (2004), section 3.1: against "police killed the gunman", "police kill the gunman"
    # has LCS 3 (ROUGE-L 3/4) and "the gunman kill police" LCS 2 (2/4).
    assert rouge_l_f1("police kill the gunman", "police killed the gunman") == pytest.approx(0.75)
    assert rouge_l_f1("the gunman kill police", "police killed the gunman") == pytest.approx(0.5)
    # Case and punctuation do not count: LCS "the cat on the mat", 5 of 6 words each side.
    assert rouge_l_f1("The cat sat on the mat!", "the cat, is on THE mat") == pytest.approx(5 / 6)
    assert rouge_l_f1("", "x") == 0.0 and rouge_l_f1("x", "") == 0.0


def test_prefix_match_and_continuation_score() -> None:
    assert prefix_match("Rome, the capital of Italy", "rome the capital city") == 0.75
    assert prefix_match("capital Rome", "rome the capital") == 0.0
    assert prefix_match("anything", "") == 0.0
    reference = " over the lazy dog"
    assert continuation_score(" over the lazy dog and more", reference) == 1.0
    assert continuation_score(" over the lazy dog and more", reference, "rouge-l") == 1.0
    with pytest.raises(ValueError, match="metric"):
        continuation_score("a", "b", cast(Any, "bleu"))


def test_shuffle_keeps_length_words_and_line_breaks() -> None:
    text = "Which of these is a\nmammal?  A whale, a shark or a trout."
    out = shuffle_words(text, item_rng(0, "id", "p"))
    assert out != text and len(out) == len(text)
    assert sorted(out.split()) == sorted(text.split())
    assert re.findall(r"\s+", out) == re.findall(r"\s+", text)  # the same gaps, in order
    assert out == shuffle_words(text, item_rng(0, "id", "p"))  # seeded
    assert out != shuffle_words(text, item_rng(1, "id", "p"))
    assert shuffle_words("same same same", item_rng(0, "x", "p")) == "same same same"


def test_split_half() -> None:
    text = "one two  three four five six seven eight nine"
    first, rest = split_half(text) or ("", "")
    assert first + rest == text and first == "one two  three four" and rest.startswith(" five")
    assert split_half("a b c", min_words=8) is None


def test_masked_option_is_a_distinct_wrong_option() -> None:
    item = Sample(id="q", input="Pick", choices=("yes", "no", "Yes!", "maybe", "never"), target=1)
    picks = {masked_option(item, item_rng(s, "q", "t")) for s in range(50)}
    assert picks == {3, 4}  # not the answer (1), not "yes"/"Yes!" (the same once normalised)
    assert (
        masked_option(item.model_copy(update={"choices": ("a", "b")}), item_rng(0, "", "")) is None
    )
    assert masked_option(Sample(id="g", input="2+2?", target="4"), item_rng(0, "", "")) is None


def test_clean_guess_and_normalise() -> None:
    assert clean_guess("C. The Moon\nbecause...") == "The Moon"
    assert clean_guess("(B) 42") == "42" and clean_guess("Option D: red") == "red"
    assert clean_guess('\n  "quoted"  ') == "quoted"
    assert normalise("The  Moon!") == "moon" and normalise("An apple, a day") == "apple day"


def test_ts_counts_a_reply_as_written_when_the_option_looks_like_a_label() -> None:
    item = Sample(
        id="q",
        input="Who wrote Narnia books for children in England long ago?",
        choices=("C.S. Lewis", "J. Austen", "Tolkien", "Roald Dahl"),
        target=2,
    )
    hits: list[float] = []
    for answer in ("C.S. Lewis", "J. Austen", "Roald Dahl"):
        model = FakeModel(replying(answer))
        result: ProbeResult = run(ts_guessing_probe(model, [item], seed=0))
        hits.append(result.items[0].item)
    assert sum(hits) == 1.0  # exactly the one hidden option is matched


# -- results: JSON, rendering, reference sets, progress ------------------------------------


def _render(result: ProbeResult) -> str:
    console = Console(record=True, width=120)
    console.print(render_probe(result))
    return console.export_text()


def test_result_json_round_trip_and_rendering() -> None:
    items = synthetic(40, 1)
    model, truth = memorise(items)
    result: ProbeResult = run(min_k_pp_probe(model, items))
    d = result.to_dict()
    again = ProbeResult.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert again.to_dict() == d and again.flagged == result.flagged
    text = _render(result)
    assert "difference (item - control)" in text and "paired-bootstrap" in text
    assert sorted(truth)[0] in text or "..." in text
    assert result.caveat.split()[0] in text


def test_with_reference_matches_a_normal_approximation() -> None:
    """Large samples: MOVER on two bootstrap intervals is close to Welch's normal interval."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(1.0, 1.0, 200), rng.normal(0.2, 0.5, 300)

    def result(gaps: np.ndarray[Any, Any]) -> ProbeResult:
        scores = [ItemScore(str(i), float(g), 0.0) for i, g in enumerate(gaps)]
        return paired_result("p", "m", "model", "c", scores, seed=0, settings={})

    out = with_reference(result(a), result(b))
    assert out.excess is not None and out.reference is not None
    assert out.excess.value == pytest.approx(a.mean() - b.mean())
    half = 1.96 * math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)  # Welch
    assert out.excess.half_width == pytest.approx(half, rel=0.1)
    assert out.reference.value == pytest.approx(b.mean())
    assert "excess over the reference" in _render(out)


def test_with_reference_does_not_collapse_on_all_zero_rates() -> None:
    """A model that never guesses: both differences are 0 with Newcombe's interval
    +-z^2 / (n + z^2) (Wilson's upper bound for 0 of n, the margins being empty), and the
    excess interval is that half-width times sqrt(2), not the point [0, 0]."""
    zeros = [ItemScore(str(i), 0.0, 0.0) for i in range(60)]
    r = paired_result("ts-guessing", "m", "model", "c", zeros, seed=0, settings={})
    z2 = 1.959963984540054**2
    assert r.difference.high == pytest.approx(z2 / (60 + z2))
    out = with_reference(r, r)
    assert out.excess is not None and out.excess.value == 0.0
    assert out.excess.high == pytest.approx(math.sqrt(2) * z2 / (60 + z2))
    assert out.excess.low == pytest.approx(-out.excess.high)
    skipped_ref = with_reference(r, ProbeResult.from_dict({**r.to_dict(), "skipped": "no"}))
    assert skipped_ref.excess is not None and skipped_ref.excess.is_empty


def test_run_probes_with_a_reference_set() -> None:
    items = synthetic(40, 1)
    model, truth = memorise(items)
    fresh = list(get_task("dyn_dates_mc").load(LoadContext(seed=9, n=40)))
    calls: list[tuple[str, int, int]] = []
    results = run(run_probes(model, items, reference=fresh, progress=lambda *a: calls.append(a)))
    assert [r.probe for r in results] == list(PROBES)
    for r in results:
        assert r.excess is not None and r.excess.low > 0, r.probe
        assert set(r.flagged) == truth, r.probe
    names = {c[0] for c in calls}
    assert names == {*PROBES, *(f"{p}/reference" for p in PROBES)}
    assert ("min-k%++", 40, 40) in calls and ("ts-guessing/reference", 40, 40) in calls
    with pytest.raises(ConfigError, match="Unknown probe"):
        run(run_probes(model, items, probes=["min-k"]))


def test_the_docs_example_runs_and_prints_what_it_says() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "contamination-probes.md"
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S))
    require("arc/ARC-Challenge")
    code = code.replace('Path("../shared/data")', repr(str(DATA)))
    import calipers.contamination as package

    if not hasattr(package, "run_probes"):  # until the package exports the probes
        code = code.replace(
            "from calipers.contamination import item_text, render_probe, run_probes",
            "from calipers.contamination._controls import item_text\n"
            "from calipers.contamination._probes import run_probes\n"
            "from calipers.contamination._result import render_probe",
        )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(doc), "exec"), {})
    promised = re.findall(r"^# (\S+ \d+ .*)$", code, re.M)
    assert out.getvalue().splitlines()[: len(promised)] == promised
