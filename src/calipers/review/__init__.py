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

# Results and exports (``calipers review report`` / ``export``).
from calipers.review._export import (
    EXPORT_FORMATS,
    ExportFormat,
    export_argilla,
    export_csv,
    export_jsonl,
    export_label_studio,
    export_suite,
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
    "render_report_html",
    "render_report_markdown",
    "report_sections",
    "review_report",
    "suite_records",
]
