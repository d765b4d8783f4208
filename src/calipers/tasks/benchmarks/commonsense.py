"""Commonsense and science multiple choice: ARC-Easy, ARC-Challenge, PIQA, HellaSwag, WinoGrande.

Each task reads the benchmark's original files from ``--data-dir`` (``<dir>/arc/``,
``<dir>/piqa/``, ``<dir>/hellaswag/``, ``<dir>/winogrande/``), uses the split published figures
use (ARC test; PIQA, HellaSwag and WinoGrande validation) and scores every option by
log-likelihood, 0-shot, with the prompts of lighteval's tasks (SmolLM2's model card figures):

- ARC, PIQA: ``"Question: {q}\\nAnswer:"`` then ``" {option}"``.
- HellaSwag: ``"{activity_label}: {ctx} "`` then ``" {ending}"`` (lighteval keeps the trailing
  space *and* a space before the ending; without a chat template that is a double space).
- WinoGrande (``partial``, the default): lm-eval's "partial evaluation" (Trinh & Le 2018):
  each option fills the blank, ``sentence[:blank] + option`` is that option's context, and the
  same continuation ``" " + sentence[blank+1:].strip()`` is scored after each; the option under
  which it is likelier wins (``acc`` only: the continuation is shared, so lm-eval's byte-length
  ``acc_norm`` would equal ``acc``). ``--formulation full`` keeps version 1's formulation: the
  sentence up to the blank, then ``"{option} {rest}"`` (the option's own tokens are scored
  too; Trinh & Le's "full scoring"; ``acc`` and ``acc_norm``).

Without a data directory, ARC, PIQA and HellaSwag load from the Hugging Face hub
(``allenai/ai2_arc``, ``baber/piqa``, ``Rowan/hellaswag``; see ``_hub_rows.HUB``), reshaped into
the local files' records so both paths give the same samples.

See docs/benchmarks.md for the files, counts and licences.
"""

from __future__ import annotations

import bz2
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from calipers._util.jsonl import JsonlError, read_jsonl
from calipers.datasets import benchmark_file
from calipers.errors import DataError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import (
    field,
    hellaswag_hub_text,
    hub_rows,
    stamp,
    use_hub,
)
from calipers.types import Sample, SampleOutput, Score

__all__ = [
    "arc_challenge_task",
    "arc_easy_task",
    "hellaswag_task",
    "load_arc",
    "load_hellaswag",
    "load_piqa",
    "piqa_task",
    "register",
]

_DOCS = "See docs/benchmarks.md for where the original files come from."
_HOW = {
    "arc": "Copy AI2's ARC-V1-Feb2018 release (ARC-Easy/ and ARC-Challenge/ with their "
    f"*-Test.jsonl and *-Train.jsonl files) into <data-dir>/arc/. {_DOCS}",
    "piqa": "Copy valid.jsonl and valid-labels.lst from ybisk/ybisk.github.io piqa/data/ "
    f"into <data-dir>/piqa/. {_DOCS}",
    "hellaswag": "Copy hellaswag_val_full.txt.bz2 (klosax/hellaswag_text_data, the text form "
    f"of rowanz/hellaswag's validation set) into <data-dir>/hellaswag/. {_DOCS}",
    "winogrande": "Copy WinoGrande v1.1 dev.jsonl and dev-labels.lst (winogrande_1.1/) into "
    f"<data-dir>/winogrande/. {_DOCS}",
}
_QA = PromptTemplate(template="Question: {input}\nAnswer:", answer=" {target}")
_ScoreFn = Callable[[Sample, SampleOutput], Awaitable[Score]]


# -- reading files ------------------------------------------------------------------------------


def _file(benchmark: str, relpath: str, ctx: LoadContext) -> Path:
    return benchmark_file(benchmark, relpath, ctx.data_dir, how_to_get=_HOW[benchmark])


