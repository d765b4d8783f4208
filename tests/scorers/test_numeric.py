from __future__ import annotations

import re
from decimal import Decimal

import pytest

from calipers.errors import ConfigError, DataError
from calipers.scorers._numeric import extract_flexible, extract_strict, numeric_match

from ._helpers import gen, on_text

SCORER = numeric_match()


def score(target: str, text: str) -> tuple[float, float, str | None]:
    got = on_text(SCORER, gen(target), text)
    return got.values["acc"], got.values["acc_strict"], got.answer


def test_metrics() -> None:
    assert SCORER.metrics == ("acc", "acc_strict")
    assert SCORER.needs == "generation"


def test_gsm8k_style_answer_is_right_both_ways() -> None:
    assert score("18", "The answer is 18.\n#### 18") == (1.0, 1.0, "18")


def test_flexible_takes_last_number_with_thousands_commas() -> None:
    assert score("1234", "First 12, then 1,222 more, so 1,234 apples") == (1.0, 0.0, "1234")


def test_dollars_and_trailing_zeros_are_the_same_number() -> None:
    assert score("18", "She pays $18.00.") == (1.0, 0.0, "18")
    assert score("18", "#### 18.00") == (1.0, 1.0, "18")
    assert score("0.5", "It is .5") == (1.0, 0.0, "0.5")


def test_hash_answer_wins_over_the_last_number() -> None:
    text = "#### 17\nHmm, 9 + 9 = 18"
    assert score("17", text) == (1.0, 1.0, "17")
    assert score("18", text) == (0.0, 0.0, "17")


def test_strict_follows_lm_eval_regex() -> None:
    # lm-eval's strict regex is "#### (\-?[0-9\.\,]+)": a dollar sign after #### is not strict.
    assert score("18", "#### $18") == (1.0, 0.0, "18")
    assert score("-3", "#### -3") == (1.0, 1.0, "-3")
    assert score("3", "####3") == (1.0, 0.0, "3")  # no space: not strict, flexible finds it


def test_no_number_is_wrong_with_no_answer() -> None:
    assert score("18", "I cannot tell.") == (0.0, 0.0, None)
    assert score("18", "") == (0.0, 0.0, None)


def test_ellipsis_is_not_a_number() -> None:
    assert score("42", "It is 42 ... or so ...") == (1.0, 0.0, "42")


def test_target_can_be_a_gsm8k_solution() -> None:
    assert score("Janet sells 16 - 3 - 4 = 9 eggs.\n#### 18", "18") == (1.0, 0.0, "18")


def test_tolerance() -> None:
    assert score("18", "18.05")[0] == 0.0
    loose = numeric_match(tolerance=0.1)
    assert on_text(loose, gen("18"), "18.05").values["acc"] == 1.0
    with pytest.raises(ConfigError):
        numeric_match(tolerance=-1)


def test_target_without_number_is_a_data_error() -> None:
    with pytest.raises(DataError):
        score("eighteen", "18")


def test_extraction_agrees_with_lm_eval_regexes_on_plain_numbers() -> None:
    # The lm-eval regexes applied directly: strict takes the first, flexible the last match.
    strict = re.compile(r"#### (\-?[0-9\.\,]+)")
    flexible = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
    for text in ["a 3 b 44 c 512", "x #### 7 y 9", "-5 then 12", "#### 1,000"]:
        s = strict.findall(text)
        f = [a or b for a, b in flexible.findall(text)]
        want_strict = Decimal(s[0].replace(",", "")) if s else None
        want_flex = want_strict if want_strict is not None else Decimal(f[-1].replace(",", ""))
        assert extract_strict(text) == want_strict
        assert extract_flexible(text) == want_flex
