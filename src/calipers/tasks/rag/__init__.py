"""RAG tasks: items with passages, answer aliases or "unanswerable", and the arms that degrade
their context (noise, missing gold, position, order, context fill, real retrievers)."""

from calipers.tasks.rag._apply import apply_rag_arm, is_rag_task
from calipers.tasks.rag._arm import DistractorType, PromptBudget, RagArm
from calipers.tasks.rag._files import RagFields, rag_samples_from_rows, read_rag_file
from calipers.tasks.rag._item import (
    RAG_INSTRUCTION,
    RAG_TEMPLATE,
    Passage,
    PassageKind,
    answers_of,
    format_context,
    is_unanswerable,
    passages_of,
    rag_sample,
    with_passages,
)
from calipers.tasks.rag._validity import Violation, find_violations

__all__ = [
    "RAG_INSTRUCTION",
    "RAG_TEMPLATE",
    "DistractorType",
    "Passage",
    "PassageKind",
    "PromptBudget",
    "RagArm",
    "RagFields",
    "Violation",
    "answers_of",
    "apply_rag_arm",
    "find_violations",
    "format_context",
    "is_rag_task",
    "is_unanswerable",
    "passages_of",
    "rag_sample",
    "rag_samples_from_rows",
    "read_rag_file",
    "with_passages",
]
