"""Does the judge of a stored run agree with people? Judge-human agreement with intervals, a
confusion matrix, and the judge's position and length biases.

The labels file (JSONL, JSON or CSV) has ``sample_id`` and ``label`` per row, and optionally
``epoch`` (default 0) and ``task`` (rows of other tasks are ignored). Labels are what the judge
gives: ``pass``/``fail`` (or 1/0, true/false) for a pass/fail judge, a number on the judge's
scale, ``win``/``loss``/``tie`` (or 1/0/0.5) of the output against the baseline for a pairwise
judge.

Agreement: Cohen's kappa (asymptotic interval) for pass/fail and pairwise labels, with
Krippendorff's alpha beside it; Krippendorff's ordinal alpha (bootstrap over items) for a
scale, with quadratic-weighted kappa beside it. Length bias is the rank correlation of the
judge's normalised score with the answer's length in characters (pairwise: of the output's win
with its length minus the baseline's), over every judged item, and on labelled items of the
judge's score minus the human one (only the judge's *excess* preference for length). Position
bias (pairwise runs, judged in both orders) is the share of first-position wins among the pairs
whose verdict followed the position.

:func:`save_judge_calibration` writes the report into the run's summary under
``summary["judge_calibration"][task]`` so that reports can print the judge's measured agreement
next to its scores (:func:`judge_agreement_line`). Re-finalizing the run (a resume) rewrites the
summary and drops it; calibrate again then.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers.analysis._claim_calibration import ClaimCalibrationReport
from calipers.analysis._contradiction_calibration import ContradictionCalibrationReport
from calipers.analysis._judge_line import JUDGE_METRICS, JUDGE_SCORERS, judge_agreement_line
from calipers.datasets import read_records
from calipers.errors import ConfigError, DataError
from calipers.scorers import ThresholdCalibration, calibrate_threshold
from calipers.stats import cohens_kappa, krippendorff_alpha, length_bias, position_bias, wilson
from calipers.store import RunRecord, SampleRecord, Store
from calipers.types import Estimate

__all__ = [
    "JUDGE_SCORERS",
    "JudgeCalibrationReport",
    "calibrate_judge",
    "calibrate_similarity",
    "find_scorer",
    "judge_agreement_line",
    "load_labels",
    "save_judge_calibration",
]

JudgeMode = Literal["scale", "pass_fail", "pairwise"]
Key = tuple[str, int]


class JudgeCorrelation(BaseModel):
    """A rank correlation (length bias) with its two-sided p-value (None when undefined)."""

    model_config = ConfigDict(extra="forbid")

    estimate: Estimate
    p_value: float | None


class JudgePositionBias(BaseModel):
    """Pairwise judges: consistency across the two orders, and the first position's share of
    the flips (0.5 = no bias)."""

    model_config = ConfigDict(extra="forbid")

    n_pairs: int
    n_ties: int
    consistency: Estimate
    first_share: Estimate
    p_value: float | None


class JudgeCalibrationReport(BaseModel):
    """Agreement of a run's judge with human labels. Stored in the run summary as its
    ``model_dump(mode="json")`` (estimates as ``Estimate.to_dict()``); validates from it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task: str
    scorer: str
    judge: str
    mode: JudgeMode
    labels_file: str
    n_labels: int
    n_matched: int
    n_unmatched: int
    n_judge_errors: int
    statistic: str
    agreement: Estimate
    secondary: dict[str, Estimate]
    exact_agreement: Estimate
    categories: list[float]
    confusion: list[list[int]]
    judge_score: Estimate | None
    position_bias: JudgePositionBias | None
    length_bias: JudgeCorrelation | None
    length_bias_vs_human: JudgeCorrelation | None
    caveats: list[str]


