"""MMLU-Pro (Wang et al., 2024): 12,032 ten-option questions in 14 categories, from the Hugging
Face hub (``TIGER-Lab/MMLU-Pro``) or a local copy of its splits.

Formulations (``--formulation``):

- ``generate`` (default, the published setting): chain of thought, 5-shot from the validation
  split's examples of the item's category, each answered with its worked ``cot_content``; the
  prompt is the authors' ``evaluate_from_local.py`` one (their ``initial_prompt.txt`` naming
  the category, then ``Question:\\n...\\nOptions:\\nA. ...\\nAnswer: Let's think step by
  step.``). The answer is read as the authors' current code does (``mmlu_pro_answer``,
  ``evaluate_from_local.py`` at commit ``7478e268``): the first ``answer is (X)``, else the
  last ``Answer: X`` on a line, else the last standalone letter A-J (``\\b[A-J]\\b``).
- ``letter``: the same question block, ``Answer:``, the letters ``" A"`` ... ``" J"`` scored by
  log-likelihood (0-shot by default).
- ``cloze``: each option text scored by log-likelihood after ``Question: ...\\nAnswer:``.

Options ``"N/A"`` (padding of items with fewer than 10 options) are dropped, as the authors'
``preprocess`` does. ``category`` is the MMLU-Pro category, so reports break scores down by it.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from calipers.datasets import DATA_SOURCE_KEY, benchmark_dir, read_records
from calipers.errors import ConfigError, DataError
from calipers.scorers import ScoreFn, build_scorer, scorer
from calipers.tasks._prompt import PromptTemplate, render
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import field, hub_rows, use_hub
from calipers.types import ChatMessage, GenerateParams, Sample, SampleOutput, Score

__all__ = [
    "FORMULATIONS",
    "REFERENCE",
    "ItemInstructionPrompt",
    "authors_guess",
    "extract_mmlu_pro_answer",
    "load_mmlu_pro",
    "mmlu_pro_answer",
    "mmlu_pro_task",
    "read_parquet_or_jsonl",
    "register",
]

NAME = "mmlu_pro"
DATASET = "TIGER-Lab/MMLU-Pro"
FORMULATIONS = ("generate", "letter", "cloze")
_LETTERS = "ABCDEFGHIJ"
_HOW = (
    "Without the hub: put the splits of TIGER-Lab/MMLU-Pro as <data-dir>/mmlu_pro/"
    "test.parquet and validation.parquet (the hub's data/*.parquet files, renamed) or as "
    ".jsonl with the same fields; see docs/benchmarks.md."
)
_INSTRUCTION = (
    "You are an expert in {category}. Below is a series of example questions (with answers) "
    "about {category} for demonstration. You will be given a question at the end, after the "
    "examples, for you to answer. First give step-by-step reasoning about how to solve the "
    "question. Then output the answer."
)
_QUESTION = "Question:\n{input}\nOptions:\n{options}\n"


class ItemInstructionPrompt(PromptTemplate):
    """A prompt whose ``instruction`` uses the evaluated item's fields (``{category}``); the
    instruction still comes once, first, before the few-shot examples."""

    def _resolved(self, sample: Sample) -> PromptTemplate:
        data = self.model_dump()
        data["instruction"] = render(self.instruction, self._fields(sample))
        return PromptTemplate(**data)

    def plain(self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None) -> str:
        return self._resolved(sample).plain(sample, shots, system_prompt)

    def chat(
        self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None
    ) -> tuple[ChatMessage, ...]:
        return self._resolved(sample).chat(sample, shots, system_prompt)


PROMPTS: dict[str, PromptTemplate] = {
    "generate": ItemInstructionPrompt(
        instruction=_INSTRUCTION,
        template=_QUESTION + "Answer: Let's think step by step.",
        answer=" {cot}",
    ),
    "letter": PromptTemplate(template=_QUESTION + "Answer:", answer=" {target_letter}"),
    "cloze": PromptTemplate(template="Question: {input}\nAnswer:", answer=" {target}"),
}


# -- answer extraction ---------------------------------------------------------------------------

REFERENCE = (
    "TIGER-AI-Lab/MMLU-Pro evaluate_from_local.py at commit "
    "7478e2681849424bff7c2787bda5f3c9abf98a62"
)
"""The authors' code whose extraction and scoring ``mmlu_pro_answer`` follows."""
_FIRST = re.compile(r"answer is \(?([A-J])\)?")
_AGAIN = re.compile(r".*[aA]nswer:\s*([A-J])")
_FINAL = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)
_GUESS_SEED = 12345


