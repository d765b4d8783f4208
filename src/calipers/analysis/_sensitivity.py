"""How much a score moves when only the format of the questions changes.

Input: stored runs of one model on one task, the first one the reference formulation, the
others the same items under other presentations (labels, separators, instruction line, chat
template, system prompt, few-shot draws, cloze vs letter, option order). Output: each
formulation's score and its paired difference from the reference, the spread, the format
noise floor, the CircularEval score and position bias.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import StoredRun, pair
from calipers.errors import ConfigError
from calipers.stats import adjust, clustered_mean, paired_compare, summarize, wilson
from calipers.store import SampleRecord
from calipers.types import Estimate

__all__ = [
    "FormulationRow",
    "PositionBias",
    "RobustnessReport",
    "RobustnessRow",
    "SensitivityReport",
    "describe_formulation",
    "robustness",
    "sensitivity",
]

# Methodology fields a formulation may change; anything else differing means other items or
# another measurement (refused).
_FORMAT_FIELDS = (
    "formulation",
    "prompt_template",
    "chat_template",
    "system_prompt",
    "few_shot",
    "few_shot_seed",
    "variant",
)


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FormulationRow(_Out):
    label: str
    run_id: str
    score: Estimate
    diff: Estimate | None  # paired, this formulation minus the reference
    p_value: float | None
    n_paired: int


class PositionBias(_Out):
    """How often each shown position was chosen, against how often it held the right answer.

    Pooled over the runs that show the options in several orders (every item then appears
    once per order), so the share of each position is a mean over answers clustered by item:
    its interval is cluster-robust (items are the clusters). ``over_chosen`` lists the
    positions chosen more often than they are right, beyond the interval."""

    n: int
    n_items: int
    chosen: list[Estimate]  # per position (cluster-robust)
    correct: list[float]
    over_chosen: list[int]


class SensitivityReport(_Out):
    task: str
    metric: str
    model: str
    reference: str
    rows: list[FormulationRow]
    spread: dict[str, float | int | None]  # min, max, sd, n (formulations)
    noise_floor: float | None  # max - min of the formulation scores
    circular: Estimate | None
    circular_note: str
    position_bias: PositionBias | None
    notes: list[str]


def describe_formulation(ref: StoredRun, run: StoredRun, task: str) -> str:
    """What this run's presentation changes relative to the reference: ``labels=(A)``,
    ``chat template off``, ``few_shot=5``; ``reference`` for the reference run itself."""
    a = ref.methodology.tasks[task].model_dump(mode="json")
    b = run.methodology.tasks[task].model_dump(mode="json")
    parts: list[str] = []
    for key in _FORMAT_FIELDS:
        if a.get(key) == b.get(key):
            continue
        if key == "variant":
            va, vb = a.get(key) or {}, b.get(key) or {}
            parts += [
                f"{k}={vb.get(k)!r}" if isinstance(vb.get(k), str) else f"{k}={vb.get(k)}"
                for k in sorted(set(va) | set(vb))
                if va.get(k) != vb.get(k)
            ]
        elif key == "chat_template":
            parts.append("chat template " + ("on" if b[key] else "off"))
        elif key == "system_prompt":
            parts.append("no system prompt" if not b[key] else f"system prompt {b[key]!r}")
        elif key != "prompt_template" or (
            a.get("formulation") == b.get("formulation") and a.get("variant") == b.get("variant")
        ):
            parts.append(f"{key}={b.get(key)}")
    return ", ".join(parts) or ("reference" if run is ref else "same format")


def _check_same_measurement(ref: StoredRun, run: StoredRun, task: str) -> None:
    if task not in run.methodology.tasks:
        raise ConfigError(f"Run {run.record.id} has no task {task!r}.")
    if run.methodology.model.key() != ref.methodology.model.key():
        raise ConfigError(
            f"Runs {ref.record.id} and {run.record.id} are of different models; a "
            "sensitivity study varies the format for one model."
        )
    a = ref.methodology.tasks[task].model_dump(mode="json")
    b = run.methodology.tasks[task].model_dump(mode="json")
    # another formulation (cloze, letter, generate) brings its own scorer and decoding
    fixed = (
        ("task", "version", "dynamic")
        if a.get("formulation") != b.get("formulation")
        else ("task", "version", "decoding", "scorers", "dynamic")
    )
    other = [k for k in fixed if a.get(k) != b.get(k)]
    if other:
        raise ConfigError(
            f"Run {run.record.id} measures {task} differently ("
            f"{', '.join(other)}); only the format may differ."
        )


def _rows(
    runs: Sequence[StoredRun], task: str, metric: str, seed: int, confidence: float
) -> list[FormulationRow]:
    ref, rows = runs[0], []
    for run in runs:
        p = pair(ref, run, task, metric)
        res = paired_compare(
            p.a, p.b, rng=derived_rng(seed, task, run.record.id), confidence=confidence
        )
        own = pair(run, run, task, metric)
        score = summarize(
            own.a,
            clusters=list(own.clusters) if own.clusters else None,
            rng=derived_rng(seed, run.record.id),
            confidence=confidence,
        )
        is_ref = run is ref
        rows.append(
            FormulationRow(
                label=describe_formulation(ref, run, task),
                run_id=run.record.id,
                score=score,
                diff=None if is_ref else res.diff,
                p_value=None if is_ref or math.isnan(res.p_value) else float(res.p_value),
                n_paired=res.n,
            )
        )
    return rows


def _spread(rows: Sequence[FormulationRow]) -> dict[str, float | int | None]:
    values = np.array([r.score.value for r in rows if r.score.n], dtype=np.float64)
    if values.size == 0:
        return {"min": None, "max": None, "sd": None, "n": 0}
    sd = float(values.std(ddof=1)) if values.size > 1 else None
    return {"min": float(values.min()), "max": float(values.max()), "sd": sd, "n": values.size}


def _variant(run: StoredRun, task: str) -> dict[str, Any]:
    return run.methodology.tasks[task].variant or {}


def _only_rotated(ref: StoredRun, run: StoredRun, task: str) -> bool:
    """``run`` shows ``ref``'s items in the same format except for a rotation of options."""
    a = ref.methodology.tasks[task].model_dump(mode="json")
    b = run.methodology.tasks[task].model_dump(mode="json")
    same = all(a.get(k) == b.get(k) for k in _FORMAT_FIELDS if k != "variant")
    va = {k: v for k, v in (a.get("variant") or {}).items() if k != "rotate"}
    vb = {k: v for k, v in (b.get("variant") or {}).items() if k != "rotate"}
    return same and va == vb


