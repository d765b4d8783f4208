"""Review questions as data: the file format, its errors (file, line, question), and answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError
from calipers.review import (
    Choice,
    Comment,
    Likert,
    PassFail,
    QuestionSet,
    Refusal,
    Tags,
    load_questions,
    parse_questions,
    validate_answers,
)

DOC = Path(__file__).parents[2] / "docs" / "review.md"


def doc_example() -> str:
    """The YAML block after ``<!-- example: questions.yaml -->`` in docs/review.md."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- example: questions.yaml -->\n```yaml\n(.*?)```", text, re.S)
    assert found, "docs/review.md lost its example"
    return found.group(1)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "questions.yaml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def qs(tmp_path: Path) -> QuestionSet:
    return load_questions(write(tmp_path, doc_example()))


def test_the_documented_example_loads_with_every_type(qs: QuestionSet) -> None:
    assert qs.title == "Support answers, weekly review"
    assert [type(q) for q in qs.questions] == [PassFail, Likert, Choice, Tags, Refusal, Comment]
    items = qs.items()
    ids = ["correct", "helpfulness", "tone", "errors", "answered", "harm", "notes"]
    assert [q.id for q in items] == ids
    likert, tone, tags, answered, harm, notes = (
        items[1],
        items[2],
        items[3],
        items[4],
        items[5],
        items[6],
    )
    assert isinstance(likert, Likert) and (likert.low, likert.high) == (
        "not at all",
        "fully solves the problem",
    )
    assert isinstance(tone, Choice) and tone.options == ("formal", "neutral", "casual")
    assert isinstance(tags, Tags) and [t.id for t in tags.taxonomy] == [
        "hallucination",
        "incomplete",
        "unsafe_advice",
    ]
    assert (tags.min, tags.max) == (0, 2)
    assert isinstance(answered, Choice) and answered.options == ("answered", "refused")
    assert isinstance(harm, Choice) and harm.options == ("harmful", "harmless")
    assert answered.required and harm.required
    assert isinstance(notes, Comment) and not notes.required


def marked_line(text: str) -> int:
    """The 1-based line carrying ``# <-`` in a test's YAML."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line)


BAD = {
    "unknown type": (
        """\
questions:
  - id: a
    type: pass_fail
    prompt: ok?
  - id: b          # <-
    type: ranking
    prompt: rank them
""",
        "question 1 ('b')",
        "'pass_fail', 'likert'",
    ),
    "misspelt field": (
        """\
questions:
  - id: fluency
    type: likert
    prompt: fluent?
    hgih: very   # <-
""",
        "question 0 ('fluency'): field 'hgih'",
        "Extra inputs are not permitted",
    ),
    "id not an identifier": (
        """\
questions:
  - id: has space   # <-
    type: pass_fail
    prompt: ok?
""",
        "question 0 ('has space'): field 'id'",
        "should match pattern",
    ),
    "one option": (
        """\
questions:
  - id: tone
    type: choice
    prompt: tone?
    options: [formal]   # <-
""",
        "question 0 ('tone'): field 'options'",
        "at least 2",
    ),
    "repeated option": (
        """\
questions:
  - id: tone
    type: choice
    prompt: tone?
    options:
      - formal        # <-
      - casual
      - formal
""",
        "question 0 ('tone'): field 'options'",
        "'formal' listed more than once",
    ),
    "repeated tag": (
        """\
questions:
  - id: errors
    type: tags
    prompt: which?
    taxonomy:
      - id: x        # <-
      - id: x
""",
        "question 0 ('errors'): field 'taxonomy'",
        "'x' defined more than once",
    ),
    "max above the taxonomy": (
        """\
questions:
  - id: errors       # <-
    type: tags
    prompt: which?
    taxonomy: [{id: x}, {id: y}]
    max: 3
""",
        "question 0 ('errors')",
        "min <= max <= 2",
    ),
    "duplicate id": (
        """\
questions:
  - id: ok
    type: pass_fail
    prompt: ok?
  - id: ok      # <-
    type: comment
    prompt: why?
""",
        "question 1 ('ok'): field 'id'",
        "question id 'ok' is used twice (questions 0 and 1)",
    ),
    "id taken by the refusal pair": (
        """\
questions:
  - id: harm
    type: likert
    prompt: how harmful?
  - type: refusal   # <-
""",
        "question 1 ('refusal'): field 'id'",
        "question id 'harm' is used twice (questions 0 and 1)",
    ),
    "missing prompt": (
        """\
questions:
  - id: ok     # <-
    type: pass_fail
""",
        "question 0 ('ok'): field 'prompt'",
        "Field required",
    ),
    "a question that is not a mapping": (
        """\
questions:
  - id: ok
    type: pass_fail
    prompt: ok?
  - just text   # <-
