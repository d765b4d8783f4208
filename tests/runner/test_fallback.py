"""A model without log-likelihoods runs the default suite: a multiple-choice task runs its
generation formulation, and the methodology says so; asked explicitly, it is refused."""

from __future__ import annotations

import asyncio
import re
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from calipers.analysis import load_runs, methodology_differences
from calipers.errors import ConfigError, NotSupportedError
from calipers.models import FakeModel, ModelOptions, resolve_model
from calipers.runner import RunConfig, RunResult, arun, comparable_hash
from calipers.store import Store
from calipers.types import LoglikelihoodRequest, ModelRequest

SUITE = {"dyn_word_problems", "dyn_arithmetic", "dyn_dates", "dyn_dates_mc"}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_QUESTION = re.compile(
    r"(What day of the week is|What is the date) (\d+) days (after|before) "
    r"(?:[A-Z][a-z]+day, )?([A-Z][a-z]+ \d{1,2}, \d{4})\?"
)
_OPTION = re.compile(r"^([A-D])\. (.+)$", re.MULTILINE)


def _text(req: ModelRequest) -> str:
    return req.prompt or "" if req.messages is None else req.messages[-1].content


def date_solver(req: ModelRequest) -> str:
    """Works out a four-option date question with ``datetime`` (independently of the task's
    generator) and answers the letter of the matching option; anything else gets "42"."""
    text = _text(req)
    m = _QUESTION.search(text)
    if m is None or not _OPTION.search(text):  # not a four-option date question
        return "42"
    start = datetime.strptime(m[4], "%B %d, %Y").date()
    days = int(m[2]) * (1 if m[3] == "after" else -1)
    right: date = start + timedelta(days=days)
    answer = (
        WEEKDAYS[right.weekday()]
        if m[1].startswith("What day")
        else f"{right.strftime('%B')} {right.day}, {right.year}"
    )
    letters = [str(letter) for letter, option in _OPTION.findall(text) if option == answer]
    assert len(letters) == 1, text
    return letters[0]


def _run(store: Store, model: FakeModel, **config: Any) -> RunResult:
    cfg = RunConfig(model="fake:solver", limit=6, seed=3, **config)
    return asyncio.run(arun(cfg, store, provider=model))


def test_default_suite_runs_on_a_model_without_loglikelihood() -> None:
    model = FakeModel(date_solver, name="solver", loglikelihood=False)
    assert not model.supports_loglikelihood
    with Store.open() as store:
        result = _run(store, model)
        records = store.get_samples(result.run_id)
    tasks = result.summary.tasks
    assert set(tasks) == SUITE
    assert all(t.n_samples == 6 and t.n_errors == 0 for t in tasks.values())
    # every date question was read from the reply's letter, and every one was right
    assert tasks["dyn_dates_mc"].metrics["acc"].value == 1.0
    mc = [r for r in records if r.task == "dyn_dates_mc"]
    assert len(mc) == 6 and all("messages" in r.prompt for r in mc)
    card = result.methodology.tasks["dyn_dates_mc"]
    assert (card.formulation, card.kind) == ("generate", "generate")
    assert card.formulation_fallback == (
        "generate formulation instead of cloze, since the fake provider cannot compute "
        "log-likelihoods"
    )
    assert [s["name"] for s in card.scorers] == ["choice_letter"]
    others = [m for t, m in result.methodology.tasks.items() if t != "dyn_dates_mc"]
    assert all(m.formulation_fallback is None for m in others)


def test_a_fallback_compares_with_the_same_formulation_only() -> None:
    with Store.open() as store:
        fallback = _run(
            store, FakeModel(date_solver, name="a", loglikelihood=False), tasks=("dyn_dates_mc",)
        )
        asked = _run(
            store, FakeModel(date_solver, name="b"), tasks=("dyn_dates_mc",), formulation="generate"
        )
        cloze = _run(store, FakeModel(name="c"), tasks=("dyn_dates_mc",))
        runs = load_runs(store, [fallback.run_id, asked.run_id, cloze.run_id])
    assert asked.methodology.tasks["dyn_dates_mc"].formulation_fallback is None
    hashes = [comparable_hash(r.methodology, "dyn_dates_mc") for r in (fallback, asked, cloze)]
    assert hashes[0] == hashes[1] != hashes[2]
    assert methodology_differences(runs[0], runs[1], "dyn_dates_mc") == []
    differences = methodology_differences(runs[0], runs[2], "dyn_dates_mc")
    assert any(d.startswith("dyn_dates_mc: formulation is 'generate'") for d in differences)
    assert any("formulation_fallback" in d for d in differences)


def test_an_explicit_loglikelihood_formulation_is_refused() -> None:
    model = FakeModel(loglikelihood=False)
    with Store.open() as store:
        with pytest.raises(
            ConfigError,
            match=r"--formulation cloze scores choices by "
            r"log-likelihood, but the fake provider cannot",
        ) as e:
            _run(store, model, tasks=("dyn_dates_mc",), formulation="cloze")
        assert e.value.hint is not None and "--formulation generate" in e.value.hint
        # a suite: the formulation was asked for every task that offers it
        with pytest.raises(ConfigError, match="--formulation letter"):
            _run(store, model, formulation="letter")
        # a task with no generation formulation cannot fall back
        with pytest.raises(ConfigError, match=r"'hellaswag'.*no formulation answered by gen"):
            _run(store, model, tasks=("hellaswag",))
        assert store.list_runs() == []


def test_the_fake_model_without_loglikelihood_refuses_to_score() -> None:
    model = resolve_model("fake:echo,loglik=off", ModelOptions())
    assert not model.supports_loglikelihood and not model.supports_token_stats
    assert resolve_model("fake:echo", ModelOptions()).supports_loglikelihood
    with pytest.raises(NotSupportedError, match="fake provider cannot compute log-likelihoods"):
        asyncio.run(model.loglikelihood(LoglikelihoodRequest(context="Q", continuations=("A",))))
    with pytest.raises(ConfigError, match="loglik='maybe': use on or off"):
        resolve_model("fake:echo,loglik=maybe", ModelOptions())