def _circular(
    runs: Sequence[StoredRun], task: str, metric: str, confidence: float
) -> tuple[Estimate | None, str]:
    """CircularEval: an item counts as right only if it is right under every rotation of its
    options. Needs the runs of rotations 0..n-1 that differ in nothing else."""
    ref = runs[0]
    n_opts = _n_options(ref.samples, task)
    if n_opts is None:
        return None, "not multiple choice: no options to rotate"
    by_rot: dict[int, StoredRun] = {}
    for run in runs:
        if _only_rotated(ref, run, task):
            by_rot.setdefault(int(_variant(run, task).get("rotate", 0)) % n_opts, run)
    missing = [r for r in range(n_opts) if r not in by_rot]
    if missing:
        return None, (
            f"needs all {n_opts} rotations; missing rotate={', '.join(map(str, missing))}"
        )
    per_run = [
        {
            s.sample_id: s.scores[metric] == 1.0
            for s in run.samples
            if s.task == task
            and s.error is None
            and s.scores
            and metric in s.scores
            and not math.isnan(s.scores[metric])
        }
        for run in by_rot.values()
    ]
    ids = set.intersection(*(set(d) for d in per_run))
    right = sum(all(d[i] for d in per_run) for i in ids)
    est = wilson(right, len(ids), confidence)
    return est, (
        f"right under all {n_opts} rotations, on the {len(ids)} items scored in every rotation"
    )


def _n_options(samples: Sequence[SampleRecord], task: str) -> int | None:
    for s in samples:
        choice = (s.score_details or {}).get("choice") if s.task == task else None
        if choice:
            return int(choice["n_options"])
    return None


def _chosen_position(s: SampleRecord) -> int | None:
    a = s.answer
    if a is None:
        return None
    if a.isdigit():
        return int(a)
    if len(a) == 1 and a.isalpha():
        return ord(a.upper()) - 65
    return None


