"""Scorers: async ``(sample, output) -> Score`` callables built by registered factories.

``extract_strict``, ``format_number`` and ``langdetect_available`` load on first use
(``calipers._util.lazy``): their modules register scorers when imported, which
``build_scorer`` otherwise does when it needs them.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports
from calipers.scorers import _checks, _judge, _refusal, _similarity  # noqa: F401 - registers
from calipers.scorers._base import ScoreFn, Scorer, ScorerSpec, build_scorer, list_scorers, scorer
from calipers.scorers._judge import DEFAULT_PAIRWISE_RUBRIC, JudgeClient, pairwise_judge
from calipers.scorers._refusal import DEFAULT_REFUSAL_PATTERNS, detect_refusal
from calipers.scorers._similarity import (
    ENCODE_LOCK,
    ThresholdCalibration,
    calibrate_threshold,
    resolve_backend,
    sentence_model,
)

if TYPE_CHECKING:
    from calipers.scorers._ifeval import langdetect_available
    from calipers.scorers._numeric import extract_strict, format_number

__all__ = [
    "DEFAULT_PAIRWISE_RUBRIC",
    "DEFAULT_REFUSAL_PATTERNS",
    "ENCODE_LOCK",
    "JudgeClient",
    "ScoreFn",
    "Scorer",
    "ScorerSpec",
    "ThresholdCalibration",
    "build_scorer",
    "calibrate_threshold",
    "detect_refusal",
    "extract_strict",
    "format_number",
    "langdetect_available",
    "list_scorers",
    "pairwise_judge",
    "resolve_backend",
    "scorer",
    "sentence_model",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"extract_strict": "_numeric", "format_number": "_numeric", "langdetect_available": "_ifeval"},
)
