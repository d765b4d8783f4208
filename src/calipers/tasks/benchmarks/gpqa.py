"""GPQA (Rein et al., 2023): graduate-level, "Google-proof" four-option questions in biology,
physics and chemistry, from the gated Hugging Face dataset ``Idavidrein/gpqa`` or the
original release's CSV files.

Tasks: ``gpqa`` (the 198-item diamond set, what most reports cite), ``gpqa_main`` (448) and
``gpqa_extended`` (546). The files list the correct answer first, so the four options of each
item are shuffled by a draw seeded with ``(run seed, record id)``: the run's ``--seed``
(recorded in the methodology card) fixes the order, and the target moves with its option.

Formulations (``--formulation``), all 0-shot, with lm-evaluation-harness' ``gpqa_*_zeroshot``
prompt ``What is the correct answer to this question: {question}\\nChoices:\\n(A) ...\\n(B) ...
\\nAnswer:``:

- ``letter`` (default): the continuations ``" (A)"`` ... ``" (D)"`` scored by log-likelihood.
- ``generate``: the same prompt answered by generation; the letter is read by ``choice_letter``.
- ``cloze``: each option text scored by log-likelihood.

``category`` is the "High-level domain" (Biology, Chemistry, Physics); the subdomain is in
``metadata``. The dataset is gated: accept its terms on the hub and ``huggingface-cli login``,
or use the CSV files (the zip's password is in the dataset card) with ``--data-dir``.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from typing import Any

from calipers._util.hashing import json_hash
from calipers.datasets import DATA_SOURCE_KEY, benchmark_file, read_records
from calipers.errors import ConfigError, DataError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import field, hub_rows, use_hub
from calipers.types import GenerateParams, Sample

__all__ = [
    "FORMULATIONS",
    "SUBSETS",
    "gpqa_task",
    "load_gpqa",
    "preprocess",
    "register",
    "shuffle_order",
]

NAME = "gpqa"
DATASET = "Idavidrein/gpqa"
FORMULATIONS = ("letter", "generate", "cloze")
SUBSETS = {"diamond": 198, "main": 448, "extended": 546}
"""Subset -> item count (the hub configs are ``gpqa_<subset>``)."""
_LETTERS = "ABCD"
_HOW = (
    "Accept the terms at https://huggingface.co/datasets/Idavidrein/gpqa and run "
    "`huggingface-cli login`; or unzip the original release (github.com/idavidrein/gpqa, "
    "dataset.zip, password in the README) and put gpqa_<subset>.csv in <data-dir>/gpqa/; see "
    "docs/benchmarks.md."
)
_Q = "What is the correct answer to this question: {input}\nChoices:\n{options}\nAnswer:"
PROMPTS = {
    "letter": PromptTemplate(
        template=_Q, answer=" ({target_letter})", labels="(A)", continuation=" ({choice})"
    ),
    "generate": PromptTemplate(template=_Q, answer=" ({target_letter})", labels="(A)"),
    "cloze": PromptTemplate(template=_Q, answer=" {target}", labels="(A)"),
}


def preprocess(text: str) -> str:
    """lm-eval's GPQA cleaning of option texts: strip, `` [title]`` -> ``. ``, other
    ``[...]`` removed, double spaces made single."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def shuffle_order(seed: int, record_id: str) -> list[int]:
    """``order[j]`` = the original option (0 = the correct answer) shown at position ``j``."""
    order = [0, 1, 2, 3]
    random.Random(json_hash(["gpqa", seed, record_id])).shuffle(order)
    return order


def _sample(
    row: dict[str, Any], where: str, seed: int, formulation: str, meta: dict[str, Any]
) -> Sample:
    keys = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")
    answers = [preprocess(str(field(NAME, row, k, where, _HOW))) for k in keys]
    rid = str(field(NAME, row, "Record ID", where, _HOW))
    order = shuffle_order(seed, rid)
    options = [answers[i] for i in order]
    target = order.index(0)
    fields = {"options": "\n".join(f"({_LETTERS[j]}) {o}" for j, o in enumerate(options))}
    meta = {**meta, "shuffle_seed": seed, "subdomain": str(row.get("Subdomain") or "")}
    choices: tuple[str, ...] = tuple(options)
    if formulation == "letter":
        choices, meta = tuple(_LETTERS), {**meta, "option_texts": options}
    return Sample(
        id=rid,
        input=str(field(NAME, row, "Question", where, _HOW)).strip(),
        target=target,
        choices=choices,
        category=str(field(NAME, row, "High-level domain", where, _HOW)).strip(),
        fields=fields,
        metadata=meta,
    )


@functools.lru_cache(maxsize=4)
def _hub(subset: str) -> tuple[tuple[dict[str, Any], ...], str]:
    rows = hub_rows(NAME, DATASET, f"gpqa_{subset}", "train", _HOW)
    return rows.rows, rows.source.uri


def load_gpqa(subset: str, formulation: str, ctx: LoadContext) -> list[Sample]:
    """The ``subset``'s items, options shuffled with ``ctx.seed``."""
    meta: dict[str, Any] = {}
    if use_hub(ctx.data_dir):
        rows, uri = _hub(subset)
        records = [(f"{DATASET} gpqa_{subset} row {i}", r) for i, r in enumerate(rows)]
        meta = {DATA_SOURCE_KEY: uri}
    else:
        path = benchmark_file(NAME, f"gpqa_{subset}.csv", ctx.data_dir, how_to_get=_HOW)
        try:
            records = [(f"{path}:{line}", r) for line, r in read_records(path)]
        except ConfigError as e:
            raise DataError(f"{NAME}: {e.message}", hint=_HOW) from None
    return [_sample(r, where, ctx.seed, formulation, meta) for where, r in records]


def _loader(subset: str, formulation: str) -> Callable[[LoadContext], list[Sample]]:
    def load(ctx: LoadContext) -> list[Sample]:
        return load_gpqa(subset, formulation, ctx)

    return load


def gpqa_task(formulation: str = "letter", subset: str = "diamond") -> Task:
    if formulation not in FORMULATIONS:
        raise ConfigError(
            f"{NAME}: no formulation {formulation!r}.",
            hint=f"Use one of {', '.join(FORMULATIONS)}.",
        )
    generate = formulation == "generate"
    name = NAME if subset == "diamond" else f"{NAME}_{subset}"
    return Task(
        name=name,
        version="1",
        description=f"GPQA {subset}: {SUBSETS[subset]} graduate-level biology, physics and "
        "chemistry questions, 4 options shuffled by the run seed, 0-shot (gated dataset).",
        kind="generate" if generate else "multiple_choice",
        load=_loader(subset, formulation),
        scorers=(build_scorer("choice_letter" if generate else "loglikelihood_mc"),),
        prompt=PROMPTS[formulation],
        formulation=formulation,
        params=GenerateParams(max_tokens=32, temperature=0.0),
        source=f"{DATASET} gpqa_{subset} (Rein et al., 2023, arXiv:2311.12022); prompt of "
        "lm-evaluation-harness gpqa_*_zeroshot",
        license="CC-BY-4.0",
        tags=("knowledge", "science", "multiple_choice"),
    )


_SUBSET_TASKS = {s: functools.partial(gpqa_task, subset=s) for s in ("main", "extended")}


def register() -> None:
    """Register ``gpqa`` (diamond), ``gpqa_main`` and ``gpqa_extended`` (idempotent)."""
    register_task(NAME, gpqa_task, formulations=FORMULATIONS)
    for subset, factory in _SUBSET_TASKS.items():
        register_task(f"{NAME}_{subset}", factory, formulations=FORMULATIONS)
