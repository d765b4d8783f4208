"""``kv_retrieval``: pure retrieval at length, Lost in the Middle's key-value task (Liu et al.,
TACL 2024), file ``kv_retrieval_data/kv-retrieval-75_keys.jsonl.gz``: 500 items of 75 random
UUID key-value pairs each; given one key, answer its value.

Each pair is one passage, in the file's order: its text is the pair as Lost in the Middle's
JSON object writes it (``"<key>": "<value>"``), no title; the pair holding the asked key is the
gold passage, the 74 others are distractors (``kind="distractor"``). The question (``input``)
is the key itself, so a retriever searches by the key as the paper's model does. The prompt is
the paper's (``Extract the value corresponding to the specified key ...``, then ``Key:
"<key>"`` and ``Corresponding value:``) with two changes the passage contract needs: the pairs
are shown as numbered passages instead of one JSON object, and the instruction adds the
abstention the gold-dropped arm scores ("If the key is not among them, reply exactly: I don't
know."). The answer (the value, a UUID) is matched SQuAD-normalised by ``rag_outcome``.
Item ``i`` (row ``i`` from 0) has id ``str(i)``; pair ``j`` of it has passage id
``"kv<i>-<j>"``; ``metadata["gold_index"]`` is the gold pair's place in the file (0-74).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calipers.errors import DataError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.rag._item import Passage, rag_sample
from calipers.tasks.rag._litm import HOW, SOURCE, litm_items
from calipers.types import GenerateParams, Sample

__all__ = [
    "FILE",
    "KV_INSTRUCTION",
    "KV_TEMPLATE",
    "NAME",
    "kv_retrieval_task",
    "pair_text",
    "read_kv",
    "register",
]

NAME = "kv_retrieval"
FILE = "kv_retrieval_data/kv-retrieval-75_keys.jsonl.gz"
KV_INSTRUCTION = (
    "Extract the value corresponding to the specified key in the key-value pairs below. "
    "If the key is not among them, reply exactly: I don't know."
)
KV_TEMPLATE = 'Key-value pairs:\n\n{context}\n\nKey: "{input}"\nCorresponding value:'


def pair_text(key: str, value: str) -> str:
    """A pair as Lost in the Middle's JSON object writes it: ``"<key>": "<value>"``."""
    return f"{json.dumps(key)}: {json.dumps(value)}"


def _pairs(value: Any) -> list[tuple[str, str]] | None:
    if not isinstance(value, list) or not value:
        return None
    ok = all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    )
    return [(p[0], p[1]) for p in value] if ok else None


def _sample(i: int, row: dict[str, Any], where: str) -> Sample:
    pairs, key, value = _pairs(row.get("ordered_kv_records")), row.get("key"), row.get("value")
    if pairs is None or not isinstance(key, str) or not isinstance(value, str):
        raise DataError(
            f"{NAME}: {where}: expected 'ordered_kv_records' (a list of [key, value] text "
            "pairs), 'key' and 'value' (text).",
            hint=HOW,
        )
    gold = [j for j, (k, v) in enumerate(pairs) if k == key]
    if len(gold) != 1 or pairs[gold[0]][1] != value:
        raise DataError(
            f"{NAME}: {where}: the asked key must occur once among the pairs, with the "
            "item's value.",
            hint=HOW,
        )
    passages = [
        Passage(
            id=f"kv{i}-{j}",
            text=pair_text(k, v),
            gold=j == gold[0],
            kind="gold" if j == gold[0] else "distractor",
        )
        for j, (k, v) in enumerate(pairs)
    ]
    return rag_sample(str(i), key, passages, [value], gold_index=gold[0])


def read_kv(data_dir: Path | str | None) -> list[Sample]:
    """Every item of the 75-key file, in file order (parsed once per file version)."""
    return litm_items(FILE, data_dir, _sample)


def _load(ctx: LoadContext) -> list[Sample]:
    return read_kv(ctx.data_dir)


def kv_retrieval_task() -> Task:
    return Task(
        name=NAME,
        version="1",
        description="Key-value retrieval at length (Lost in the Middle): 500 items of 75 UUID "
        "pairs; answer the value of the asked key.",
        kind="generate",
        load=_load,
        scorers=(build_scorer("rag_outcome"),),
        prompt=PromptTemplate(instruction=KV_INSTRUCTION, template=KV_TEMPLATE),
        params=GenerateParams(max_tokens=64, temperature=0.0),
        source=f"{SOURCE} ({FILE})",
        license="MIT",
        tags=("rag",),
    )


def register() -> None:
    """Register kv_retrieval (idempotent)."""
    register_task(NAME, kv_retrieval_task)
