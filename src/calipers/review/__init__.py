"""Human review: questions as data, rater answers checked against them.

See ``docs/review.md``. More of review (assignments, storage, the rater page, agreement) is
coming; this package is an application (layer 5) that calls the library API.
"""

from calipers.review._questions import (
    LIKERT_MAX,
    LIKERT_MIN,
    Choice,
    Comment,
    Likert,
    PassFail,
    Question,
    QuestionSet,
    Refusal,
    Tag,
    Tags,
    load_questions,
    parse_questions,
    validate_answers,
)

__all__ = [
    "LIKERT_MAX",
    "LIKERT_MIN",
    "Choice",
    "Comment",
    "Likert",
    "PassFail",
    "Question",
    "QuestionSet",
    "Refusal",
    "Tag",
    "Tags",
    "load_questions",
    "parse_questions",
    "validate_answers",
]
