"""BIG-Bench Hard (Suzgun et al., 2022): 27 BIG-Bench subtasks, 6,511 items, answered by
generation and scored by exact match after normalization, with a per-subtask breakdown.

Data: the Hugging Face hub (``SaylorTwift/bbh``, a Parquet copy of the original files: one
config per subtask, split ``test``, ``input``, ``target``; ``lukaemon/bbh`` has the same rows
behind a loading script, which ``datasets`` 4.0 and later refuse to run) or the original
repository's files (``suzgunmirac/BIG-Bench-Hard`` ``bbh/<subtask>.json``,
``{"examples": [{"input", "target"}]}``) in ``<data-dir>/bbh/``.

Formulations:

- ``zeroshot`` (default): ``Q: {input}\\nA:`` after an instruction asking for the reasoning and
  a final ``So the answer is <answer>.``, 0-shot. The published 3-shot chain-of-thought
  prompts are not part of the hub dataset, so this is not the paper's setting.
- ``cot``: the paper's 3-shot chain-of-thought prompt of each subtask (``cot-prompts/
  <subtask>.txt`` of the BBH repository, read from ``<data-dir>/bbh/cot-prompts/``, also when
  the items come from the hub), then ``Q: {input}\\nA: Let's think step by step.``.

``bbh_match`` reads the answer after the last "the answer is" (else the reply's first line),
normalizes it (trim, drop a final period, surrounding quotes and ``*``, collapse spaces, case)
and compares it with the target; a target ``(B)`` also accepts ``B`` and ``(B) text``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.datasets import DATA_SOURCE_KEY, benchmark_dir, data_root
from calipers.errors import ConfigError, DataError
from calipers.scorers import ScoreFn, build_scorer, scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import hub_rows, use_hub
from calipers.tasks.benchmarks.mmlu_pro import ItemInstructionPrompt
from calipers.types import GenerateParams, Sample, SampleOutput, Score

__all__ = [
    "FORMULATIONS",
    "SUBTASKS",
    "bbh_answer",
    "bbh_match",
    "bbh_task",
    "load_bbh",
    "normalize_bbh",
    "register",
]

NAME = "bbh"
DATASET = "SaylorTwift/bbh"
FORMULATIONS = ("zeroshot", "cot")
SUBTASKS = (
    "boolean_expressions",
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "dyck_languages",
    "formal_fallacies",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
)
"""The 27 subtasks, in the order items load."""
_HOW = (
    "Put the bbh/<subtask>.json files of github.com/suzgunmirac/BIG-Bench-Hard in "
    "<data-dir>/bbh/ (and cot-prompts/<subtask>.txt in <data-dir>/bbh/cot-prompts/ for "
    "--formulation cot); see docs/benchmarks.md."
)
_INSTRUCTION = (
    'Answer the question. Think it through step by step, then end with "So the '
    'answer is <answer>.", where <answer> is only the final answer in the form '
    "the question asks for (an option such as (A), True/False, Yes/No, valid/"
    "invalid, a number, or words)."
)
PROMPTS: dict[str, PromptTemplate] = {
    "zeroshot": PromptTemplate(instruction=_INSTRUCTION, template="Q: {input}\nA:"),
    "cot": ItemInstructionPrompt(
        instruction="{cot_prompt}", template="Q: {input}\nA: Let's think step by step."
    ),
}


# -- scoring -------------------------------------------------------------------------------------

_ANSWER_IS = re.compile(r"answer is", re.IGNORECASE)
_OPTION = re.compile(r"\(([A-R])\)")


def bbh_answer(text: str) -> str:
    """The answer part of a reply: the text after the last "the answer is" (to the end of
    that line), else the first non-empty line."""
    ends = [m.end() for m in _ANSWER_IS.finditer(text)]
    if ends:
        return text[ends[-1] :].lstrip(" :").split("\n")[0]
    return next((line for line in text.splitlines() if line.strip()), "")


def normalize_bbh(text: str) -> str:
    """Trim, drop surrounding quotes / ``*`` / backticks and a final period, collapse
    spaces, casefold: ``' **True**.'`` -> ``'true'``."""
    t = text.strip().strip("*`\"'").strip()
    t = t.removesuffix(".").strip().strip("*`\"'").strip()
    return " ".join(t.split()).casefold()


def _matches(answer: str, target: str) -> bool:
    got, want = normalize_bbh(answer), normalize_bbh(target)
    if got == want:
        return True
    option = _OPTION.fullmatch(target.strip())
    if option:  # "(B)": accept "B", "B)", "(B) some text"
        letter = option.group(1).casefold()
        return bool(re.fullmatch(rf"\(?{letter}\)?(?:[\s.:].*)?", got))
    return False


@scorer("bbh_match", metrics=("exact_match",))
def bbh_match() -> ScoreFn:
    """BBH exact match: the normalized answer (``bbh_answer``, ``normalize_bbh``) equals the
    normalized target; an option target ``(B)`` also accepts ``B`` or ``(B) text``."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        answer = bbh_answer(output.text)
        ok = _matches(answer, sample.target_text)
        return Score(values={"exact_match": float(ok)}, answer=answer.strip())

    return score