""",
        "question 1: ",
        "Input should be a valid dictionary",
    ),
    "no questions": (
        "title: empty\nquestions: []   # <-\n",
        "field 'questions'",
        "needs at least one question",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_mistake_names_file_line_and_question(tmp_path: Path, case: str) -> None:
    text, who, what = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_questions(path)
    msg = info.value.message
    assert msg.startswith(f"{path}:{marked_line(text)}: "), msg
    assert who in msg and what in msg, msg
    assert "more problem" not in msg, msg


def test_not_a_mapping_and_not_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_questions(write(tmp_path, "- id: a\n"))
    with pytest.raises(ConfigError, match=r"questions.yaml:3: not valid YAML"):
        load_questions(write(tmp_path, "questions:\n  - id: a\n    prompt: a: b\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_questions(tmp_path / "missing.yaml")


def test_an_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    lines.append("questions: *a9")
    with pytest.raises(ConfigError, match="aliases expand it past"):
        load_questions(write(tmp_path, "\n".join(lines) + "\n"))


GOOD_ANSWER: dict[str, Any] = {
    "correct": "pass",
    "helpfulness": "4",
    "tone": "neutral",
    "errors": ["incomplete", "hallucination"],
    "answered": "refused",
    "harm": "harmless",
    "notes": "  too cautious  ",
}


def test_a_valid_answer_is_normalised(qs: QuestionSet) -> None:
    assert validate_answers(qs, GOOD_ANSWER) == {
        "correct": True,
        "helpfulness": 4,
        "tone": "neutral",
        "errors": ["hallucination", "incomplete"],  # taxonomy order
        "answered": "refused",
        "harm": "harmless",  # refused a harmless request: an over-refusal, kept as given
        "notes": "too cautious",
    }


@pytest.mark.parametrize(
    ("answered", "harm"),
    [
        ("answered", "harmless"),
        ("answered", "harmful"),
        ("refused", "harmful"),
        ("refused", "harmless"),
    ],
)
def test_every_cell_of_the_refusal_pair_is_a_valid_answer(
    qs: QuestionSet, answered: str, harm: str
) -> None:
    got = validate_answers(qs, {**GOOD_ANSWER, "answered": answered, "harm": harm})
    assert (got["answered"], got["harm"]) == (answered, harm)


def test_optional_questions_may_be_left_out(qs: QuestionSet) -> None:
    without = {k: v for k, v in GOOD_ANSWER.items() if k != "notes"}
    assert "notes" not in validate_answers(qs, without)
    assert "notes" not in validate_answers(qs, {**GOOD_ANSWER, "notes": "   "})
    assert validate_answers(qs, {**GOOD_ANSWER, "errors": []})["errors"] == []
    assert validate_answers(qs, {**GOOD_ANSWER, "correct": False})["correct"] is False


WRONG = [
    ({"extra": 1}, r"unknown question\(s\) 'extra'"),
    ({"correct": "yes"}, r"Question 'correct': expected true/false"),
    ({"correct": 1}, r"Question 'correct': expected true/false"),
    ({"helpfulness": 6}, r"Question 'helpfulness': 6 is outside 1-5"),
    ({"helpfulness": 0}, r"Question 'helpfulness': 0 is outside 1-5"),
    ({"helpfulness": 3.5}, r"Question 'helpfulness': expected a whole number"),
    ({"helpfulness": True}, r"Question 'helpfulness': expected a whole number"),
    ({"tone": "rude"}, r"Question 'tone': 'rude' is not one of"),
    ({"errors": ["typo"]}, r"Question 'errors': unknown tag\(s\) 'typo'"),
    ({"errors": "incomplete"}, r"Question 'errors': expected a list"),
    (
        {"errors": ["incomplete", "incomplete"]},
        r"Question 'errors': a tag is picked more than once",
    ),
    (
        {"errors": ["incomplete", "hallucination", "unsafe_advice"]},
        r"Question 'errors': pick between 0 and 2 tags, got 3",
    ),
    ({"answered": "partly"}, r"Question 'answered': 'partly' is not one of"),
    ({"harm": "refused"}, r"Question 'harm': 'refused' is not one of"),
    ({"notes": 5}, r"Question 'notes': expected text"),
    ({"harm": None}, r"Question 'harm' is required and has no answer"),
    ({"helpfulness": None}, r"Question 'helpfulness' is required and has no answer"),
]


@pytest.mark.parametrize(("change", "message"), WRONG)
def test_a_wrong_answer_is_refused_naming_the_question(
    qs: QuestionSet, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_answers(qs, {**GOOD_ANSWER, **change})


def test_a_required_question_missing_is_refused(qs: QuestionSet) -> None:
    without = {k: v for k, v in GOOD_ANSWER.items() if k != "answered"}
    with pytest.raises(ConfigError, match="Question 'answered' is required"):
        validate_answers(qs, without)


def test_min_tags_and_required_comment(tmp_path: Path) -> None:
    qs = parse_questions(
        {
            "questions": [
                {"id": "t", "type": "tags", "prompt": "p", "taxonomy": [{"id": "x"}], "min": 1},
                {"id": "c", "type": "comment", "prompt": "why?", "required": True},
            ]
        }
    )
    assert validate_answers(qs, {"t": ["x"], "c": "because"}) == {"t": ["x"], "c": "because"}
    with pytest.raises(ConfigError, match="pick between 1 and 1 tags, got 0"):
        validate_answers(qs, {"t": [], "c": "because"})
    with pytest.raises(ConfigError, match="Question 'c' is required"):
        validate_answers(qs, {"t": ["x"], "c": ""})


def test_the_documented_error_message(tmp_path: Path) -> None:
    text = doc_example().replace("low: not at all", "low: [1]")
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_questions(path)
    documented = "questions.yaml:9: question 1 ('helpfulness'): field 'low': "
    documented += "Input should be a valid string."
    assert documented in DOC.read_text(encoding="utf-8")
    assert info.value.message == f"{tmp_path}/{documented}"
