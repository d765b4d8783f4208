"""IFEval (Zhou et al., 2023): 541 prompts with verifiable instructions, from the original
``input_data.jsonl``, or without a data directory from the Hugging Face hub (``google/IFEval``,
split ``train``: the same records; the hub fills absent instruction arguments with nulls, which
are dropped as here).

Each prompt carries 1-3 instructions ("answer in fewer than 100 words", "no commas", "wrap
the reply in JSON"...) that a program can check; the ``ifeval`` scorer checks them strictly
and loosely (see ``calipers.scorers._ifeval``). Per-sample metrics are ``prompt_strict``,
``prompt_loose`` (all instructions followed) and ``inst_strict``, ``inst_loose`` (the fraction
followed). IFEval's instruction-level accuracy is the micro average over all 834 instructions;
the task reports it as the derived metrics ``inst_level_strict`` / ``inst_level_loose``
(:func:`instruction_level`), with an interval clustered by prompt.

Generation allows 1,280 new tokens, as lm-evaluation-harness does: prompts ask for up to 1,200
words, and a cut-off reply fails length and ending instructions it might have followed.
``--max-tokens 384`` makes a small model's run several times faster at that cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from calipers.datasets import benchmark_file, read_records
from calipers.errors import DataError
from calipers.scorers import build_scorer, langdetect_available
from calipers.stats import clustered_mean, summarize
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import hub_rows, stamp, use_hub
from calipers.types import Estimate, GenerateParams, Sample

__all__ = [
    "IFEvalRecord",
    "by_instruction",
    "ifeval_task",
    "instruction_level",
    "load_ifeval",
    "register",
]

NAME = "ifeval"
_HOW = (
    "Copy instruction_following_eval/data/input_data.jsonl of google-research/"
    "google-research to <data-dir>/ifeval/input_data.jsonl (see docs/benchmarks.md)."
)


def _sample(line: int, row: Mapping[str, Any]) -> Sample:
    ids, kwargs = row.get("instruction_id_list"), row.get("kwargs")
    if (
        "key" not in row
        or not isinstance(row.get("prompt"), str)
        or not isinstance(ids, list)
        or not isinstance(kwargs, list)
        or len(ids) != len(kwargs)
        or not all(isinstance(k, dict) for k in kwargs)
    ):
        raise DataError(
            f"ifeval: input_data.jsonl:{line}: expected key, prompt, "
            "instruction_id_list and kwargs (one object per instruction).",
            hint=_HOW,
        )
    clean = [{k: v for k, v in kw.items() if v is not None} for kw in kwargs]
    return Sample(
        id=str(row["key"]),
        input=row["prompt"],
        fields={"instruction_id_list": list(ids), "kwargs": clean},
    )


def load_ifeval(ctx: LoadContext) -> list[Sample]:
    """The prompts in file order."""
    if use_hub(ctx.data_dir):
        rows = hub_rows(NAME, "google/IFEval", None, "train", _HOW)
        return stamp([_sample(i + 1, r) for i, r in enumerate(rows)], rows.source)
    path = benchmark_file(NAME, "input_data.jsonl", ctx.data_dir, how_to_get=_HOW)
    return [_sample(line, row) for line, row in read_records(path)]


def ifeval_task() -> Task:
    """``langdetect`` judges the response language when it is installed (as in the
    reference implementation), else the built-in heuristic; the scorer's spec records which."""
    detector = "langdetect" if langdetect_available() else "heuristic"
    return Task(
        name=NAME,
        version="2",  # 2: the reference's postscript rule (the marker anywhere)
        description="IFEval: verifiable instructions (length, format, keywords, case...) "
        "followed per prompt and per instruction, strict and loose.",
        kind="generate",
        load=load_ifeval,
        scorers=(build_scorer({"name": "ifeval", "args": {"language_detector": detector}}),),
        prompt=PromptTemplate(template="{input}"),
        derived=instruction_level,
        params=GenerateParams(max_tokens=1280, temperature=0.0),
        source="google-research/instruction_following_eval (Zhou et al., 2023)",
        license="Apache-2.0",
        tags=("instruction_following", "generate"),
    )


def register() -> None:
    """Register ``ifeval`` (idempotent)."""
    register_task(NAME, ifeval_task)


# ---- instruction-level accuracy from stored sample records ------------------------------


class IFEvalRecord(Protocol):
    """What :func:`instruction_level` reads from a stored sample record."""

    @property
    def sample_id(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def score_details(self) -> Mapping[str, Any] | None: ...


def _instructions(records: Sequence[IFEvalRecord]) -> list[tuple[str, str, bool, bool]]:
    """(prompt id, instruction id, strict, loose) for every instruction of every scored
    record; records without the scorer's per-instruction details are skipped."""
    out = []
    for r in records:
        meta = ((r.score_details or {}).get("ifeval") or {}).get("metadata") or {}
        if r.error is not None or "strict" not in meta:
            continue
        for iid, s, lo in zip(meta["instructions"], meta["strict"], meta["loose"], strict=True):
            out.append((r.sample_id, str(iid), bool(s), bool(lo)))
    return out


def instruction_level(
    records: Sequence[IFEvalRecord], confidence: float = 0.95
) -> dict[str, Estimate]:
    """IFEval's instruction-level accuracy: followed instructions / all instructions, over
    every prompt (a micro average), strict and loose.

    This is not the mean of the per-sample ``inst_*`` fractions, which weighs each prompt
    equally: with prompts of 1 and 3 instructions scoring 1/1 and 0/3 the micro average is
    1/4 and the mean of fractions 1/2. Instructions of one prompt share a response, so the
    interval is cluster-robust with the prompt as cluster (``clustered_mean``, method
    ``cluster-t``); ``n`` counts instructions.
    """
    rows = _instructions(records)
    clusters = [p for p, _i, _s, _l in rows]
    return {
        "inst_level_strict": clustered_mean(
            [float(s) for _p, _i, s, _l in rows], clusters, confidence
        ),
        "inst_level_loose": clustered_mean(
            [float(lo) for _p, _i, _s, lo in rows], clusters, confidence
        ),
    }


def by_instruction(
    records: Sequence[IFEvalRecord], confidence: float = 0.95
) -> dict[str, dict[str, Estimate]]:
    """Per instruction id: strict and loose accuracy. The interval is Wilson's, or
    cluster-t by prompt for an id some prompt uses twice (17 prompts ask, say, for at least 20
    and fewer than 26 sentences)."""
    rows: dict[str, list[tuple[str, bool, bool]]] = defaultdict(list)
    for p, iid, s, lo in _instructions(records):
        rows[iid].append((p, s, lo))
    rng = np.random.default_rng(0)  # unused: the values are 0/1, never bootstrapped
    out = {}
    for iid, rs in sorted(rows.items()):
        prompts = [p for p, _s, _l in rs]
        out[iid] = {
            kind: summarize(
                [float(r[k]) for r in rs], clusters=prompts, rng=rng, confidence=confidence
            )
            for kind, k in (("strict", 1), ("loose", 2))
        }
    return out
