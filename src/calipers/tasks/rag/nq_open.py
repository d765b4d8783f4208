"""``nq_open_oracle``: Natural Questions (open) with the gold passage, from Lost in the Middle
(Liu et al., TACL 2024), file ``qa_data/nq-open-oracle.jsonl.gz``: 2,655 questions, each with
its answer aliases and the one Wikipedia passage that answers it (``isgold``, ``hasanswer``).

An item shows that gold passage (``kind="gold"``); the arms of ``calipers rag stress`` add
distractors (passages of other questions), drop the gold, move it, or fill the window. Item
``i`` (the file's row ``i``, from 0) has id ``str(i)``; its passage has id ``"nq<i>"``, so ids
stay unique across the pool the arms draw from. The answer is a short phrase (``max_tokens``
32, greedy), scored by ``rag_outcome`` (an alias in the reply, SQuAD-normalised).
``metadata["alias_in_gold"]`` says whether calipers' alias matching finds an answer alias in
the gold passage: on 24 of the 2,655 items it does not (``Eminem's``, ``narrator—Orwell``:
the normalisation keeps a possessive or a dash-joined word as one token), so on those a
judge-free "supported" check cannot credit the gold passage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.errors import DataError
from calipers.scorers import alias_in, build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.rag._item import RAG_INSTRUCTION, RAG_TEMPLATE, Passage, rag_sample
from calipers.tasks.rag._litm import HOW, LICENSE, SOURCE, litm_items
from calipers.types import GenerateParams, Sample

__all__ = ["FILE", "NAME", "nq_open_oracle_task", "read_nq_open_oracle", "register"]

NAME = "nq_open_oracle"
FILE = "qa_data/nq-open-oracle.jsonl.gz"


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _sample(i: int, row: dict[str, Any], where: str) -> Sample:
    question, answers, ctxs = row.get("question"), _strings(row.get("answers")), row.get("ctxs")
    if not isinstance(question, str) or answers is None or not isinstance(ctxs, list):
        raise DataError(
            f"{NAME}: {where}: expected 'question' (text), 'answers' (a list of text) and "
            "'ctxs' (a list of passages).",
            hint=HOW,
        )
    gold = [c for c in ctxs if isinstance(c, dict) and c.get("isgold")]
    if len(gold) != 1 or not isinstance(gold[0].get("text"), str):
        raise DataError(
            f"{NAME}: {where}: expected exactly one gold passage (isgold) with a text, found "
            f"{len(gold)}; is this the oracle file?",
            hint=HOW,
        )
    passage = Passage(
        id=f"nq{i}",
        title=str(gold[0].get("title") or ""),
        text=gold[0]["text"],
        gold=True,
        kind="gold",
    )
    return rag_sample(
        str(i), question, [passage], answers, alias_in_gold=alias_in(passage.text, answers)
    )


def read_nq_open_oracle(data_dir: Path | str | None) -> list[Sample]:
    """Every item of the oracle file, in file order (parsed once per file version)."""
    return litm_items(FILE, data_dir, _sample)


def _load(ctx: LoadContext) -> list[Sample]:
    return read_nq_open_oracle(ctx.data_dir)


def nq_open_oracle_task() -> Task:
    return Task(
        name=NAME,
        version="1",
        description="NQ-open with its gold Wikipedia passage (Lost in the Middle's oracle "
        "setting): 2,655 questions answered with a short phrase from the passage.",
        kind="generate",
        load=_load,
        scorers=(build_scorer("rag_outcome"),),
        prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
        params=GenerateParams(max_tokens=32, temperature=0.0),
        source=f"{SOURCE} ({FILE})",
        license=LICENSE,
        tags=("rag",),
    )


def register() -> None:
    """Register nq_open_oracle (idempotent)."""
    register_task(NAME, nq_open_oracle_task)