def position_bias(
    runs: Sequence[StoredRun], task: str, confidence: float = 0.95
) -> PositionBias | None:
    """Chosen vs right positions, pooled over ``runs`` (a mix of option orders balances
    where the right answer sits)."""
    chosen: list[int] = []
    correct: list[int] = []
    items: list[str] = []
    k = 0
    for run in runs:
        for s in run.samples:
            choice = (s.score_details or {}).get("choice")
            pos = _chosen_position(s)
            if s.task != task or s.error is not None or not choice or pos is None:
                continue
            k = max(k, int(choice["n_options"]))
            chosen.append(pos)
            correct.append(int(choice["target_index"]))
            items.append(s.sample_id)
    if not chosen:
        return None
    picks, rights = np.array(chosen), np.array(correct)
    shares = [clustered_mean((picks == j).astype(np.float64), items, confidence) for j in range(k)]
    right = [float(np.mean(rights == j)) for j in range(k)]
    return PositionBias(
        n=len(chosen),
        n_items=len(set(items)),
        chosen=shares,
        correct=right,
        over_chosen=[j for j, e in enumerate(shares) if e.low > right[j]],
    )


def _checked_metric(runs: Sequence[StoredRun], task: str, metric: str | None) -> str:
    """The metric to compare (default: the reference's primary), after checking that every
    run measures ``task`` like the reference except for the format."""
    if len(runs) < 2:
        raise ConfigError(
            "A sensitivity study needs the reference run and at least one other formulation."
        )
    ref = runs[0]
    for run in runs[1:]:
        _check_same_measurement(ref, run, task)
    summary = ref.record.task_summary(task)
    if summary is not None:
        metric = metric or summary.primary or next(iter(summary.metrics), None)
    if metric is None:
        raise ConfigError(f"Run {ref.record.id} has no scores for {task!r}.")
    return str(metric)


def sensitivity(
    runs: Sequence[StoredRun],
    task: str,
    *,
    metric: str | None = None,
    seed: int = 0,
    confidence: float = 0.95,
) -> SensitivityReport:
    """The format sensitivity of one model on ``task``; ``runs[0]`` is the reference."""
    metric = _checked_metric(runs, task, metric)
    ref = runs[0]
    rows = _rows(runs, task, metric, seed, confidence)
    spread = _spread(rows)
    floor = (
        None
        if spread["min"] is None or spread["max"] is None
        else float(spread["max"]) - float(spread["min"])
    )
    circular, note = _circular(runs, task, metric, confidence)
    reorder = [
        r for r in runs if "rotate" in _variant(r, task) or "permute_seed" in _variant(r, task)
    ] or list(runs)
    notes = []
    if len(rows) < 4:
        notes.append(
            f"Only {len(rows)} formulations: the spread and noise floor rest on few points."
        )
    return SensitivityReport(
        task=task,
        metric=metric,
        model=ref.record.model_name,
        reference=ref.record.id,
        rows=rows,
        spread=spread,
        noise_floor=floor,
        circular=circular,
        circular_note=note,
        position_bias=position_bias(
            [*reorder, ref] if ref not in reorder else reorder, task, confidence
        ),
        notes=notes,
    )


class RobustnessRow(_Out):
    perturbation: str
    run_id: str
    n_paired: int
    score: Estimate
    gap: Estimate  # paired: perturbed minus clean
    p_value: float | None
    p_adjusted: float | None  # Holm over the perturbations
    significant: bool


class RobustnessReport(_Out):
    task: str
    metric: str
    model: str
    clean: FormulationRow
    rows: list[RobustnessRow]
    alpha: float


def robustness(
    runs: Sequence[StoredRun],
    task: str,
    *,
    metric: str | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> RobustnessReport:
    """The robustness gap of each perturbation: the paired difference from the clean run
    (``runs[0]``), with Holm-corrected p-values across the perturbations."""
    metric = _checked_metric(runs, task, metric)  # the gaps only: no floor, no CircularEval
    all_rows = _rows(runs, task, metric, seed, confidence)
    perturbed = all_rows[1:]
    adjusted = adjust(
        [r.p_value if r.p_value is not None else float("nan") for r in perturbed], method="holm"
    )
    rows = []
    for run, r, p_adj in zip(runs[1:], perturbed, adjusted, strict=True):
        v = run.methodology.tasks[task].variant or {}
        ok = p_adj is not None and not math.isnan(p_adj)
        rows.append(
            RobustnessRow(
                perturbation=str(v.get("perturb") or r.label),
                run_id=r.run_id,
                n_paired=r.n_paired,
                score=r.score,
                gap=r.diff if r.diff is not None else Estimate.empty(),
                p_value=r.p_value,
                p_adjusted=float(p_adj) if ok else None,
                significant=ok and p_adj < alpha,
            )
        )
    return RobustnessReport(
        task=task,
        metric=metric,
        model=runs[0].record.model_name,
        clean=all_rows[0],
        rows=rows,
        alpha=alpha,
    )
