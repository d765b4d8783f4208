"""HumanEval (Chen et al., 2021): 164 hand-written Python problems, from the original
``HumanEval.jsonl.gz`` of openai/human-eval, or without a data directory from the Hugging Face
hub (``openai/openai_humaneval``, split ``test``: the same records).

The model completes a function from its signature and docstring (the prompt is the problem's
``prompt`` as is: plain completion, as in the paper; with a chat template the prompt is the
user turn and a fenced reply is unwrapped). Decoding is greedy; plain completion uses the
standard stop sequences (``\\ndef``, ``\\nclass``, ``\\nif __name__``, ``\\nprint(``, ``\\n#``),
while with the chat template there are none (``Task.chat_params``): they would cut a fenced
reply that repeats the signature or adds a helper. ``code_tests`` runs prompt + completion +
the problem's tests + ``check(entry_point)`` in the sandbox (docs/sandbox.md): ``pass`` is 1
when ``check`` returned (positive evidence, not only exit status 0; a completion that exits
early or disables the tests scores 0 and is flagged as tampering). Each program has human-
eval's time limit, 3 s (recorded in the scorer spec). A plain completion runs as written, a
markdown fence in it included (a fence is unwrapped only from a reply that does not already
continue the prompt as Python, a chat reply).

With one generation per problem, the ``pass`` metric is pass@1. When a run holds several
generations per problem (epochs, at temperature > 0), ``pass@k`` for k in 1, 10, 100 (k at
most the samples per problem) is the unbiased estimator averaged over problems
(:func:`calipers.stats.pass_at_k_estimate`).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from calipers._util.hashing import text_hash
from calipers.datasets import DATA_SOURCE_KEY, benchmark_file
from calipers.errors import DataError
from calipers.scorers import build_scorer
from calipers.stats import pass_at_k_estimate
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import hub_rows, use_hub
from calipers.types import Estimate, GenerateParams, Sample

__all__ = ["STOP", "humaneval_task", "pass_at_k_metrics", "read_humaneval", "register"]

STOP = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#")
PASS_AT = (1, 10, 100)
_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
_HOW = (
    "Put data/HumanEval.jsonl.gz from github.com/openai/human-eval (left compressed) in "
    "<data-dir>/humaneval/; see docs/benchmarks.md."
)


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise DataError(
            f"humaneval: {path} is not a readable gzip file ({e}).", hint=_HOW
        ) from None
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"humaneval: {path}:{i}: not JSON ({e.msg}).", hint=_HOW) from None
        if not isinstance(rec, dict):
            raise DataError(f"humaneval: {path}:{i}: expected a JSON object.", hint=_HOW)
        rows.append((i, rec))
    return rows


def read_humaneval(data_dir: Path | str | None) -> list[Sample]:
    """The problems: id = ``task_id``, input = ``prompt``, target = ``canonical_solution``,
    ``fields`` = ``test`` and ``entry_point`` (what ``code_tests`` runs)."""
    meta: dict[str, str] = {}
    if use_hub(data_dir):
        rows = hub_rows("humaneval", "openai/openai_humaneval", "openai_humaneval", "test", _HOW)
        records = [(f"openai/openai_humaneval test row {i}", r) for i, r in enumerate(rows)]
        origin, meta = "openai/openai_humaneval", {DATA_SOURCE_KEY: rows.source.uri}
    else:
        path = benchmark_file("humaneval", "HumanEval.jsonl.gz", data_dir, how_to_get=_HOW)
        records = [(f"{path}:{line}", rec) for line, rec in _rows(path)]
        origin = str(path)
    out = []
    for where, rec in records:
        missing = [k for k in _FIELDS if not isinstance(rec.get(k), str)]
        if missing:
            raise DataError(
                f"humaneval: {where}: missing string field(s) {', '.join(missing)}.", hint=_HOW
            )
        out.append(
            Sample(
                id=rec["task_id"],
                input=rec["prompt"],
                target=rec["canonical_solution"],
                fields={"test": rec["test"], "entry_point": rec["entry_point"]},
                metadata=dict(meta),
            )
        )
    if not out:
        raise DataError(f"humaneval: {origin} holds no problems.", hint=_HOW)
    return out


def _load(ctx: LoadContext) -> list[Sample]:
    return read_humaneval(ctx.data_dir)


def pass_at_k_metrics(records: Sequence[Any]) -> dict[str, Estimate]:
    """``pass@k`` from stored records with several generations per problem (any epochs):
    per problem, n = its scored records and c = those that passed. Nothing when some problem
    has a single generation (``pass`` is then pass@1). Errored records are not counted."""
    counts: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.error is None and r.scores and "pass" in r.scores:
            counts[r.sample_id].append(float(r.scores["pass"]))
    if not counts or min(len(v) for v in counts.values()) < 2:
        return {}
    ns = [len(v) for v in counts.values()]
    cs = [round(sum(v)) for v in counts.values()]
    out = {}
    for k in PASS_AT:
        if k <= min(ns):
            rng = np.random.default_rng(int(text_hash(f"humaneval pass@{k}", length=8), 16))
            out[f"pass@{k}"] = pass_at_k_estimate(cs, ns, k, rng=rng)
    return out


def humaneval_task() -> Task:
    return Task(
        name="humaneval",
        version="2",  # 2: evidence that check returned, 3 s per problem, fences kept in code
        description="HumanEval: 164 Python functions to complete from signature and docstring; "
        "the completion runs against the problem's unit tests in the sandbox (pass@1; pass@k "
        "with several generations per problem).",
        kind="generate",
        load=_load,
        scorers=(build_scorer({"name": "code_tests", "args": {"timeout_s": 3.0}}),),
        prompt=PromptTemplate(template="{input}"),
        derived=pass_at_k_metrics,
        params=GenerateParams(max_tokens=384, temperature=0.0, stop=STOP),
        # a chat reply is a fenced block, often with the signature again: no completion stops
        chat_params=GenerateParams(max_tokens=512, temperature=0.0),
        source="openai/human-eval@6d43fb980f9fee3c892a914eda09951f772ad10d "
        "(data/HumanEval.jsonl.gz)",
        license="MIT",
        tags=("code",),
    )


def register() -> None:
    """Register humaneval (idempotent)."""
    register_task("humaneval", humaneval_task)
