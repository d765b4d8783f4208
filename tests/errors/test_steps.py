"""The step checker on constructed working with known slips, in every format it reads, and on
GSM8K's own gold solutions (all right but one known typo)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from calipers.scorers import check_steps


def _read(text: str) -> list[tuple[str, bool]]:
    return [(s.text, s.ok) for s in check_steps(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("17 * 3 = 51", [("17 * 3 = 51", True)]),
        ("17 * 3 = 41", [("17 * 3 = 41", False)]),
        ("He pays $1,200 / 4 = $300 each.", [("$1,200 / 4 = $300", True)]),
        ("He pays $1,200 / 4 = $350 each.", [("$1,200 / 4 = $350", False)]),
        ("2 × 3.5 = 7", [("2 × 3.5 = 7", True)]),
        ("12 x 4 = 46", [("12 x 4 = 46", False)]),
        ("12 ÷ 4 = 3", [("12 ÷ 4 = 3", True)]),
        ("(3 + 4) * 2 = 14", [("(3 + 4) * 2 = 14", True)]),
        ("-5 + 3 = -2", [("-5 + 3 = -2", True)]),
        ("-5 + 3 = 2", [("-5 + 3 = 2", False)]),
        ("0.25 * 8 = 2.5", [("0.25 * 8 = 2.5", False)]),
        ("50 * 20% = 10", [("50 * 20% = 10", True)]),
        ("45 + 21 + 28 = 94%", [("45 + 21 + 28 = 94%", True)]),  # a percentage at face value
        ("3 / 6 = 50%", [("3 / 6 = 50%", True)]),
        ("sold 48/2 = <<48/2=24>>24 clips", [("48/2 = 24", True)]),
        ("3 \\times 4 = 12", [("3 \\times 4 = 12", True)]),
        # an annotation with no operator is dropped: the text's own step is read (SmolLM2)
        ("she lays 16 x 3 = <<36=36>>36 eggs", [("16 x 3 = 36", False)]),
        # the text and its annotation disagree: each is read (GSM8K's gold test/501)
        ("364 / 4 = <<3/4*364=273>>273 yards", [("364 / 4 = 273", False), ("3/4*364=273", True)]),
        # SmolLM2: the text is wrong (60/3 is 20), its annotation right
        ("he runs 60/3 = <<30/3=10>>10 meters", [("60/3 = 10", False), ("30/3=10", True)]),
        ("sold 20*4 = <<4*20=80>>80 sheep", [("20*4 = 80", True)]),  # one step, not two
        ("from 1:00 * 60 = 60 seconds", []),  # a time, not a number
        ("**5 + 3 = 9**", [("5 + 3 = 9", False)]),
        ("- 3 + 4 = 7", [("3 + 4 = 7", True)]),  # a bullet, not a minus
        ("3 + 4 = 7 + 5 = 12", [("3 + 4 = 7 + 5", True), ("7 + 5 = 12", True)]),
        ("10 / 3 = 3.33", [("10 / 3 = 3.33", True)]),  # rounded to the digits shown
        ("100 / 3 = 34", [("100 / 3 = 34", False)]),  # neither rounded nor cut
        ("1.5 * 3 = 4", [("1.5 * 3 = 4", False)]),  # 4.5 needs no more digits than 1.5
        ("Total = 5 * 3 = 15 - that is all", [("5 * 3 = 15", True)]),
        # skipped rather than guessed: algebra, words inside, shorthand percentages
        ("3x + 4 = 28", []),
        ("x - 3 = 5", []),
        ("5 apples + 3 = 8", []),
        ("100 + 20% = 120", []),
        ("The answer = 12", []),
    ],
)
def test_each_format(text: str, expected: list[tuple[str, bool]]) -> None:
    assert _read(text) == expected


def test_multi_line_working_and_the_wrong_step_found() -> None:
    text = (
        "First, 16 - 3 - 4 = 9 eggs are left.\n"
        "Then she makes 9 * 2 = 17 dollars.\n"
        "\n"
        "So the answer is 17.\n#### 17"
    )
    steps = check_steps(text)
    assert [(s.line, s.ok) for s in steps] == [(1, True), (2, False)]
    assert steps[1].value == 18 and steps[1].stated == 17
    assert steps[1].describe(2) == "step 2: 9 * 2 = 17, should be 18"


def test_exact_fractions_not_floats() -> None:
    [s] = check_steps("0.1 + 0.2 = 0.3")  # a float would say 0.30000000000000004
    assert s.ok and s.value == Fraction(3, 10)


def test_gsm8k_gold_solutions(gsm8k_test: Path) -> None:
    """Every gold solution's steps are right, except two written wrong in GSM8K itself: a
    typo (its answer is 300) and a step whose text lost a factor its annotation kept
    ("364 / 4 = <<3/4*364=273>>273")."""
    wrong, n_steps = [], 0
    for line in gsm8k_test.read_text().splitlines():
        steps = check_steps(json.loads(line)["answer"].split("####")[0])
        n_steps += len(steps)
        wrong += [s.text for s in steps if not s.ok]
    assert n_steps > 4000  # about 3.3 per solution: the checker reads GSM8K's working
    assert wrong == ["364 / 4 = 273", "$32 - $20 = $300"]
