"""GSM8K (Cobbe et al., 2021): 1,319 grade-school math word problems, from the original
``test.jsonl`` / ``train.jsonl`` of openai/grade-school-math, or without a data directory from
the Hugging Face hub (``openai/gsm8k``, config ``main``: the same rows and fields).

The prompt is lm-evaluation-harness' ``gsm8k``: ``Question: {question}\\nAnswer:``, with 5
few-shot examples drawn per item (seeded, the seed recorded) from the 7,473 training problems,
each answered by its full worked solution ending in ``#### N``. The model may reason before
answering. The target is the number after ``####`` in the test solution.

Version 2 scores two ways. ``gsm8k_lmeval`` is lm-evaluation-harness 0.4.13's rule exactly:
``flexible_lmeval`` (the primary metric: the reply's last number, compared as a string after
lm-eval's normalization) and ``strict_lmeval`` (the first ``#### N``); use these to compare
with published lm-eval figures. ``numeric_match`` is calipers' numeric reading: ``acc`` (the
``####`` number, else the last number, compared numerically: ``12.0`` = ``12``) and
``acc_strict`` (``#### N`` required, numeric). Version 1 reported only the numeric pair.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from calipers.datasets import DATA_SOURCE_KEY, benchmark_file, read_records
from calipers.errors import DataError
from calipers.scorers import build_scorer, extract_strict, format_number
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import hub_rows, use_hub
from calipers.types import GenerateParams, Sample

__all__ = ["gsm8k_task", "read_gsm8k", "register"]

_HOW = (
    "Put test.jsonl and train.jsonl from github.com/openai/grade-school-math "
    "(grade_school_math/data/) in <data-dir>/gsm8k/; see docs/benchmarks.md."
)


def read_gsm8k(split: str, data_dir: Path | str | None) -> list[Sample]:
    """The ``split`` ("test" or "train") items: id ``"<split>/<i>"``, the question as input,
    the ``####`` number as target (canonical: no thousands commas) and the full solution in
    ``fields["solution"]`` (what a few-shot example answers with)."""
    meta: dict[str, str] = {}
    if use_hub(data_dir):
        rows = hub_rows("gsm8k", "openai/gsm8k", "main", split, _HOW)
        records = [(f"openai/gsm8k main/{split} row {i}", r) for i, r in enumerate(rows)]
        meta = {DATA_SOURCE_KEY: rows.source.uri}
    else:
        path = benchmark_file("gsm8k", f"{split}.jsonl", data_dir, how_to_get=_HOW)
        records = [(f"{path}:{line}", rec) for line, rec in read_records(path)]
    out: list[Sample] = []
    for where, rec in records:
        question, solution = rec.get("question"), rec.get("answer")
        if not isinstance(question, str) or not isinstance(solution, str):
            raise DataError(
                f"gsm8k: {where}: expected string fields 'question' and 'answer'.", hint=_HOW
            )
        number = extract_strict(solution)
        if number is None:
            raise DataError(
                f"gsm8k: {where}: the answer does not end in '#### <number>'.", hint=_HOW
            )
        out.append(
            Sample(
                id=f"{split}/{len(out)}",
                input=question,
                target=format_number(number),
                fields={"solution": solution},
                metadata=dict(meta),
            )
        )
    return out


def _loader(split: str) -> Callable[[LoadContext], list[Sample]]:
    def load(ctx: LoadContext) -> list[Sample]:
        return read_gsm8k(split, ctx.data_dir)

    return load


def gsm8k_task() -> Task:
    return Task(
        name="gsm8k",
        version="2",
        description="GSM8K: 1,319 grade-school math word problems; 5-shot from train (seeded "
        "per item), reasoning allowed; lm-eval 0.4.13's flexible-extract (flexible_lmeval) and "
        "strict-match (strict_lmeval), and calipers' numeric acc / acc_strict.",
        kind="generate",
        load=_loader("test"),
        fewshot=_loader("train"),
        scorers=(build_scorer("gsm8k_lmeval"), build_scorer("numeric_match")),
        prompt=PromptTemplate(template="Question: {input}\nAnswer:", answer=" {solution}"),
        default_few_shot=5,
        few_shot_seed=1234,
        few_shot_sampling="per_item",
        params=GenerateParams(max_tokens=256, temperature=0.0, stop=("Question:",)),
        source="openai/grade-school-math",
        license="MIT",
        tags=("math", "reasoning"),
    )


def register() -> None:
    """Register gsm8k (idempotent)."""
    register_task("gsm8k", gsm8k_task)