# -- data ----------------------------------------------------------------------------------------


def _local_rows(subtask: str, folder: Path) -> list[dict[str, Any]]:
    path = folder / f"{subtask}.json"
    if not path.is_file():
        raise DataError(
            f"{NAME}: expected the file {subtask}.json in {folder}, which is missing.", hint=_HOW
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{NAME}: {path} is not UTF-8 JSON ({e}).", hint=_HOW) from None
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, list):
        raise DataError(
            f'{NAME}: {path}: expected {{"examples": [{{"input", "target"}}, '
            "...]}} (the BBH repository's format).",
            hint=_HOW,
        )
    return examples


@functools.lru_cache(maxsize=32)
def _hub(subtask: str) -> tuple[tuple[dict[str, Any], ...], str]:
    rows = hub_rows(NAME, DATASET, subtask, "test", _HOW)
    return rows.rows, rows.source.uri


def _cot_prompt(subtask: str, data_dir: Path | str | None) -> str:
    root = data_root(data_dir)
    path = (root / NAME / "cot-prompts" / f"{subtask}.txt") if root else None
    if path is None or not path.is_file():
        raise DataError(
            f"{NAME}: --formulation cot needs the chain-of-thought prompt "
            f"cot-prompts/{subtask}.txt in {path.parent if path else '<data-dir>/bbh'}"
            ", which is missing (the hub dataset has no prompts).",
            hint=_HOW,
        )
    text = path.read_text(encoding="utf-8")
    # the files start with a "canary" comment line and a "-----" separator
    body = text.split("-----", 1)[1] if "-----" in text else text
    return body.strip()


def load_bbh(ctx: LoadContext, formulation: str = "zeroshot") -> list[Sample]:
    """All 27 subtasks' items; id ``<subtask>/<i>``, category = subtask."""
    hub = use_hub(ctx.data_dir)
    folder = None if hub else benchmark_dir(NAME, ctx.data_dir, how_to_get=_HOW)
    out = []
    for subtask in SUBTASKS:
        meta: dict[str, Any] = {}
        if folder is None:
            rows, uri = _hub(subtask)
            meta = {DATA_SOURCE_KEY: uri}
        else:
            rows = tuple(_local_rows(subtask, folder))
        fields = {"cot_prompt": _cot_prompt(subtask, ctx.data_dir)} if formulation == "cot" else {}
        for i, row in enumerate(rows):
            target = row.get("target") if isinstance(row, dict) else None
            if isinstance(target, bool | int):  # a Parquet copy may type "24" or "True"
                target = str(target)
            if not (
                isinstance(row, dict)
                and isinstance(row.get("input"), str)
                and isinstance(target, str)
            ):
                raise DataError(
                    f"{NAME}: {subtask} item {i}: expected string 'input' and 'target'.", hint=_HOW
                )
            out.append(
                Sample(
                    id=f"{subtask}/{i}",
                    input=row["input"],
                    target=target,
                    category=subtask,
                    fields=dict(fields),
                    metadata=dict(meta),
                )
            )
    return out


def _loader(formulation: str) -> Callable[[LoadContext], list[Sample]]:
    def load(ctx: LoadContext) -> list[Sample]:
        return load_bbh(ctx, formulation)

    return load


def bbh_task(formulation: str = "zeroshot") -> Task:
    if formulation not in FORMULATIONS:
        raise ConfigError(
            f"{NAME}: no formulation {formulation!r}.",
            hint=f"Use one of {', '.join(FORMULATIONS)}.",
        )
    setting = (
        "0-shot with an answer-format instruction (the paper's 3-shot CoT prompts are "
        "not on the hub; --formulation cot reads them from <data-dir>/bbh/cot-prompts/)"
        if formulation == "zeroshot"
        else "the paper's 3-shot chain-of-thought prompts"
    )
    return Task(
        name=NAME,
        version="1",
        description=f"BIG-Bench Hard: 27 subtasks, 6,511 items, exact match after "
        f"normalization, per-subtask breakdown; {setting}.",
        kind="generate",
        load=_loader(formulation),
        scorers=(build_scorer("bbh_match"),),
        prompt=PROMPTS[formulation],
        formulation=formulation,
        params=GenerateParams(max_tokens=512, temperature=0.0, stop=("\n\nQ:",)),
        source=f"{DATASET} (Suzgun et al., 2022, arXiv:2210.09261; data of suzgunmirac/"
        "BIG-Bench-Hard)",
        license="MIT",
        tags=("reasoning", "generate"),
    )


def register() -> None:
    """Register ``bbh`` (idempotent)."""
    register_task(NAME, bbh_task, formulations=FORMULATIONS)
