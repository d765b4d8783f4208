"""SWE-bench predictions from a stored run, for the official harness (which needs Docker).

A run answers SWE-bench when its items' ids are SWE-bench instance ids (a task file maps
``fields: {id: instance_id, input: problem_statement}``) and each final reply carries the
patch as a unified diff: in a fenced block (```diff or ```patch, the last one wins), or the
reply itself when it starts with ``diff --git`` or ``--- ``. One prediction per instance,
in SWE-bench's format: ``{"instance_id", "model_name_or_path", "model_patch"}``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from calipers.store import SampleRecord

__all__ = ["SwebenchExport", "extract_patch", "swebench_predictions"]

_FENCE = re.compile(r"```(?:diff|patch)[^\n]*\n(.*?)```", re.DOTALL)


def extract_patch(text: str | None) -> str | None:
    """The unified diff in a reply, or None when it holds none."""
    if not text:
        return None
    fenced = _FENCE.findall(text)
    if fenced:
        patch = fenced[-1]
    elif text.lstrip().startswith(("diff --git", "--- ")):
        patch = text.strip()
    else:
        return None
    patch = patch.strip("\n")
    return patch + "\n" if patch else None


@dataclass(frozen=True)
class SwebenchExport:
    predictions: list[dict[str, str]]
    no_patch: list[str]  # instances whose reply held no diff (exported with an empty patch)
    errors: list[str]  # instances whose sample errored (left out)


def swebench_predictions(
    samples: Sequence[SampleRecord], model_name: str, *, task: str | None = None, epoch: int = 0
) -> SwebenchExport:
    """One prediction per item of ``task`` (every task when None) at ``epoch``. An item whose
    reply has no diff is exported with an empty patch (the harness counts it unresolved, as it
    is) and listed in ``no_patch``; an errored sample is left out and listed in ``errors``."""
    predictions, no_patch, errors = [], [], []
    for s in samples:
        if s.epoch != epoch or (task is not None and s.task != task):
            continue
        if s.error is not None:
            errors.append(s.sample_id)
            continue
        patch = extract_patch(s.response)
        if patch is None:
            no_patch.append(s.sample_id)
        predictions.append(
            {
                "instance_id": s.sample_id,
                "model_name_or_path": model_name,
                "model_patch": patch or "",
            }
        )
    return SwebenchExport(predictions, no_patch, errors)
