"""Human review: questions as data, rater answers checked against them.

See ``docs/review.md``. This package is an application (layer 5) that calls the library API:
the store keeps campaigns, assignments and judgments; the statistics are in
:mod:`calipers.stats`.
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
    final_decisions,
    import_labels,
    imported_judgments,
    pairwise_item,
    parse_assignments,
    preference_answer,
    read_table,
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
from calipers.review._sources import (
    FILE_FIELDS,
    SourceItems,
    items_from_file,
    items_from_run,
    items_from_runs,
    items_from_suite,
    items_from_traffic,
)
from calipers.review._tokens import IssuedToken, check_token, issue_token, token_key

__all__ = [
    "FILE_FIELDS",
    "IMPORTED_HASH_PREFIX",
    "LIKERT_MAX",
    "LIKERT_MIN",
    "Choice",
    "Comment",
    "FinalLabel",
    "ImportSummary",
    "IssuedToken",
    "KPlan",
    "Likert",
    "PairwiseOutcome",
    "PassFail",
    "Preference",
    "Provenance",
    "Question",
    "QuestionSet",
    "Refusal",
    "SourceItems",
    "Tag",
    "Tags",
    "check_kind",
    "check_token",
    "disagreements",
    "final_decisions",
    "final_labels",
    "import_labels",
    "imported_judgments",
    "issue_token",
    "items_from_file",
    "items_from_run",
    "items_from_runs",
    "items_from_suite",
    "items_from_traffic",
    "k_for_width",
    "label_key",
    "load_controls",
    "load_questions",
    "mix_controls",
    "pairwise_item",
    "pairwise_outcome",
    "parse_assignments",
    "parse_questions",
    "preference_answer",
    "rate_half_width",
    "read_table",
    "store_campaign",
    "token_key",
    "validate_answers",
]

# Results and exports (``calipers review report`` / ``export``).
from calipers.review._export import (
    EXPORT_FORMATS,
    ExportFormat,
    export_argilla,
    export_csv,
    export_jsonl,
    export_label_studio,
    export_suite,
    label_studio_config,
    suite_records,
)
from calipers.review._report import review_report
from calipers.review._report_model import (
    FinalLabelRow,
    ModelRating,
    PairRate,
    PairwiseReport,
    PoolAgreement,
    QuestionReport,
    Rate,
    RaterQC,
    ReviewReport,
)
from calipers.review._report_render import Section
from calipers.review._report_render import render_html as render_report_html
from calipers.review._report_render import render_markdown as render_report_markdown
from calipers.review._report_render import sections as report_sections

__all__ += [
    "EXPORT_FORMATS",
    "ExportFormat",
    "FinalLabelRow",
    "ModelRating",
    "PairRate",
    "PairwiseReport",
    "PoolAgreement",
    "QuestionReport",
    "Rate",
    "RaterQC",
    "ReviewReport",
    "Section",
    "export_argilla",
    "export_csv",
    "export_jsonl",
    "export_label_studio",
    "export_suite",
    "label_studio_config",
    "render_report_html",
    "render_report_markdown",
    "report_sections",
    "review_report",
    "suite_records",
]