def find_scorer(
    run: RunRecord, task: str | None, names: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """(task, scorer spec) of the one scorer named in ``names`` used by the run."""
    tasks = run.methodology.get("tasks", {})
    found = [
        (t, s)
        for t, m in tasks.items()
        if task in (None, t)
        for s in m.get("scorers", [])
        if s.get("name") in names
    ]
    if task is not None and task not in tasks:
        raise ConfigError(
            f"Run {run.id} has no task {task!r}.",
            hint=f"Its tasks: {', '.join(tasks) or '(none)'}.",
        )
    if len(found) != 1:
        what = "no" if not found else f"{len(found)}"
        raise ConfigError(
            f"Run {run.id} has {what} {'/'.join(names)} scorer(s)"
            f"{'' if task is None else f' on task {task!r}'}; calibration needs exactly one.",
            hint="Choose with --task and --scorer." if found else "Score the run with a judge.",
        )
    return found[0]


def load_labels(path: str | Path, task: str) -> dict[Key, Any]:
    """``(sample_id, epoch) -> label`` from a labels file, for ``task``."""
    out: dict[Key, Any] = {}
    for line, row in read_records(Path(path)):
        if row.get("task") not in (None, "", task):
            continue
        sid = row.get("sample_id", row.get("id"))
        if sid is None or "label" not in row or row["label"] in (None, ""):
            raise DataError(f"{path}:{line}: a label row needs sample_id and label.")
        try:
            key = (str(sid), int(row.get("epoch") or 0))
        except (TypeError, ValueError):
            raise DataError(
                f"{path}:{line}: epoch {row.get('epoch')!r} is not an integer."
            ) from None
        if key in out:
            raise DataError(f"{path}:{line}: sample {sid!r} is labelled twice.")
        out[key] = (row["label"], f"{path}:{line}")
    if not out:
        raise DataError(f"{path}: no labels for task {task!r}.")
    return out


_PASS = {
    "pass": 1.0,
    "yes": 1.0,
    "true": 1.0,
    "1": 1.0,
    "1.0": 1.0,
    "fail": 0.0,
    "no": 0.0,
    "false": 0.0,
    "0": 0.0,
    "0.0": 0.0,
}
_WIN = {
    "win": 1.0,
    "output": 1.0,
    "1": 1.0,
    "1.0": 1.0,
    "loss": 0.0,
    "baseline": 0.0,
    "0": 0.0,
    "0.0": 0.0,
    "tie": 0.5,
    "0.5": 0.5,
}


def _parse(raw: Any, where: str, mode: JudgeMode, scale: tuple[int, int]) -> float:
    key = str(raw).strip().lower()
    table = _PASS if mode == "pass_fail" else _WIN if mode == "pairwise" else None
    if table is not None:
        if key in table:
            return table[key]
        raise DataError(f"{where}: label {raw!r} is not one of {', '.join(sorted(table))}.")
    try:
        x = float(key)
    except ValueError:
        x = math.nan
    if not scale[0] <= x <= scale[1]:
        raise DataError(f"{where}: label {raw!r} is not a number from {scale[0]} to {scale[1]}.")
    return x


def _judged(recs: Sequence[SampleRecord], name: str, mode: JudgeMode) -> dict[Key, dict[str, Any]]:
    """Per judged record: its value on the label scale and what the bias checks need."""
    out = {}
    outcome = {"win": 1.0, "loss": 0.0, "tie": 0.5}
    for r in recs:
        meta = ((r.score_details or {}).get(name) or {}).get("metadata")
        if r.error is not None or not meta or (mode != "pairwise" and "raw_score" not in meta):
            continue  # errored, or nothing judged (a conversation with no pair to check)
        value = float(
            outcome[meta["outcome"]]
            if mode == "pairwise"
            else meta["raw_score"]
            if mode == "scale"
            else _PASS[str(meta["raw_score"]).strip().lower()]
        )
        out[(r.sample_id, r.epoch)] = {**meta, "value": value}
    return out


def _norm(x: float, mode: JudgeMode, scale: tuple[int, int]) -> float:
    return (x - scale[0]) / (scale[1] - scale[0]) if mode == "scale" else x


def _corr(c: Any) -> JudgeCorrelation:
    p = float(c.p_value)
    return JudgeCorrelation(estimate=c.estimate, p_value=None if math.isnan(p) else p)


def _agreement(
    h: list[float],
    j: list[float],
    cats: list[float],
    mode: JudgeMode,
    rng: np.random.Generator,
    c: float,
) -> tuple[str, Estimate, dict[str, Estimate]]:
    kappa = cohens_kappa(
        h, j, categories=cats, confidence=c, weights="quadratic" if mode == "scale" else "none"
    )
    level: Literal["ordinal", "nominal"] = "nominal" if mode == "pass_fail" else "ordinal"
    alpha = krippendorff_alpha([h, j], level=level, rng=rng, confidence=c)
    if mode == "scale":
        return "krippendorff_alpha_ordinal", alpha, {"cohens_kappa_quadratic": kappa}
    return "cohens_kappa", kappa, {f"krippendorff_alpha_{level}": alpha}


def _biases(
    judged: dict[Key, dict[str, Any]],
    matched: list[tuple[Key, float]],
    mode: JudgeMode,
    scale: tuple[int, int],
    rng: np.random.Generator,
    c: float,
) -> tuple[JudgePositionBias | None, JudgeCorrelation, JudgeCorrelation]:
    keys = list(judged)
    chars = np.array([judged[k]["answer_chars"] for k in keys], dtype=float)
    base = (
        np.array([judged[k]["baseline_chars"] for k in keys], dtype=float)
        if mode == "pairwise"
        else np.zeros(len(keys))
    )
    score = np.array([_norm(judged[k]["value"], mode, scale) for k in keys])
    lb = length_bias(base, chars, score, rng=rng, confidence=c)
    idx = [keys.index(k) for k, _h in matched]
    human = np.array([_norm(h, mode, scale) for _k, h in matched])
    lbh = length_bias(
        base[idx], chars[idx], score[idx], rng=rng, human_b_preferred=human, confidence=c
    )
    pb = None
    if mode == "pairwise":
        b = position_bias(
            [judged[k]["first_preferred"] for k in keys],
            [judged[k]["first_preferred_swapped"] for k in keys],
            confidence=c,
        )
        p = float(b.p_value)
        pb = JudgePositionBias(
            n_pairs=b.n_pairs,
            n_ties=b.n_ties,
            consistency=b.consistency,
            first_share=b.first_share,
            p_value=None if math.isnan(p) else p,
        )
    return pb, _corr(lb), _corr(lbh)


def _judge_score(run: RunRecord, task: str, scorer: str) -> Estimate | None:
    ts = run.task_summary(task)
    metrics = ts.metrics if ts else {}
    want = JUDGE_METRICS[scorer][0]
    found = (v for k, v in metrics.items() if k == want or k.endswith("." + want))
    return next(found, None)


Labels = str | Path | Mapping[Key, tuple[Any, str]]


def labels_name(labels: Labels, name: str | None = None) -> str:
    """How a report names its labels: the file, or ``name`` (e.g. the campaign)."""
    return name if name is not None else "labels" if isinstance(labels, Mapping) else str(labels)


def judge_spec(
    run: RunRecord, task: str | None, scorer: str | None
) -> tuple[str, dict[str, Any], JudgeMode, tuple[int, int]]:
    """(task, scorer spec, mode, scale) of the run's judge (``scorer`` chooses when a task
    has several judge scorers). ``rag_faithfulness`` is read as pass/fail: pass when every
    claim of the answer is supported; ``self_contradiction`` as 1 when the conversation
    contradicts itself; ``mt_bench_judge`` on its 1-10 scale (the dialogue's worst turn)."""
    if scorer is not None and scorer not in JUDGE_SCORERS:
        raise ConfigError(f"{scorer!r} is not a judge scorer ({', '.join(JUDGE_SCORERS)}).")
    task, spec = find_scorer(run, task, JUDGE_SCORERS if scorer is None else (scorer,))
    args = spec.get("args", {})
    mode: JudgeMode = (
        "pairwise"
        if spec["name"] == "llm_judge_pairwise"
        else "pass_fail"
        if spec["name"] in ("rag_faithfulness", "self_contradiction")
        else "scale"
        if spec["name"] == "mt_bench_judge"
        else args.get("mode", "scale")
    )
    default = (1, 10) if spec["name"] == "mt_bench_judge" else (1, 5)
    scale = (0, 1) if mode != "scale" else tuple(args.get("scale", default))
    return task, spec, mode, (int(scale[0]), int(scale[1]))


def human_labels(
    labels: Labels, task: str, mode: JudgeMode, scale: tuple[int, int]
) -> dict[Key, float]:
    """``(sample_id, epoch) -> label`` on the judge's scale, from a labels file or from
    ``{key: (raw label, where)}`` (e.g. :func:`campaign_labels`)."""
    if isinstance(labels, Mapping):
        if not labels:
            raise DataError(f"No human labels for task {task!r}.")
        table = dict(labels)
    else:
        table = load_labels(labels, task)
    return {k: _parse(raw, where, mode, scale) for k, (raw, where) in table.items()}


def calibrate_judge(
    run: RunRecord,
    samples: Sequence[SampleRecord],
    labels: Labels,
    *,
    task: str | None = None,
    scorer: str | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    source: str | None = None,
) -> JudgeCalibrationReport:
    """Agreement of the run's judge (an ``llm_judge`` or ``llm_judge_pairwise`` scorer;
    ``scorer`` chooses when a task has both) with the human labels: a labels file, or
    ``{(sample_id, epoch): (label, where)}`` from a review campaign (:func:`campaign_labels`),
    named ``source`` in the report."""
    task, spec, mode, lo_hi = judge_spec(run, task, scorer)
    args = spec.get("args", {})
    recs = [r for r in samples if r.task == task]
    judged = _judged(recs, spec["name"], mode)
    human = human_labels(labels, task, mode, lo_hi)
    present = {(r.sample_id, r.epoch) for r in recs}
    matched = [(k, h) for k, h in human.items() if k in judged]
    n_err = sum(1 for k in human if k in present and k not in judged)
    hs, js = [h for _k, h in matched], [judged[k]["value"] for k, _h in matched]
    cats = (
        [0.0, 1.0]
        if mode == "pass_fail"
        else [0.0, 0.5, 1.0]
        if mode == "pairwise"
        else sorted({float(v) for v in range(lo_hi[0], lo_hi[1] + 1)} | set(js))
    )
    rng = np.random.default_rng(seed)
    statistic, agree, secondary = _agreement(hs, js, cats, mode, rng, confidence)
    confusion = [
        [sum(1 for h, j in zip(hs, js, strict=True) if h == a and j == b) for b in cats]
        for a in cats
    ]
    pb, lb, lbh = _biases(judged, matched, mode, lo_hi, rng, confidence)
    caveats = []
    if len(matched) < 30:
        caveats.append(
            f"only {len(matched)} labelled items were judged: the agreement "
            "interval is wide; label more items to narrow it"
        )
    if len(human) - len(matched) - n_err:
        caveats.append(f"{len(human) - len(matched) - n_err} labels name samples not in the run")
    if n_err:
        caveats.append(f"{n_err} labelled samples errored and were left out")
    return JudgeCalibrationReport(
        run_id=run.id,
        task=task,
        scorer=spec["name"],
        judge=str(args.get("judge")),
        mode=mode,
        labels_file=labels_name(labels, source),
        n_labels=len(human),
        n_matched=len(matched),
        n_unmatched=len(human) - len(matched) - n_err,
        n_judge_errors=n_err,
        statistic=statistic,
        agreement=agree,
        secondary=secondary,
        exact_agreement=wilson(
            sum(h == j for h, j in zip(hs, js, strict=True)), len(hs), confidence
        ),
        categories=cats,
        confusion=confusion,
        judge_score=_judge_score(run, task, spec["name"]),
        position_bias=pb,
        length_bias=lb,
        length_bias_vs_human=lbh,
        caveats=caveats,
    )


def save_judge_calibration(
    store: Store,
    report: JudgeCalibrationReport | ClaimCalibrationReport | ContradictionCalibrationReport,
) -> None:
    """Write ``report`` (against human labels, or a judge's against planted claims or
    planted contradictions) into its run's summary under ``judge_calibration[task]``."""
    run = store.get_run(report.run_id)
    if run.summary is None or run.status != "finished":
        raise ConfigError(
            f"Run {run.id} is {run.status}: its summary is not final.",
            hint="Finish (resume) the run first, or use --no-save.",
        )
    stored = dict(run.summary.judge_calibration or {})
    stored[report.task] = report.model_dump(mode="json")
    store.update_run(run.id, summary=run.summary.model_copy(update={"judge_calibration": stored}))


def calibrate_similarity(
    run: RunRecord,
    samples: Sequence[SampleRecord],
    labels: str | Path,
    *,
    task: str | None = None,
    seed: int = 0,
    criterion: Literal["youden", "f1"] = "youden",
    confidence: float = 0.95,
) -> ThresholdCalibration:
    """A threshold for the run's ``semantic_similarity`` scores from human match labels (1/0)
    in ``labels``; the calibration names the backend it is valid for."""
    task, _spec = find_scorer(run, task, ("semantic_similarity",))
    sims: dict[Key, float] = {}
    backends = set()
    for r in samples:
        meta = ((r.score_details or {}).get("semantic_similarity") or {}).get("metadata")
        if r.task != task or r.error is not None or not meta or not r.scores:
            continue
        key = next(k for k in r.scores if k == "similarity" or k.endswith(".similarity"))
        sims[(r.sample_id, r.epoch)] = r.scores[key]
        backends.add((meta.get("backend"), meta.get("model")))
    if len(backends) > 1:
        raise DataError(f"Run {run.id} mixes similarity backends {sorted(map(str, backends))}.")
    table = load_labels(labels, task)
    keys = [k for k in table if k in sims]
    if not keys:
        raise DataError(f"{labels}: no label names a scored sample of run {run.id}.")
    backend, model = next(iter(backends))
    return calibrate_threshold(
        [sims[k] for k in keys],
        [table[k][0] for k in keys],
        rng=np.random.default_rng(seed),
        criterion=criterion,
        backend=backend,
        model=model,
        confidence=confidence,
    )
