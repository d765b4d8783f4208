from __future__ import annotations

import pytest

from calipers.errors import ConfigError
from calipers.scorers._text import exact_match, normalize_answer, normalized_match, regex_match

from ._helpers import gen, on_text


def test_exact_match_strips_but_keeps_case() -> None:
    s = exact_match()
    assert s.metrics == ("exact_match",)
    got = on_text(s, gen("Paris"), "  Paris \n")
    assert got.values == {"exact_match": 1.0}
    assert got.answer == "Paris"
    assert on_text(s, gen("Paris"), "paris").values == {"exact_match": 0.0}
    assert on_text(s, gen("Paris"), "Paris.").values == {"exact_match": 0.0}
    assert on_text(exact_match(ignore_case=True), gen("Paris"), "PARIS").value == 1.0


def test_exact_match_on_multiple_choice_uses_choice_text() -> None:
    sample = gen(1, ("Lyon", "Paris"))
    assert on_text(exact_match(), sample, "Paris").value == 1.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Eiffel-Tower!", "eiffeltower"),
        ("An apple, a pear and THE plum.", "apple pear and plum"),
        ("  theater  ", "theater"),  # "the" only as a whole word
        ("", ""),
    ],
)
def test_normalize_answer_is_squad_style(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_normalized_match() -> None:
    s = normalized_match()
    assert s.metrics == ("match",)
    assert on_text(s, gen("eiffel tower"), "The Eiffel Tower!").value == 1.0
    assert on_text(s, gen("eiffel tower"), "It is the Eiffel Tower.").value == 0.0
    c = normalized_match(contains=True)
    assert on_text(c, gen("Eiffel Tower"), "It is the Eiffel Tower, in Paris.").value == 1.0
    assert on_text(c, gen("4"), "I have 14 apples").value == 0.0  # whole tokens only
    assert on_text(c, gen("4"), "I have 4 apples").value == 1.0
    assert on_text(c, gen(""), "anything").value == 0.0


def test_regex_match_first_and_last() -> None:
    first = regex_match(pattern=r"answer is (\w+)")
    last = regex_match(pattern=r"answer is (\w+)", last=True)
    text = "The answer is Lyon. No wait, the answer is Paris."
    assert on_text(first, gen("paris"), text).value == 0.0
    assert on_text(first, gen("paris"), text).answer == "Lyon"
    got = on_text(last, gen("paris"), text)
    assert (got.value, got.answer) == (1.0, "Paris")


def test_regex_match_case_and_group() -> None:
    assert on_text(regex_match(pattern=r"ANSWER: (\w+)"), gen("x"), "answer: X").value == 1.0
    strict_case = regex_match(pattern=r"ANSWER: (\w+)", ignore_case=False)
    assert on_text(strict_case, gen("x"), "answer: X").answer is None
    whole = regex_match(pattern=r"\d{4}-\d{2}-\d{2}", group=0)
    assert on_text(whole, gen("2024-02-29"), "It is 2024-02-29.").value == 1.0


def test_regex_match_no_match_is_wrong_with_no_answer() -> None:
    got = on_text(regex_match(pattern=r"answer is (\w+)"), gen("paris"), "I don't know")
    assert got.values == {"match": 0.0}
    assert got.answer is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"pattern": "(unclosed"},
        {"pattern": r"\w+", "group": 1},
        {"pattern": "(a)", "group": -1},
        {},
    ],
)
def test_regex_match_bad_config_is_config_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        regex_match(**kwargs)
