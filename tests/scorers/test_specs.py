"""A stored scorer spec rebuilds a scorer that behaves identically."""

from __future__ import annotations

import json
from typing import Any

import pytest

from calipers.errors import ConfigError, UnknownNameError
from calipers.scorers import Scorer, build_scorer, list_scorers
from calipers.types import Sample, Score

from ._helpers import gen, on_logprobs, on_text

BUILTINS = {
    "choice_letter": (("acc",), "generation"),
    "exact_match": (("exact_match",), "generation"),
    "gsm8k_lmeval": (("flexible_lmeval", "strict_lmeval"), "generation"),
    "loglikelihood_mc": (("acc", "acc_norm"), "loglikelihood"),
    "normalized_match": (("match",), "generation"),
    "numeric_match": (("acc", "acc_strict"), "generation"),
    "regex_match": (("match",), "generation"),
}

REPLIES = ["#### 18", "The answer is (B).", "paris", " Paris ", "It is 2024-02-29, B", "", "18.0"]


def outcome(scorer: Scorer, sample: Sample, reply: str) -> Score | str:
    """The score, or the name of the error (a text target for choice_letter is one)."""
    try:
        return on_text(scorer, sample, reply)
    except Exception as e:
        return type(e).__name__


def test_builtins_are_listed() -> None:
    listed = list_scorers()
    for name, (metrics, needs) in BUILTINS.items():
        assert listed[name][:2] == (metrics, needs)
        assert listed[name][2]  # a one-line description


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("exact_match", {"ignore_case": True}),
        ("normalized_match", {"contains": True}),
        ("numeric_match", {"tolerance": 0.5}),
        ("regex_match", {"pattern": r"(\d{4}-\d{2}-\d{2}|B)", "last": True}),
        ("choice_letter", {}),
    ],
)
def test_generation_scorer_rebuilds_from_stored_spec(name: str, args: dict[str, Any]) -> None:
    original = build_scorer({"name": name, "args": args})
    stored = json.loads(json.dumps(original.spec.model_dump(mode="json")))
    rebuilt = build_scorer(stored)
    assert rebuilt.spec == original.spec == build_scorer(stored).spec
    assert (rebuilt.metrics, rebuilt.needs) == BUILTINS[name]
    samples = [gen("18"), gen("Paris"), gen(1, ("Paris", "B", "18"))]
    for sample in samples:
        for reply in REPLIES:
            assert outcome(rebuilt, sample, reply) == outcome(original, sample, reply)


def test_loglikelihood_scorer_rebuilds_from_stored_spec() -> None:
    original = build_scorer("loglikelihood_mc")
    rebuilt = build_scorer(original.spec.model_dump())
    sample = gen(2, ("Paris", "Lyon", "Marseille is big"))
    lps = (-6.0, -5.0, -8.0)
    assert on_logprobs(rebuilt, sample, lps) == on_logprobs(original, sample, lps)


def test_bad_specs() -> None:
    with pytest.raises(UnknownNameError, match="numeric_match"):
        build_scorer("numeric_mach")
    with pytest.raises(ConfigError):
        build_scorer({"name": "exact_match", "args": {"nope": 1}})
    with pytest.raises(ConfigError):
        build_scorer({"name": "regex_match", "args": {"pattern": "("}})
