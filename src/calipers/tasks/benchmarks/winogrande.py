"""WinoGrande (v1.1 dev): pronoun resolution with two options, scored by log-likelihood.

``partial`` (the default, task version 2) is lm-evaluation-harness's partial evaluation: each
option gets its own context, ``sentence[:blank] + option``, and the same continuation, the rest
of the sentence after the blank, is scored under each; the option under which it is likelier
wins. ``full`` (version 1's formulation) scores ``"{option} {rest of the sentence}"`` after
one shared context, so the option's own tokens count too. Files: ``<dir>/winogrande/``
(``dev.jsonl`` and ``dev-labels.lst``), or ``allenai/winogrande`` without a data directory.
See docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from calipers.errors import ConfigError, DataError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.benchmarks._hub_rows import stamp, use_hub, winogrande_hub_records
from calipers.tasks.benchmarks.commonsense import _file, _get, _labels, _records, _task
from calipers.types import Sample

__all__ = ["WINOGRANDE_FORMULATIONS", "load_winogrande", "register", "winogrande_task"]


def load_winogrande(ctx: LoadContext, formulation: str = "partial") -> list[Sample]:
    """WinoGrande v1.1 dev. ``partial``: the input is the sentence up to the blank, verbatim
    (lm-eval's ``sentence[:idx]``), the choices are the two options, and ``fields["after"]``
    is the rest of the sentence after the blank, stripped. ``full``: the input is the sentence
    up to the blank, right-stripped; each choice is an option followed by the rest of the
    sentence (what is scored). Twin items (``qID`` ending in -1 and -2, the same sentence with
    a changed trigger word) share a cluster; from ``allenai/winogrande`` (no data directory)
    the ids are row positions and each item is its own cluster."""
    source = None
    if use_hub(ctx.data_dir):
        records, labels, source = winogrande_hub_records()
        rows = [(i + 1, r) for i, r in enumerate(records)]
    else:
        rows = list(_records("winogrande", _file("winogrande", "dev.jsonl", ctx)))
        labels = _labels(
            "winogrande", _file("winogrande", "dev-labels.lst", ctx), len(rows), {"1", "2"}
        )
    out = _winogrande_samples(rows, labels, formulation, twins=source is None)
    return out if source is None else stamp(out, source)


def _winogrande_samples(
    rows: Sequence[tuple[int, dict[str, Any]]],
    labels: Sequence[str],
    formulation: str,
    *,
    twins: bool,
) -> list[Sample]:
    out = []
    for (line, rec), label in zip(rows, labels, strict=True):
        where = f"dev.jsonl line {line}"
        sentence = str(_get("winogrande", rec, "sentence", where))
        if sentence.count("_") != 1:
            raise DataError(f"winogrande: {where}: the sentence has no single blank (_).")
        before, after = sentence.split("_")
        options = (
            str(_get("winogrande", rec, "option1", where)),
            str(_get("winogrande", rec, "option2", where)),
        )
        qid = str(_get("winogrande", rec, "qID", where))
        cluster = qid.rsplit("-", 1)[0] if twins else qid
        if formulation == "partial":
            out.append(
                Sample(
                    id=qid,
                    input=before,
                    choices=options,
                    target=int(label) - 1,
                    cluster=cluster,
                    fields={"after": after.strip()},
                )
            )
            continue
        out.append(
            Sample(
                id=qid,
                input=before.rstrip(),
                choices=tuple(f"{o} {after.strip()}" for o in options),
                target=int(label) - 1,
                cluster=cluster,
                metadata={"options": list(options)},
            )
        )
    return out


WINOGRANDE_FORMULATIONS = ("partial", "full")


def winogrande_task(formulation: str = "partial") -> Task:
    """Version 2: partial evaluation by default (version 1 had only ``full``)."""
    if formulation not in WINOGRANDE_FORMULATIONS:
        raise ConfigError(
            f"winogrande has no formulation {formulation!r}.",
            hint=f"Its formulations: {', '.join(WINOGRANDE_FORMULATIONS)}.",
        )
    if formulation == "partial":
        prompt = PromptTemplate(
            template="{input}",
            answer="{target} {after}",
            option_context="{choice}",
            continuation=" {after}",
        )
    else:
        prompt = PromptTemplate(template="{input} ", answer="{target}", continuation="{choice}")
    task = _task(
        "winogrande",
        "WinoGrande v1.1 dev (1,267 pronoun-resolution sentences, 2 options).",
        lambda ctx: load_winogrande(ctx, formulation),
        prompt,
        "WinoGrande v1.1 dev split (allenai/winogrande); Sakaguchi et al. 2020, "
        '"WinoGrande: An Adversarial Winograd Schema Challenge at Scale", arXiv:1907.10641',
        "unstated (the data README names none; allenai/winogrande code is Apache-2.0)",
        ("commonsense", "coreference"),
    )
    scorers = (build_scorer("loglikelihood_partial"),) if formulation == "partial" else None
    return replace(task, version="2", formulation=formulation, scorers=scorers or task.scorers)


def register() -> None:
    """Register ``winogrande`` (idempotent)."""
    register_task("winogrande", winogrande_task, formulations=WINOGRANDE_FORMULATIONS)