def extract_mmlu_pro_answer(text: str) -> str | None:
    """The letter the authors' ``extract_answer`` reads from a reply (:data:`REFERENCE`): the
    first ``answer is (X)`` / ``answer is X``; else the last ``Answer: X`` on the first line
    that has one; else the last standalone letter A-J anywhere (``\\b[A-J]\\b``: "I choose
    B. Good luck!" is B; their code before July 2024 took the last capital even inside a
    word, G); else None."""
    for pattern in (_FIRST, _AGAIN, _FINAL):
        if m := pattern.search(text):
            return m.group(1) if pattern.groups else m.group(0)
    return None


def authors_guess(n_options: int) -> int:
    """The option index the authors' ``save_res`` credits when no letter was read: Python's
    ``random`` seeded with 12345 before every such item, ``randint(0, n_options - 1)`` --
    the same index for every item with ``n_options`` options."""
    return random.Random(_GUESS_SEED).randint(0, n_options - 1)


@scorer("mmlu_pro_answer", metrics=("acc", "acc_no_guess"))
def mmlu_pro_answer() -> ScoreFn:
    """MMLU-Pro scored as the authors' code does (``extract_mmlu_pro_answer``, then their
    seeded guess for a reply with no letter).

    ``acc`` is the authors' verdict: the letter read equals the target's, or, with no letter,
    their fixed guess (``authors_guess``) does. ``acc_no_guess`` scores a reply with no letter
    as 0. ``answer`` is the letter read, None when there was none."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        letter = extract_mmlu_pro_answer(output.text)
        target = sample.target_index
        ok = letter is not None and letter == _LETTERS[target]
        if letter is None:
            guess = authors_guess(len(sample.choices or ()))
            return Score(
                values={"acc": float(guess == target), "acc_no_guess": 0.0},
                answer=None,
                metadata={"guess": _LETTERS[guess]},
            )
        return Score(values={"acc": float(ok), "acc_no_guess": float(ok)}, answer=letter)

    return score


# -- data ----------------------------------------------------------------------------------------


def read_parquet_or_jsonl(
    benchmark: str,
    folder: Path,
    stem: str,
    how: str,
) -> list[dict[str, Any]]:
    """Rows of ``<folder>/<stem>.parquet`` or ``.jsonl`` (the first that exists)."""
    parquet, jsonl = folder / f"{stem}.parquet", folder / f"{stem}.jsonl"
    if parquet.is_file():
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise DataError(
                f"{benchmark}: reading {parquet} needs pyarrow.",
                hint="pip install pyarrow (it comes with 'calipers[hub]').",
            ) from None
        try:
            return list(pq.read_table(parquet).to_pylist())
        except Exception as e:  # pyarrow's errors are many; all mean "not this format"
            raise DataError(
                f"{benchmark}: {parquet} is not a readable Parquet file ({e}).", hint=how
            ) from None
    if jsonl.is_file():
        try:
            return [rec for _line, rec in read_records(jsonl)]
        except ConfigError as e:
            raise DataError(f"{benchmark}: {e.message}", hint=how) from None
    raise DataError(
        f"{benchmark}: expected {stem}.parquet or {stem}.jsonl in {folder}, which has neither.",
        hint=how,
    )


def _sample(row: dict[str, Any], where: str, formulation: str, meta: dict[str, Any]) -> Sample:
    options = field(NAME, row, "options", where, _HOW)
    index = field(NAME, row, "answer_index", where, _HOW)
    if not (isinstance(options, list) and isinstance(index, int) and 0 <= index < len(options)):
        raise DataError(
            f"{NAME}: {where}: expected a list 'options' and 'answer_index' in it.", hint=_HOW
        )
    kept = [str(o) for o in options if o != "N/A"]
    if options[index] == "N/A" or not 2 <= len(kept) <= 10:
        raise DataError(
            f"{NAME}: {where}: the answer is 'N/A' or the options are not 2-10.", hint=_HOW
        )
    target = sum(1 for o in options[:index] if o != "N/A")
    category = str(field(NAME, row, "category", where, _HOW))
    cot = str(row.get("cot_content") or "")
    cot = cot.removeprefix("A: Let's think step by step.").strip()
    fields = {
        "category": category,
        "cot": cot,
        "options": "\n".join(f"{_LETTERS[i]}. {o}" for i, o in enumerate(kept)),
    }
    choices: tuple[str, ...] = tuple(kept)
    meta = {**meta, "src": str(row.get("src") or ""), "answer": _LETTERS[target]}
    if formulation == "letter":
        choices, meta = tuple(_LETTERS[: len(kept)]), {**meta, "option_texts": kept}
    return Sample(
        id=str(field(NAME, row, "question_id", where, _HOW)),
        input=str(field(NAME, row, "question", where, _HOW)),
        target=target,
        choices=choices,
        category=category,
        fields=fields,
        metadata=meta,
    )


@functools.lru_cache(maxsize=4)
def _hub_rows(split: str) -> tuple[tuple[dict[str, Any], ...], str]:
    rows = hub_rows(NAME, DATASET, None, split, _HOW)
    return rows.rows, rows.source.uri


def load_mmlu_pro(split: str, formulation: str, ctx: LoadContext) -> list[Sample]:
    """The ``split`` ("test" or "validation") as samples of ``formulation``."""
    meta: dict[str, Any] = {}
    if use_hub(ctx.data_dir):
        rows, uri = _hub_rows(split)
        meta, origin = {DATA_SOURCE_KEY: uri}, f"{DATASET} {split}"
    else:
        folder = benchmark_dir(NAME, ctx.data_dir, how_to_get=_HOW)
        rows, origin = tuple(read_parquet_or_jsonl(NAME, folder, split, _HOW)), str(folder)
    return [_sample(r, f"{origin} row {i}", formulation, meta) for i, r in enumerate(rows)]


def _loader(split: str, formulation: str) -> Callable[[LoadContext], list[Sample]]:
    def load(ctx: LoadContext) -> list[Sample]:
        return load_mmlu_pro(split, formulation, ctx)

    return load


def mmlu_pro_task(formulation: str = "generate") -> Task:
    if formulation not in FORMULATIONS:
        raise ConfigError(
            f"{NAME}: no formulation {formulation!r}.",
            hint=f"Use one of {', '.join(FORMULATIONS)}.",
        )
    generate = formulation == "generate"
    return Task(
        # version 2: the authors' current extraction and their seeded guess (generate only)
        name=NAME,
        version="2" if generate else "1",
        description="MMLU-Pro: 12,032 questions with up to 10 options in 14 categories "
        "(per-category breakdown); default: chain of thought, 5-shot from the category's "
        "validation examples, answer read from 'the answer is (X)'.",
        kind="generate" if generate else "multiple_choice",
        load=_loader("test", formulation),
        fewshot=_loader("validation", formulation),
        scorers=(build_scorer("mmlu_pro_answer" if generate else "loglikelihood_mc"),),
        prompt=PROMPTS[formulation],
        default_few_shot=5 if generate else 0,
        few_shot_sampling="fixed",
        few_shot_match="category",
        formulation=formulation,
        params=GenerateParams(
            max_tokens=2048 if generate else 32, temperature=0.0, stop=("Question:",)
        ),
        source=f"{DATASET} (Wang et al., 2024, arXiv:2406.01574); prompt, extraction and "
        f"scoring of {REFERENCE}",
        license="MIT",
        tags=("knowledge", "reasoning", "multiple_choice"),
    )


def register() -> None:
    """Register ``mmlu_pro`` (idempotent)."""
    register_task(NAME, mmlu_pro_task, formulations=FORMULATIONS)
