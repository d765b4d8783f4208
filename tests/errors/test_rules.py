"""The rules, one error type at a time: numeric answers (constructed and real GSM8K items
scored by the real scorers), multiple choice position bias on planted picks, code categories
from real sandboxed runs of planted programs, IFEval instruction types."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from calipers.scorers import ErrorRule, ScoredReply, build_scorer, error_rule
from calipers.types import ErrorLabel, ModelResponse, Sample, SampleOutput, Score

NUMERIC = error_rule("numeric_match")
CHOICE = error_rule("choice_letter")
CODE = error_rule("code_tests")
IFEVAL = error_rule("ifeval")


def _one(rule: ErrorRule | None, reply: ScoredReply) -> ErrorLabel:
    assert rule is not None
    [label] = rule.classify([reply])
    assert label is not None
    return label


def _num(text: str, target: str = "51", **kw: Any) -> ErrorLabel:
    r = ScoredReply(sample_id="s", passed=False, primary="acc", response=text, target=target)
    return _one(NUMERIC, ScoredReply(**{**r.__dict__, **kw}))


@pytest.mark.parametrize(
    ("text", "kw", "expected_type", "in_detail"),
    [
        ("", {}, "no_answer", "empty reply"),
        ("", {"output_tokens": 64, "max_tokens": 64}, "truncated", "64 tokens"),
        ("I'm sorry, I can't help with that.", {}, "no_answer", "refused"),
        ("Let me think about the farm", {}, "no_answer", "no number"),
        ("17 * 3 = 51 and then 51 + 2", {"output_tokens": 64, "max_tokens": 64}, "truncated", ""),
        ("17 * 3 = 41\n#### 41", {}, "calculation_slip", "step 1: 17 * 3 = 41, should be 51"),
        (
            "He has 17 * 2 = 34 pens.\nThen 34 + 20 = 55.\n#### 55",
            {},
            "calculation_slip",
            "step 2: 34 + 20 = 55, should be 54",
        ),
        ("17 + 3 = 20\n20 * 2 = 40\n#### 40", {}, "wrong_plan", "all 2 steps right"),
        ("#### 50", {}, "no_working", "answered 50"),
        # the right number is there, the scorer missed it
        ("The answer is 51. She had 3 bags left over.", {}, "extraction_failure", "answers 51"),
        ("17 * 3 = 51\n#### 51.00", {}, "extraction_failure", "51"),
        ("So the total is $51", {}, "extraction_failure", "51"),
    ],
)
def test_numeric_types(text: str, kw: dict[str, Any], expected_type: str, in_detail: str) -> None:
    label = _num(text, **kw)
    assert label.type == expected_type, label.detail
    assert in_detail in label.detail and label.method == "rule"


def test_a_passing_reply_gets_no_label() -> None:
    assert NUMERIC is not None
    ok = ScoredReply(sample_id="s", passed=True, primary="acc", response="#### 51", target="51")
    assert NUMERIC.classify([ok]) == [None]


def _score(spec: str | dict[str, Any], sample: Sample, text: str) -> Score:
    out = SampleOutput(response=ModelResponse(text=text))
    return asyncio.run(build_scorer(spec)(sample, out))


def test_real_gsm8k_items_through_the_real_scorers(gsm8k_test: Path) -> None:
    """GSM8K test/0 (Janet's ducks, 18) and test/3 (James' sprints, 540) with hand-written
    replies: scored by gsm8k_lmeval (the task's primary metric), labelled by the rule."""
    rows = [json.loads(x) for x in gsm8k_test.read_text().splitlines()[:4]]
    cases = [
        (rows[0], "16 - 3 - 4 = 8 eggs are sold.\n8 * 2 = 16\n#### 16", "calculation_slip"),
        (rows[0], "16 - 3 = 13 eggs.\n13 * 2 = 26\n#### 26", "wrong_plan"),
        (rows[0], "16 - 3 - 4 = 9 eggs, 9 * 2 = 18\n#### 18.0", "extraction_failure"),
        (rows[3], "He runs 3 * 60 = 180 meters\n#### 180", "wrong_plan"),
        (rows[3], "3 * 3 = 9 sprints, 9 * 60 = 540 meters", None),  # passes: last number
    ]
    for row, text, expected in cases:
        target = row["answer"].split("####")[1].strip()
        sample = Sample(id="x", input=row["question"], target=target)
        sc = _score("gsm8k_lmeval", sample, text)
        passed = sc.values["flexible_lmeval"] == 1.0
        reply = ScoredReply(
            sample_id="x",
            passed=passed,
            primary="flexible_lmeval",
            response=text,
            answer=sc.answer,
            target=target,
        )
        assert NUMERIC is not None
        [label] = NUMERIC.classify([reply])
        assert (label.type if label else None) == expected, (text, label)


# -- multiple choice ------------------------------------------------------------------------


def _mc(i: int, pick: str | None, target: int, right: bool) -> ScoredReply:
    return ScoredReply(
        sample_id=f"q{i}",
        passed=right,
        primary="acc",
        response=pick or "hmm",
        answer=pick,
        target=str(target),
        details={"choice": {"target_index": target, "n_options": 4}},
    )


def test_position_bias_planted() -> None:
    """Answers spread evenly over A-D; the model answers A on 70 of 100 items whatever the
    question, right on the other 30: its wrong A picks are position bias, the rest distractors."""
    replies, expected, picks = [], [], []
    for i in range(100):
        target = i % 4
        pick = 0 if i % 10 < 7 else (target if i % 10 < 9 else (target + 1) % 4)
        right = pick == target
        picks.append(pick)
        replies.append(_mc(i, "ABCD"[pick], target, right))
        expected.append(None if right else ("position_bias" if pick == 0 else "distractor"))
    replies[5] = _mc(5, None, 1, False)  # one reply with no letter at all
    expected[5] = "no_choice"
    picks[5] = -1
    k = picks.count(0)  # A picks, right or wrong
    assert CHOICE is not None
    labels = CHOICE.classify(replies)
    assert [lab.type if lab else None for lab in labels] == expected
    assert expected.count("position_bias") > 40
    bias = next(lab for lab in labels if lab and lab.type == "position_bias")
    assert f"picks A on {k}/100" in bias.detail and "25% of answers are A" in bias.detail


def test_no_position_bias_when_picks_follow_the_answers() -> None:
    """Picks spread like the answers (no option over-picked): every wrong pick a distractor."""
    replies = [_mc(i, "ABCD"[(i + (i % 3 == 0)) % 4], i % 4, i % 3 != 0) for i in range(90)]
    assert CHOICE is not None
    types = {lab.type for lab in CHOICE.classify(replies) if lab}
    assert types == {"distractor"}


# -- code --------------------------------------------------------------------------------------

_PROMPT = "def add(a, b):\n"
_TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("    return a + b\n", None),
        ("    return a - b\n", "wrong_answer"),
        ("    return a +\n", "syntax_error"),
        ("    return a + c\n", "exception:NameError"),
        ("    return {}[a]\n", "exception:KeyError"),
        ("    while True:\n        pass\n", "timeout"),
        ("    import os\n    os._exit(0)\n", "tampering"),
        ("", "no_code"),
    ],
)
def test_code_categories_from_real_runs(completion: str, expected: str | None) -> None:
    sample = Sample(id="add", input=_PROMPT, fields={"test": _TEST, "entry_point": "add"})
    sc = _score({"name": "code_tests", "args": {"timeout_s": 1.0}}, sample, completion)
    details = {
        "code_tests": {
            "explanation": sc.explanation,
            "metadata": sc.metadata,
            "tampering": list(sc.tampering),
        }
    }
    reply = ScoredReply(
        sample_id="add",
        passed=sc.values["pass"] == 1.0,
        primary="pass",
        response=completion,
        answer=sc.answer,
        details=details,
    )
    assert CODE is not None
    [label] = CODE.classify([reply])
    assert (label.type if label else None) == expected, (sc.explanation, sc.metadata)
    if expected == "wrong_answer":
        assert "assert candidate(1, 2) == 3" in label.detail  # type: ignore[union-attr]


# -- IFEval -------------------------------------------------------------------------------------


def test_ifeval_first_failed_instruction_and_all_in_the_detail() -> None:
    ids = ["punctuation:no_comma", "change_case:english_lowercase", "startend:quotation"]
    sample = Sample(
        id="p",
        input="Write without commas, in lowercase, in quotes.",
        fields={"instruction_id_list": ids, "kwargs": [{}, {}, {}]},
    )
    text = '"Hello, World"'  # a comma and capitals; quoted
    sc = _score("ifeval", sample, text)
    reply = ScoredReply(
        sample_id="p",
        passed=sc.values["prompt_strict"] == 1.0,
        primary="prompt_strict",
        response=text,
        details={"ifeval": {"metadata": sc.metadata}},
    )
    assert IFEVAL is not None
    [label] = IFEVAL.classify([reply])
    assert label is not None and label.type == "instruction:punctuation:no_comma"
    assert label.detail == (
        "not followed: punctuation:no_comma, change_case:english_lowercase (2 of 3 instructions)"
    )