def _records(benchmark: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        yield from read_jsonl(path)
    except (JsonlError, UnicodeDecodeError) as e:
        raise DataError(
            f"{benchmark}: {path} is not valid JSON Lines ({e}).", hint=_HOW[benchmark]
        ) from None


def _get(benchmark: str, rec: dict[str, Any], key: str, where: str) -> Any:
    if key not in rec:
        raise DataError(f"{benchmark}: {where} has no field {key!r}.", hint=_HOW[benchmark])
    return rec[key]


def _labels(benchmark: str, path: Path, n_items: int, allowed: set[str]) -> list[str]:
    """A ``.lst`` label file: one label per line, aligned with the items."""
    labels = path.read_text(encoding="utf-8").split()
    if len(labels) != n_items:
        raise DataError(
            f"{benchmark}: {path.name} has {len(labels)} labels for {n_items} "
            "items; the files are not aligned.",
            hint=_HOW[benchmark],
        )
    bad = sorted(set(labels) - allowed)
    if bad:
        raise DataError(
            f"{benchmark}: {path.name} has unexpected labels {bad[:5]}.", hint=_HOW[benchmark]
        )
    return labels


# -- loaders ------------------------------------------------------------------------------------


def load_arc(subset: str, split: str, ctx: LoadContext) -> list[Sample]:
    """ARC ``subset`` (``Easy``/``Challenge``), ``split`` (``Test``/``Dev``/``Train``). Items
    have 3 to 5 options labelled A-E or 1-5; the category is the exam the question comes from
    (the id's prefix: Mercury, MCAS, NYSEDREGENTS, ...)."""
    out = []
    for where, rec in _arc_records(subset, split, ctx):
        question = _get("arc", rec, "question", where)
        choices = _get("arc", question, "choices", where)
        labels = [str(_get("arc", c, "label", where)) for c in choices]
        key = str(_get("arc", rec, "answerKey", where)).strip()
        if key not in labels:
            raise DataError(f"arc: {where}: answerKey {key!r} is not one of {labels}.")
        sid = str(_get("arc", rec, "id", where))
        exam = re.match(r"[A-Za-z&]+", sid)
        out.append(
            Sample(
                id=sid,
                input=str(_get("arc", question, "stem", where)),
                choices=tuple(str(_get("arc", c, "text", where)) for c in choices),
                target=labels.index(key),
                category=exam.group(0) if exam else None,
                metadata={
                    "labels": labels,
                    "answer_key": key,
                    **({"data_source": rec["data_source"]} if "data_source" in rec else {}),
                },
            )
        )
    return out


_ARC_HUB_SPLIT = {"Test": "test", "Dev": "validation", "Train": "train"}


def _arc_records(
    subset: str,
    split: str,
    ctx: LoadContext,
) -> list[tuple[str, dict[str, Any]]]:
    """(where, record) in the local file's shape: ``{"id", "question": {"stem", "choices":
    [{"text", "label"}]}, "answerKey"}``; from ``allenai/ai2_arc`` without a data directory."""
    if not use_hub(ctx.data_dir):
        relpath = f"ARC-{subset}/ARC-{subset}-{split}.jsonl"
        return [
            (f"{relpath} line {line}", rec)
            for line, rec in _records("arc", _file("arc", relpath, ctx))
        ]
    config, hub_split = f"ARC-{subset}", _ARC_HUB_SPLIT[split]
    rows = hub_rows("arc", "allenai/ai2_arc", config, hub_split, _HOW["arc"])
    out = []
    for i, row in enumerate(rows):
        where = f"allenai/ai2_arc {config}/{hub_split} row {i}"
        ch = field("arc", row, "choices", where, _HOW["arc"])
        texts, labels = (ch.get("text"), ch.get("label")) if isinstance(ch, dict) else ((), ())
        if not (isinstance(texts, list) and isinstance(labels, list) and len(texts) == len(labels)):
            raise DataError(
                f"arc: {where}: expected choices {{text: [...], label: [...]}}.", hint=_HOW["arc"]
            )
        out.append(
            (
                where,
                {
                    "id": field("arc", row, "id", where, _HOW["arc"]),
                    "question": {
                        "stem": field("arc", row, "question", where, _HOW["arc"]),
                        "choices": [
                            {"text": t, "label": lb} for t, lb in zip(texts, labels, strict=True)
                        ],
                    },
                    "answerKey": field("arc", row, "answerKey", where, _HOW["arc"]),
                    "data_source": rows.source.uri,
                },
            )
        )
    return out


def load_piqa(ctx: LoadContext) -> list[Sample]:
    """PIQA validation: goal, two solutions, the label from valid-labels.lst (from
    ``baber/piqa`` without a data directory)."""
    if use_hub(ctx.data_dir):
        hub = hub_rows("piqa", "baber/piqa", None, "validation", _HOW["piqa"])
        rows = [(i + 1, r) for i, r in enumerate(hub)]
        labels = [str(r.get("label")) for r in hub]
        if set(labels) - {"0", "1"}:
            raise DataError(
                "piqa: baber/piqa validation has labels other than 0/1.", hint=_HOW["piqa"]
            )
        return stamp(_piqa_samples(rows, labels), hub.source)
    path = _file("piqa", "valid.jsonl", ctx)
    rows = list(_records("piqa", path))
    labels = _labels("piqa", _file("piqa", "valid-labels.lst", ctx), len(rows), {"0", "1"})
    return _piqa_samples(rows, labels)


def _piqa_samples(rows: list[tuple[int, dict[str, Any]]], labels: list[str]) -> list[Sample]:
    out = []
    for i, ((line, rec), label) in enumerate(zip(rows, labels, strict=True)):
        where = f"valid.jsonl line {line}"
        out.append(
            Sample(
                id=f"valid-{i}",
                input=str(_get("piqa", rec, "goal", where)),
                choices=tuple(str(_get("piqa", rec, k, where)) for k in ("sol1", "sol2")),
                target=int(label),
            )
        )
    return out


def _capitalize_last_fragment(ctx: str) -> str:
    """Capitalize an unfinished last sentence: the file's ``ctx`` is ``ctx_a + " " + ctx_b``
    with ``ctx_b`` (the lowercase start of the sentence to complete, e.g. "the lady") as in the
    original data, while lighteval and lm-eval use ``ctx_b.capitalize()``."""
    m = re.search(r"[.!?]\s+([a-z])[^.!?]*$", ctx)
    if not m:
        return ctx
    i = m.start(1)
    return ctx[:i] + ctx[i].upper() + ctx[i + 1 :]


def load_hellaswag(ctx: LoadContext) -> list[Sample]:
    """HellaSwag validation from the 6-lines-per-item text file (read from the .bz2 in
    memory): ``activity_label: ctx``, the label 0-3, then the four endings. The category is
    the activity label."""
    if use_hub(ctx.data_dir):
        return _hellaswag_hub()
    relpath = "hellaswag_val_full.txt.bz2"
    path = _file("hellaswag", relpath, ctx)
    try:
        text = bz2.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, ValueError) as e:
        raise DataError(
            f"hellaswag: cannot read {path} as bzip2 UTF-8 text ({e}).", hint=_HOW["hellaswag"]
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) % 6:
        raise DataError(
            f"hellaswag: {relpath} has {len(lines)} lines, not 6 per item.", hint=_HOW["hellaswag"]
        )
    out = []
    for i in range(len(lines) // 6):
        head, label, *endings = lines[6 * i : 6 * i + 6]
        activity, sep, context = head.partition(": ")
        if not sep or label not in {"0", "1", "2", "3"}:
            raise DataError(
                f"hellaswag: {relpath} item {i} (line {6 * i + 1}) is malformed.",
                hint=_HOW["hellaswag"],
            )
        context = _capitalize_last_fragment(context)
        out.append(
            Sample(
                id=f"val-{i}",
                input=f"{activity}: {context}",
                choices=tuple(endings),
                target=int(label),
                category=activity,
                fields={"activity_label": activity, "ctx": context},
            )
        )
    return out


def _hellaswag_hub() -> list[Sample]:
    """``Rowan/hellaswag`` validation, in the text file's form (``_hub_rows``); id = the
    row's position, as the file's item index."""
    rows = hub_rows("hellaswag", "Rowan/hellaswag", None, "validation", _HOW["hellaswag"])
    out = []
    for i, row in enumerate(rows):
        activity, context, endings, label = hellaswag_hub_text(
            row, f"Rowan/hellaswag validation row {i}", _HOW["hellaswag"]
        )
        context = _capitalize_last_fragment(context)
        out.append(
            Sample(
                id=f"val-{i}",
                input=f"{activity}: {context}",
                choices=tuple(endings),
                target=label,
                category=activity,
                fields={"activity_label": activity, "ctx": context},
            )
        )
    return stamp(out, rows.source)


# -- tasks --------------------------------------------------------------------------------------


def _task(
    name: str,
    description: str,
    load: Callable[[LoadContext], Sequence[Sample]],
    prompt: PromptTemplate,
    source: str,
    license: str,
    tags: tuple[str, ...],
    fewshot: Callable[[LoadContext], Sequence[Sample]] | None = None,
) -> Task:
    return Task(
        name=name,
        version="1",
        description=description,
        kind="multiple_choice",
        load=load,
        scorers=(build_scorer("loglikelihood_mc"),),
        prompt=prompt,
        fewshot=fewshot,
        default_few_shot=0,
        source=source,
        license=license,
        tags=("benchmark", *tags),
    )


_ARC_SOURCE = (
    'AI2 ARC-V1-Feb2018, {} test split; Clark et al. 2018, "Think you have Solved '
    'Question Answering? Try ARC", arXiv:1803.05457'
)


def arc_easy_task() -> Task:
    return _task(
        "arc_easy",
        "ARC-Easy test (2,376 grade-school science questions, 3-5 options).",
        lambda ctx: load_arc("Easy", "Test", ctx),
        _QA,
        _ARC_SOURCE.format("ARC-Easy"),
        "CC-BY-SA-4.0",
        ("science", "reasoning"),
        fewshot=lambda ctx: load_arc("Easy", "Train", ctx),
    )


def arc_challenge_task() -> Task:
    return _task(
        "arc_challenge",
        "ARC-Challenge test (1,172 science questions that retrieval and "
        "co-occurrence baselines got wrong, 3-5 options).",
        lambda ctx: load_arc("Challenge", "Test", ctx),
        _QA,
        _ARC_SOURCE.format("ARC-Challenge"),
        "CC-BY-SA-4.0",
        ("science", "reasoning"),
        fewshot=lambda ctx: load_arc("Challenge", "Train", ctx),
    )


def piqa_task() -> Task:
    return _task(
        "piqa",
        "PIQA validation (1,838 physical commonsense goals, 2 solutions).",
        load_piqa,
        _QA,
        "PIQA validation split (ybisk/ybisk.github.io piqa/data); Bisk et al. "
        '2020, "PIQA: Reasoning about Physical Commonsense in Natural Language", '
        "arXiv:1911.11641",
        "AFL-3.0",
        ("commonsense", "physical"),
    )


def hellaswag_task() -> Task:
    return _task(
        "hellaswag",
        "HellaSwag validation (10,042 contexts, pick the ending; 4 options).",
        load_hellaswag,
        PromptTemplate(template="{input} ", answer=" {target}"),
        "HellaSwag validation (rowanz/hellaswag, as text by klosax/hellaswag_text_data); "
        'Zellers et al. 2019, "HellaSwag: Can a Machine Really Finish Your Sentence?", '
        "arXiv:1905.07830",
        "MIT",
        ("commonsense", "completion"),
    )


def register() -> None:
    """Register the four tasks (idempotent); WinoGrande is in ``winogrande.py``."""
    register_task("arc_easy", arc_easy_task)
    register_task("arc_challenge", arc_challenge_task)
    register_task("piqa", piqa_task)
    register_task("hellaswag", hellaswag_task)
