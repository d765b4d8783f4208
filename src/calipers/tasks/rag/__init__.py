"""RAG tasks: items with passages, answer aliases or "unanswerable", and the arms that degrade
their context (noise, missing gold, position, order, context fill, real retrievers).

The item layout and :class:`RagArm` load with the package (``RunConfig`` holds an arm); the
arms, retrievers, file readers and validity checks load on first use
(``calipers._util.lazy``), so ``calipers run --help`` imports no numpy or BM25."""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports
from calipers.tasks.rag._arm import DistractorType, PromptBudget, RagArm
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

if TYPE_CHECKING:
    from calipers.tasks.rag._apply import apply_rag_arm, is_rag_task
    from calipers.tasks.rag._files import RagFields, rag_samples_from_rows, read_rag_file
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RagFields": "_files",
        "Violation": "_validity",
        "apply_rag_arm": "_apply",
        "find_violations": "_validity",
        "is_rag_task": "_apply",
        "rag_samples_from_rows": "_files",
        "read_rag_file": "_files",
    },
)
