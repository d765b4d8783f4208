"""Human review: questions as data, rater answers checked against them.

See ``docs/review.md``. This package is an application (layer 5) that calls the library API:
the store keeps campaigns, assignments and judgments; the statistics are in
:mod:`calipers.stats`.
"""

from calipers.review._final import (
    FinalLabel,
    Provenance,
    disagreements,
    final_labels,
    label_key,
)
from calipers.review._import import (
    IMPORTED_HASH_PREFIX,
    ImportSummary,
    campaign_for_import,
    final_decisions,
    import_labels,
    imported_judgments,
    pairwise_item,
    parse_assignments,
    preference_answer,
    read_table,
    single_items,
)
from calipers.review._questions import (
    LIKERT_MAX,
    LIKERT_MIN,
    Choice,
    Comment,
    Likert,
    PairwiseOutcome,
    PassFail,
    Preference,
    Question,
    QuestionSet,
    Refusal,
    Tag,
    Tags,
    load_questions,
    pairwise_outcome,
    parse_questions,
    validate_answers,
)
from calipers.review._tokens import IssuedToken, check_token, issue_token, token_key

__all__ = [
    "IMPORTED_HASH_PREFIX",
    "LIKERT_MAX",
    "LIKERT_MIN",
    "Choice",
    "Comment",
    "FinalLabel",
    "ImportSummary",
    "IssuedToken",
    "Likert",
    "PairwiseOutcome",
    "PassFail",
    "Preference",
    "Provenance",
    "Question",
    "QuestionSet",
    "Refusal",
    "Tag",
    "Tags",
    "campaign_for_import",
    "check_token",
    "disagreements",
    "final_decisions",
    "final_labels",
    "import_labels",
    "imported_judgments",
    "issue_token",
    "label_key",
    "load_questions",
    "pairwise_item",
    "pairwise_outcome",
    "parse_assignments",
    "parse_questions",
    "preference_answer",
    "read_table",
    "single_items",
    "token_key",
    "validate_answers",
]
