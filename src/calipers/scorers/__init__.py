"""Scorers: async ``(sample, output) -> Score`` callables built by registered factories
(entry point group ``calipers.scorers``: each built-in is loaded on first use by name).

The names below that live in scorer modules (``JudgeClient``, ``detect_refusal``,
``sentence_model``, ``extract_strict``, ...) load on first use (``calipers._util.lazy``):
importing a scorer module registers its scorers, which ``build_scorer`` otherwise does only
for the ones a run names.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports
from calipers.scorers._base import ScoreFn, Scorer, ScorerSpec, build_scorer, list_scorers, scorer

if TYPE_CHECKING:
    from calipers.scorers._agent import grade_episode, procedure_violations
    from calipers.scorers._contradiction import (
        PlantedConversation,
        checkable_answer,
        conversation_turns,
        judge_contradiction,
        planted_conversations,
        planted_transcript,
    )
    from calipers.scorers._error_rules import (
        ErrorRule,
        error_rule,
        error_rules,
        exception_name,
        register_error_rule,
    )
    from calipers.scorers._ifeval import langdetect_available
    from calipers.scorers._judge import (
        DEFAULT_PAIRWISE_RUBRIC,
        JudgeClient,
        pairwise_judge,
        render_block,
    )
    from calipers.scorers._numeric import extract_strict, format_number
    from calipers.scorers._rag import detect_abstention
    from calipers.scorers._rag_judge import extract_claims, passage_texts, verify_claims
    from calipers.scorers._rag_text import alias_in, content_tokens, matching_alias, supported_by
    from calipers.scorers._refusal import DEFAULT_REFUSAL_PATTERNS, detect_refusal
    from calipers.scorers._reply import ScoredReply
    from calipers.scorers._similarity import (
        ENCODE_LOCK,
        ThresholdCalibration,
        calibrate_threshold,
        resolve_backend,
        sentence_model,
    )
    from calipers.scorers._steps import Step, check_steps

__all__ = [
    "DEFAULT_PAIRWISE_RUBRIC",
    "DEFAULT_REFUSAL_PATTERNS",
    "ENCODE_LOCK",
    "ErrorRule",
    "JudgeClient",
    "PlantedConversation",
    "ScoreFn",
    "ScoredReply",
    "Scorer",
    "ScorerSpec",
    "Step",
    "ThresholdCalibration",
    "alias_in",
    "build_scorer",
    "calibrate_threshold",
    "check_steps",
    "checkable_answer",
    "content_tokens",
    "conversation_turns",
    "detect_abstention",
    "detect_refusal",
    "error_rule",
    "error_rules",
    "exception_name",
    "extract_claims",
    "extract_strict",
    "format_number",
    "grade_episode",
    "judge_contradiction",
    "langdetect_available",
    "list_scorers",
    "matching_alias",
    "pairwise_judge",
    "passage_texts",
    "planted_conversations",
    "planted_transcript",
    "procedure_violations",
    "register_error_rule",
    "render_block",
    "resolve_backend",
    "scorer",
    "sentence_model",
    "supported_by",
    "verify_claims",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DEFAULT_PAIRWISE_RUBRIC": "_judge",
        "DEFAULT_REFUSAL_PATTERNS": "_refusal",
        "ENCODE_LOCK": "_similarity",
        "ErrorRule": "_error_rules",
        "error_rule": "_error_rules",
        "error_rules": "_error_rules",
        "exception_name": "_error_rules",
        "register_error_rule": "_error_rules",
        "ScoredReply": "_reply",
        "Step": "_steps",
        "check_steps": "_steps",
        "JudgeClient": "_judge",
        "render_block": "_judge",
        "PlantedConversation": "_contradiction",
        "checkable_answer": "_contradiction",
        "conversation_turns": "_contradiction",
        "judge_contradiction": "_contradiction",
        "planted_conversations": "_contradiction",
        "planted_transcript": "_contradiction",
        "ThresholdCalibration": "_similarity",
        "alias_in": "_rag_text",
        "matching_alias": "_rag_text",
        "content_tokens": "_rag_text",
        "supported_by": "_rag_text",
        "detect_abstention": "_rag",
        "extract_claims": "_rag_judge",
        "passage_texts": "_rag_judge",
        "verify_claims": "_rag_judge",
        "calibrate_threshold": "_similarity",
        "detect_refusal": "_refusal",
        "extract_strict": "_numeric",
        "format_number": "_numeric",
        "grade_episode": "_agent",
        "procedure_violations": "_agent",
        "langdetect_available": "_ifeval",
        "pairwise_judge": "_judge",
        "resolve_backend": "_similarity",
        "sentence_model": "_similarity",
    },
)
