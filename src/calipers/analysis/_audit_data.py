"""Where the label audit gets its items and annotations: the task's own data, re-loaded the
way each run loaded it and checked against the run's data hash (stored samples do not keep
item metadata such as MMLU-Redux's ``error_type``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from calipers.analysis._align import StoredRun
from calipers.errors import CalipersError, DataError
from calipers.tasks import LoadContext, Variant, apply_variant, data_hash, resolve_task
from calipers.types import Sample

__all__ = ["Annotation", "annotations_from", "task_samples"]


class Annotation(BaseModel):
    """A human judgement of an item's label (MMLU-Redux's ``error_type``: ``ok``,
    ``wrong_groundtruth``, ``no_correct_answer``, ...), and the option the annotators
    proposed instead, when it names exactly one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error_type: str
    correct_answer: int | None = None


def _proposed(raw: Any, n_options: int) -> int | None:
    """``"C"`` or ``"2"`` (0-based, like MMLU-Redux's answer column) -> 2; several options or
    free text -> None."""
    t = str(raw or "").strip().upper()
    if len(t) == 1 and "A" <= t < chr(65 + n_options):
        return ord(t) - 65
    return int(t) if t.isdigit() and int(t) < n_options else None


def annotations_from(samples: Mapping[str, Sample]) -> tuple[dict[str, Annotation], str | None]:
    """Annotations carried in the items' metadata (``error_type``, ``correct_answer``)."""
    ann = {
        i: Annotation(
            error_type=str(s.metadata["error_type"]),
            correct_answer=_proposed(s.metadata.get("correct_answer"), len(s.choices or ())),
        )
        for i, s in samples.items()
        if s.metadata.get("error_type")
    }
    if not ann:
        return {}, None
    n_err = sum(a.error_type != "ok" for a in ann.values())
    return ann, f"from the task data: {len(ann)} items annotated, {n_err} with an error"


def _load(run: StoredRun, task: str, data_dir: str | Path | None) -> list[Sample]:
    """The task's items as ``run`` loaded them (its task list, formulation, seed, limit,
    data directory), checked against the run's data hash."""
    cfg, card = run.record.config, run.methodology.tasks[task]
    found = None
    for entry in cfg.get("tasks") or [task]:
        try:
            found = next(
                (t for t in resolve_task(str(entry), cfg.get("formulation")) if t.name == task),
                None,
            )
        except CalipersError:
            continue
        if found is not None:
            break
    if found is None:
        raise DataError(f"task {task!r} of run {run.record.id} cannot be re-loaded")
    if cfg.get("variant"):  # a sensitivity or robustness run: the items as it showed them
        found = apply_variant(found, Variant.model_validate(cfg["variant"]))
    where = data_dir or cfg.get("data_dir")
    ctx = LoadContext(
        seed=int(cfg.get("seed") or 0),
        n=card.limit or found.default_n,
        data_dir=Path(where) if where else None,
    )
    samples = list(found.load(ctx))[: card.limit or None]
    if data_hash(samples) != card.data_hash:
        raise DataError(
            f"the items of {task!r} found now differ from those run "
            f"{run.record.id} used (data hash)"
        )
    return samples


def task_samples(
    runs: Sequence[StoredRun],
    task: str,
    data_dir: str | Path | None,
) -> tuple[dict[str, Sample], str]:
    """Items by id from the task data, and a note on where they came from."""
    out: dict[str, Sample] = {}
    problems, seen = [], set()
    for r in runs:
        key = json.dumps(
            [r.record.config.get(k) for k in ("tasks", "formulation", "seed")]
            + [r.methodology.tasks[task].data_hash]
        )
        if key in seen:
            continue
        seen.add(key)
        try:
            for s in _load(r, task, data_dir):
                out.setdefault(s.id, s)
        except CalipersError as e:
            problems.append(e.message)
    if not out:
        why = problems[0] if problems else "no run to load it from"
        return out, f"none: task data not available ({why}); gold read from runs scored right"
    return out, "none in the task data"
