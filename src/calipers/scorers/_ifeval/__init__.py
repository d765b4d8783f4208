"""IFEval's verifiable instructions: one checker per instruction id, split by family
(``_length``, ``_format``, ``_keywords``, ``_case``, ``_language``), strict and loose
evaluation (``_evaluate``) and the ``ifeval`` scorer (``_scorer``). How words, sentences and
paragraphs are counted is in ``_text``."""

from calipers.scorers._ifeval._base import CHECKERS, Args, Checker, Detector, compare
from calipers.scorers._ifeval._evaluate import (
    InstructionResult,
    evaluate,
    follows,
    loose_variants,
)
from calipers.scorers._ifeval._language import (
    DETECTORS,
    HEURISTIC_LANGUAGES,
    heuristic_language,
    langdetect_available,
    make_detector,
)
from calipers.scorers._ifeval._scorer import ifeval, instructions_of

__all__ = [
    "CHECKERS",
    "DETECTORS",
    "HEURISTIC_LANGUAGES",
    "Args",
    "Checker",
    "Detector",
    "InstructionResult",
    "compare",
    "evaluate",
    "follows",
    "heuristic_language",
    "ifeval",
    "instructions_of",
    "langdetect_available",
    "loose_variants",
    "make_detector",
]
