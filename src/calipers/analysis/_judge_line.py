"""Whether a judge-scored task's judge is calibrated, and the line reports print next to its
scores: the judge's stored agreement with people, or "uncalibrated". Apart from the
calibration itself so that showing a run does not import the statistics that measuring
agreement needs.

A calibration is on record when ``calipers judge-calibrate`` saved one (in a run summary's
``judge_calibration[task]``) for the same judge model, scorer and task: the run's own, or one
saved in another run (pass those runs' records as ``saved``, e.g. ``store.list_runs()``).
:func:`judge_calibration` is the one test every view uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calipers.store import RunRecord
from calipers.types import Estimate

__all__ = [
    "JUDGE_METRICS",
    "JUDGE_SCORERS",
    "PLANTED_SCORERS",
    "board_calibrations",
    "is_judge_metric",
    "judge_agreement_line",
    "judge_calibration",
    "judge_calibrations",
    "metric_calibration",
    "row_calibrations",
]

JUDGE_SCORERS = (
    "llm_judge",
    "llm_judge_pairwise",
    "rag_faithfulness",
    "mt_bench_judge",
    "self_contradiction",
)
# the metrics each judge scorer writes, headline first (a summary may prefix them "scorer.")
JUDGE_METRICS = {
    "llm_judge": ("judge",),
    "llm_judge_pairwise": ("win", "consistent"),
    "rag_faithfulness": ("faithfulness", "unsupported_claims"),
    "mt_bench_judge": ("mtb_score", "mtb_turn_mean", "mtb_overall"),
    "self_contradiction": ("contradiction", "contradiction_rate"),
}
# judges calibrated on planted items of known truth (``judge-calibrate --planted``), by the
# statistic their stored calibration names
PLANTED_SCORERS = ("rag_faithfulness", "self_contradiction")
_PLANTED_STATISTICS = {
    "claim_accuracy": "planted claims",
    "contradiction_accuracy": "planted pairs",
}

_NAMES = {
    "cohens_kappa": "Cohen's kappa",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha (ordinal)",
    "claim_accuracy": "claim-label accuracy",
    "contradiction_accuracy": "contradiction-label accuracy",
}


def _stored(run: RunRecord) -> dict[str, dict[str, Any]]:
    return dict((run.summary.judge_calibration if run.summary else None) or {})


def _judges(run: RunRecord, task: str) -> list[tuple[str, str]]:
    """(scorer name, judge model) of each judge scorer of ``task`` (a scorer that can work
    without a judge, ``self_contradiction``, counts only when it names one)."""
    scorers = run.methodology.get("tasks", {}).get(task, {}).get("scorers", [])
    return [
        (s["name"], str((s.get("args") or {}).get("judge")))
        for s in scorers
        if s.get("name") in JUDGE_SCORERS and (s.get("args") or {}).get("judge") is not None
    ]


def judge_calibration(
    run: RunRecord, task: str, saved: Iterable[RunRecord] = ()
) -> dict[str, Any] | None:
    """None when no judge scored ``task``; else ``{"scorer", "judge", "calibrated",
    "calibration"}``: ``calibrated`` is true when a calibration of the same judge model,
    scorer and task is on record in ``run`` or in one of the ``saved`` runs (the run's own
    first, then in the order given); ``calibration`` names it (run id, statistic, agreement as
    ``Estimate.to_dict()``, labelled items, labels source) or is None."""
    judges = _judges(run, task)
    if not judges:
        return None
    for scorer, judge in judges:
        for other in (run, *saved):
            cal = _stored(other).get(task)
            if cal and cal.get("scorer") == scorer and cal.get("judge") == judge:
                return {
                    "scorer": scorer,
                    "judge": judge,
                    "calibrated": True,
                    "calibration": {
                        "run_id": cal.get("run_id", other.id),
                        "statistic": cal["statistic"],
                        "agreement": cal["agreement"],
                        "n_matched": cal.get("n_matched"),
                        "labels": cal.get("labels_file"),
                    },
                }
    scorer, judge = judges[0]
    return {"scorer": scorer, "judge": judge, "calibrated": False, "calibration": None}


def judge_calibrations(run: RunRecord, saved: Iterable[RunRecord] = ()) -> dict[str, Any]:
    """:func:`judge_calibration` of each judge-scored task of ``run`` (for ``--json``)."""
    others = list(saved)
    tasks = list(run.methodology.get("tasks", {}))
    found = {t: judge_calibration(run, t, others) for t in tasks}
    return {t: v for t, v in found.items() if v is not None}


def is_judge_metric(metric: str, status: Mapping[str, Any]) -> bool:
    """Whether ``metric`` (maybe ``scorer.metric``) is one its judge scorer wrote."""
    names = JUDGE_METRICS.get(str(status.get("scorer")), ())
    return any(metric == m or metric.endswith("." + m) for m in names)


def metric_calibration(
    run: RunRecord, task: str, metric: str, saved: Iterable[RunRecord] = ()
) -> dict[str, Any] | None:
    """:func:`judge_calibration` when ``metric`` of ``task`` is a judge's score, else None:
    what a view that shows one metric (compare, leaderboard) marks."""
    status = judge_calibration(run, task, saved)
    return status if status is not None and is_judge_metric(metric, status) else None


def row_calibrations(
    rows: Sequence[Any], runs: Iterable[RunRecord], saved: Iterable[RunRecord] = ()
) -> dict[int, dict[str, Any]]:
    """For the judge-based rows of a comparison (``ComparisonSet.rows``), by row index:
    ``calibrated`` (true when each run's judge is) and ``judge_calibration``, each run's
    :func:`metric_calibration`. ``runs`` are the compared runs' records."""
    by_id, others = {r.id: r for r in runs}, list(saved)
    out: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        found = {
            rid: metric_calibration(by_id[rid], row.task, row.metric, others)
            for rid in (row.run_a, row.run_b)
        }
        if any(v is not None for v in found.values()):
            ok = all(v is None or v["calibrated"] for v in found.values())
            out[i] = {"calibrated": ok, "judge_calibration": found}
    return out


def board_calibrations(
    boards: Sequence[Any], runs: Iterable[RunRecord], saved: Iterable[RunRecord] = ()
) -> list[list[dict[str, Any] | None]]:
    """Per leaderboard board (``Board``), per entry: its run's :func:`metric_calibration` on
    the board's task and metric (None: not a judge's score). ``runs``: the ranked runs."""
    by_id, others = {r.id: r for r in runs}, list(saved)
    return [
        [metric_calibration(by_id[e.run_id], b.task, b.metric, others) for e in b.entries]
        for b in boards
    ]


def judge_agreement_line(run: RunRecord, task: str, saved: Iterable[RunRecord] = ()) -> str | None:
    """One line for reports next to a judge-scored task's scores: its stored judge-human
    agreement, or "uncalibrated" when none is on record; None when no judge scored ``task``."""
    status = judge_calibration(run, task, saved)
    if status is None:
        return None
    cal = status["calibration"]
    if cal is None:
        planted = " or --planted" if status["scorer"] in PLANTED_SCORERS else ""
        return (
            f"uncalibrated: judge-human agreement not measured "
            f"(calipers judge-calibrate {run.id} --labels FILE or --campaign NAME{planted})"
        )
    # the report is stored in the run summary as JSON (types cannot hold the analysis type)
    est = Estimate.from_dict(cal["agreement"])
    where = "" if cal["run_id"] == run.id else f", calibrated on run {cal['run_id']}"
    truth = _PLANTED_STATISTICS.get(cal["statistic"])  # a judge against planted truth
    return (
        f"judge-{'truth' if truth else 'human'} agreement: "
        f"{_NAMES.get(cal['statistic'], cal['statistic'])} {est.format()} "
        f"(n={est.n} {truth or 'labelled items'}, "
        f"judge {status['judge']}{where})"
    )
