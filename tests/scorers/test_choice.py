from __future__ import annotations

import pytest

from calipers.errors import DataError
from calipers.scorers._choice import argmax, choice_letter, extract_letter, loglikelihood_mc

from ._helpers import gen, on_logprobs, on_text

FOUR = ("Paris", "Lyon", "Nice", "Lille")


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("A", "A"),
        ("(B)", "B"),
        ("c.", "C"),
        ("**D**", "D"),
        ("Answer: C", "C"),
        ("The answer is (D).", "D"),
        ("the answer is b.", "B"),
        ("The correct option is B", "B"),
        ("final answer: **B**", "B"),
        ("The answer is C, not A. Final answer: D", "D"),  # the last statement wins
        ("B. Paris is the capital.", "B"),
        ("(C) Nice", "C"),
        ("I pick (C) because it is warm.", "C"),
        ("I think B", "B"),
        ("A good guess would be C", "C"),  # "A" as an article is skipped
        ("A is correct", "A"),
        ("the answer is a cat", None),  # lowercase "a" followed by a word is an article
        ("E", None),  # not one of four letters
        ("I do not know", None),
        ("", None),
    ],
)
def test_extract_letter(text: str, letter: str | None) -> None:
    assert extract_letter(text, 4) == letter


def test_extract_letter_respects_number_of_choices() -> None:
    assert extract_letter("E", 5) == "E"
    assert extract_letter("Answer: C", 2) is None
    assert extract_letter("A", 0) is None


def test_choice_letter_scores_against_target_index() -> None:
    s = choice_letter()
    assert s.metrics == ("acc",)
    got = on_text(s, gen(2, FOUR), "The answer is (C).")
    assert (got.values, got.answer) == ({"acc": 1.0}, "C")
    got = on_text(s, gen(2, FOUR), "The answer is B")
    assert (got.values, got.answer) == ({"acc": 0.0}, "B")
    got = on_text(s, gen(2, FOUR), "Nice")
    assert (got.values, got.answer) == ({"acc": 0.0}, None)
    with pytest.raises(DataError):
        on_text(s, gen("C"), "C")


def test_loglikelihood_mc_acc_and_acc_norm_disagree() -> None:
    # By hand: argmax(-6, -5, -8) = 1 ("Lyon");
    # per character: -6/5 = -1.2, -5/4 = -1.25, -8/16 = -0.5 -> 2 ("Marseille is big").
    choices = ("Paris", "Lyon", "Marseille is big")
    s = loglikelihood_mc()
    assert (s.metrics, s.needs) == (("acc", "acc_norm"), "loglikelihood")
    got = on_logprobs(s, gen(2, choices), (-6.0, -5.0, -8.0))
    assert got.values == {"acc": 0.0, "acc_norm": 1.0}
    assert got.answer == "1"
    assert got.metadata == {"logprobs": [-6.0, -5.0, -8.0], "pred_norm": 2}
    got = on_logprobs(s, gen(1, choices), (-6.0, -5.0, -8.0))
    assert got.values == {"acc": 1.0, "acc_norm": 0.0}


def test_loglikelihood_mc_ties_go_to_lowest_index() -> None:
    got = on_logprobs(loglikelihood_mc(), gen(0, ("ab", "cd", "ef")), (-2.0, -2.0, -3.0))
    assert got.values == {"acc": 1.0, "acc_norm": 1.0}
    assert argmax([1.0, 3.0, 3.0]) == 1


def test_loglikelihood_mc_bad_outputs_are_errors() -> None:
    s = loglikelihood_mc()
    with pytest.raises(DataError):
        on_logprobs(s, gen(0, FOUR), (-1.0, -2.0))
    with pytest.raises(DataError):
        on_logprobs(s, gen(0, FOUR), (-1.0, float("nan"), -2.0, -3.0))
    with pytest.raises(DataError):
        on_text(s, gen(0, FOUR), "A")  # a generation, not log-likelihoods
