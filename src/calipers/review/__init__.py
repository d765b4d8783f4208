"""Human review: questions as data, rater answers checked against them.

See ``docs/review.md``. More of review (assignments, storage, the rater page, agreement) is
coming; this package is an application (layer 5) that calls the library API.
"""

from calipers.review._campaigns import (
    KPlan,
    check_kind,
    k_for_width,
    load_controls,
    mix_controls,
    rate_half_width,
    store_campaign,
)
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
from calipers.review._sources import (
    FILE_FIELDS,
    SourceItems,
    items_from_file,
    items_from_run,
    items_from_runs,
    items_from_suite,
    items_from_traffic,
)

__all__ = [
    "FILE_FIELDS",
    "LIKERT_MAX",
    "LIKERT_MIN",
    "Choice",
    "Comment",
    "KPlan",
    "Likert",
    "PassFail",
    "Question",
    "QuestionSet",
    "Refusal",
    "SourceItems",
    "Tag",
    "Tags",
    "check_kind",
    "items_from_file",
    "items_from_run",
    "items_from_runs",
    "items_from_suite",
    "items_from_traffic",
    "k_for_width",
    "load_controls",
    "load_questions",
    "mix_controls",
    "parse_questions",
    "rate_half_width",
    "store_campaign",
    "validate_answers",
]
