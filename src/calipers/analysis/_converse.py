"""Conversation probes as studies: the probe's runs next to their single-turn control, paired
item by item.

- ``reask``: the control, then the item asked again after neutral turns. Consistency (the same
  extracted answer both times), both-correct, and the re-asked accuracy against the control.
- ``challenge``: the control, then "Are you sure? I think it is X.". Flip rate (right, then
  wrong) over the items first answered right; correction rate (wrong, then right) over those
  first answered wrong; how often the second answer is the challenger's X (adopted) or no
  readable answer at all (unanswered); the accuracy after the challenge against the control.
- ``sharded``: FULL (the control), CONCAT and SHARDED (Laban et al. 2025). Accuracy per arm,
  CONCAT − FULL and SHARDED − FULL paired (Holm); over ``--epochs`` at a temperature above 0,
  aptitude (per item, the 90th percentile of its scores over the repeats, averaged over items)
  and unreliability (per item, 90th − 10th percentile, averaged), bootstrap intervals over items.
- ``recollection``: an instruction at turn 1 checked at turn d; the rate followed per d, the
  Cochran–Armitage trend over d, and each d against d = 1 (the instruction in the item's own
  turn: the control) paired by item (Holm).

Every rate is a Wilson interval (a cluster-robust one over items when there are repeats);
paired differences use ``calipers.stats.paired_compare`` (McNemar and Newcombe for 0/1 scores,
a paired bootstrap for per-item means over repeats).
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calipers._util.seeding import derived_rng
from calipers.errors import ConfigError
from calipers.models import ModelProvider, resolve_model
from calipers.runner import Progress, RunConfig, arun, make_plan
from calipers.stats import (
    PairedResult,
    TrendTest,
    adjust,
    bootstrap_mean,
    clustered_mean,
    cochran_armitage,
    mean_over_items,
    paired_compare,
    wilson,
)
from calipers.store import SampleRecord, Store
from calipers.tasks.conversation import PROBES, probe_name
from calipers.types import Estimate

__all__ = [
    "CLI_PROBES",
    "ConversationReport",
    "ProbeComparison",
    "ProbeReport",
    "analyze_probe",
    "aptitude",
    "conversation_turns",
    "probe_arms",
    "run_probe",
    "turn_rates",
]

CLI_PROBES = ("reask", "challenge", "sharded", "recollection")


@dataclass(frozen=True)
class ProbeComparison:
    """``arm`` against ``against`` on the same items (``diff`` = arm − against)."""

    label: str
    result: PairedResult
    p_holm: float

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "label": self.label,
            "n": r.n,
            "diff": r.diff.to_dict(),
            "test": r.test,
            "p_value": None if math.isnan(r.p_value) else r.p_value,
            "p_holm": None if math.isnan(self.p_holm) else self.p_holm,
            "mde": None if math.isnan(r.mde) else r.mde,
        }


@dataclass(frozen=True)
class ProbeReport:
    probe: str
    task: str
    model: str
    runs: dict[str, str]  # arm -> run id
    rates: dict[str, Estimate]
    comparisons: tuple[ProbeComparison, ...] = ()
    trend: TrendTest | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "probe": self.probe,
            "task": self.task,
            "model": self.model,
            "runs": self.runs,
            "rates": {k: v.to_dict() for k, v in self.rates.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "notes": list(self.notes),
        }
        if self.trend is not None:
            t = self.trend
            out["trend"] = {
                "test": "cochran-armitage",
                "z": None if math.isnan(t.z) else t.z,
                "p_value": None if math.isnan(t.p_value) else t.p_value,
                "slope_per_turn": t.slope.to_dict(),
                "n": t.n,
            }
        return out


# -- planning and running ----------------------------------------------------------------------


def probe_arms(
    probe: str, task: str, options: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """``(arm, task name)`` for each run of a probe study, the control first."""
    if probe not in CLI_PROBES:
        raise ConfigError(f"Unknown probe {probe!r}.", hint=f"Probes: {', '.join(CLI_PROBES)}.")
    opts = options or {}
    control = ("control", probe_name("control", task))
    if probe == "sharded":
        return [
            ("full", control[1]),
            ("concat", probe_name("concat", task)),
            ("sharded", probe_name("sharded", task)),
        ]
    if probe == "recollection":
        return [("recollection", probe_name("recollection", task, opts))]
    return [control, (probe, probe_name(probe, task, opts))]


def run_probe(
    base: RunConfig,
    probe: str,
    store: Store,
    *,
    options: dict[str, Any] | None = None,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
) -> ProbeReport:
    """Run a probe study on ``base.tasks[0]`` with ``base``'s model and options (each arm an
    ordinary stored run, resumable and cached), then analyse it."""
    if len(base.tasks) != 1:
        raise ConfigError("A probe takes exactly one task.", hint="calipers converse probe -t TASK")
    if probe == "sharded" and base.epochs > 1 and (base.temperature or 0) <= 0:
        raise ConfigError(
            "Aptitude and unreliability need repeats that can differ.",
            hint="Add --temperature 0.7 (Laban et al. use 1.0) to --epochs.",
        )
    provider = provider or resolve_model(base.model, base.model_options)
    arms = probe_arms(probe, base.tasks[0], options)
    configs = [(arm, base.model_copy(update={"tasks": (name,)})) for arm, name in arms]
    for _arm, config in configs:
        make_plan(config, provider)  # a bad task or option fails before any model call
    runs: dict[str, str] = {}
    records: dict[str, list[SampleRecord]] = {}
    for arm, config in configs:
        result = asyncio.run(arun(config, store, provider=provider, progress=progress))
        runs[arm] = result.run_id
        records[arm] = store.get_samples(result.run_id)
    return analyze_probe(
        probe,
        records,
        runs=runs,
        task=base.tasks[0],
        model=base.model,
        seed=base.seed,
        confidence=base.confidence,
    )


# -- analysis ------------------------------------------------------------------------------------


def _primary(records: Sequence[SampleRecord]) -> str:
    for r in records:
        if r.scores:
            return next(iter(r.scores))
    raise ConfigError("The control run has no scored samples.", hint="See `calipers show`.")


def _by_item(records: Sequence[SampleRecord], metric: str) -> dict[str, list[float]]:
    """Per item (sample id), its values of ``metric`` over epochs; errors and left-out
    outcomes are skipped."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.error is None and r.scores and metric in r.scores:
            v = r.scores[metric]
            if v is not None and not math.isnan(v):
                out[r.sample_id].append(float(v))
    return out


def _rate(values: dict[str, list[float]], confidence: float) -> Estimate:
    """Wilson for one 0/1 value per item. With epochs, the items' means over their epochs
    with an interval over items (``stats.mean_over_items``: never below 0%, above 100% or of
    zero width at an end, as a t interval over a rare 0/1 outcome is); other scores: a
    cluster-robust mean over items."""
    flat = [(k, v) for k, vs in values.items() for v in vs]
    if not flat:
        return Estimate.empty("wilson", confidence)
    if all(len(vs) == 1 for vs in values.values()) and all(v in (0.0, 1.0) for _k, v in flat):
        return wilson(int(sum(v for _k, v in flat)), len(flat), confidence)
    if all(0.0 <= v <= 1.0 for _k, v in flat):
        means = [float(np.mean(vs)) for vs in values.values() if vs]
        est = mean_over_items(means, np.random.default_rng(0), confidence)
        n = len(flat)  # scored replies, as the other rates count
        return Estimate(est.value, est.low, est.high, n, est.method, est.confidence)
    return clustered_mean([v for _k, v in flat], [k for k, _v in flat], confidence)


def _pair(
    a: dict[str, list[float]], b: dict[str, list[float]], seed: int, label: str, c: float
) -> PairedResult:
    items = sorted(set(a) & set(b))
    x = [float(np.mean(a[i])) for i in items]
    y = [float(np.mean(b[i])) for i in items]
    return paired_compare(x, y, rng=derived_rng(seed, "converse", label), confidence=c)


def aptitude(
    values: dict[str, list[float]], rng: np.random.Generator, confidence: float = 0.95
) -> tuple[Estimate, Estimate]:
    """Laban et al.'s aptitude and unreliability over items with repeats: per item the 90th
    percentile of its scores (aptitude) and the 90th − 10th (unreliability), each averaged over
    items with a bootstrap interval. Items with fewer than two repeats are left out."""
    rows = [np.asarray(v, dtype=float) for v in values.values() if len(v) >= 2]
    a90 = [float(np.percentile(v, 90)) for v in rows]
    spread = [float(np.percentile(v, 90) - np.percentile(v, 10)) for v in rows]
    if all(0.0 <= v <= 1.0 for v in a90 + spread):  # scores in [0, 1]: never a zero width
        return mean_over_items(a90, rng, confidence), mean_over_items(spread, rng, confidence)
    return bootstrap_mean(a90, rng, confidence), bootstrap_mean(spread, rng, confidence)


def _compare(
    pairs: list[tuple[str, dict[str, list[float]], dict[str, list[float]]]], seed: int, c: float
) -> tuple[ProbeComparison, ...]:
    results = [(label, _pair(a, b, seed, label, c)) for label, a, b in pairs]
    ps = [r.p_value for _l, r in results]
    finite = [p for p in ps if not math.isnan(p)]
    holm = iter(adjust(finite, "holm")) if finite else iter(())
    return tuple(
        ProbeComparison(label, r, math.nan if math.isnan(r.p_value) else next(holm))
        for label, r in results
    )


def analyze_probe(
    probe: str,
    records: dict[str, list[SampleRecord]],
    *,
    runs: dict[str, str] | None = None,
    task: str = "",
    model: str = "",
    seed: int = 0,
    confidence: float = 0.95,
) -> ProbeReport:
    """The study's figures from the stored records of each arm (``probe_arms``' labels)."""
    c = confidence
    if probe not in PROBES:
        raise ConfigError(f"Unknown probe {probe!r}.")
    rates: dict[str, Estimate] = {}
    notes: list[str] = []
    comps: tuple[ProbeComparison, ...] = ()
    trend = None
    if probe in ("reask", "challenge"):
        ctl = records["control"]
        control = _by_item(ctl, _primary(ctl))
        arm = records[probe]
        rates["control correct"] = _rate(control, c)
        metrics = (
            ("first_correct", "final_correct", "consistent", "both_correct")
            if probe == "reask"
            else ("first_correct", "final_correct", "flipped", "corrected", "adopted", "unanswered")
        )
        for m in metrics:
            rates[m] = _rate(_by_item(arm, m), c)
        comps = _compare(
            [
                (f"{probe}: final − control", control, _by_item(arm, "final_correct")),
                (f"{probe}: first − control", control, _by_item(arm, "first_correct")),
            ],
            seed,
            c,
        )
    elif probe == "sharded":
        vals = {a: _by_item(records[a], _primary(records["full"])) for a in records}
        for a, v in vals.items():
            rates[f"{a} correct"] = _rate(v, c)
        if any(len(vs) >= 2 for vs in vals["full"].values()):
            for a, v in vals.items():
                apt, unrel = aptitude(v, derived_rng(seed, "aptitude", a), c)
                rates[f"{a} aptitude"], rates[f"{a} unreliability"] = apt, unrel
        else:
            notes.append("aptitude and unreliability need --epochs 2+ at a temperature above 0")
        comps = _compare(
            [(f"{a} − full", vals["full"], vals[a]) for a in ("concat", "sharded") if a in vals],
            seed,
            c,
        )
    else:
        comps, trend = _recollection(records["recollection"], rates, seed, c)
        notes.append(
            "d = 1 (the instruction in the item's own turn) is the control; the same items "
            "appear at every d, which makes the trend test conservative"
        )
    return ProbeReport(probe, task, model, dict(runs or {}), rates, comps, trend, tuple(notes))


def _recollection(
    recs: Sequence[SampleRecord], rates: dict[str, Estimate], seed: int, c: float
) -> tuple[tuple[ProbeComparison, ...], TrendTest]:
    by_d: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item, vs in _by_item(recs, "followed").items():
        base, _sep, dist = item.rpartition("@d")
        by_d[int(dist)][base].extend(vs)
    ds = sorted(by_d)
    for d in ds:
        rates[f"followed at turn {d}"] = _rate(by_d[d], c)
    counts = [
        (int(sum(sum(v) for v in by_d[d].values())), sum(len(v) for v in by_d[d].values()))
        for d in ds
    ]
    trend = cochran_armitage([k for k, _n in counts], [n for _k, n in counts], ds, c)
    comps = _compare([(f"d={d} − d={ds[0]}", by_d[ds[0]], by_d[d]) for d in ds[1:]], seed, c)
    return comps, trend


# -- conversation tasks: checks per turn -------------------------------------------------------


@dataclass(frozen=True)
class ConversationReport:
    """One run of a conversation task: the share of conversations passing every check, and
    per turn the share of conversations whose checks at that turn all pass."""

    run_id: str
    all_checks: Estimate
    turns: dict[int, Estimate]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "all_checks": self.all_checks.to_dict(),
            "turns": {str(k): v.to_dict() for k, v in self.turns.items()},
        }


def turn_rates(
    records: Sequence[SampleRecord], run_id: str = "", confidence: float = 0.95
) -> ConversationReport:
    """All-checks and per-turn pass rates (Wilson) from a conversation run's records
    (``score_details["conversation_checks"]["metadata"]["checks"]``); errors are left out."""
    per_turn: dict[int, list[bool]] = defaultdict(list)
    for r in records:
        if r.error is not None or not r.score_details:
            continue
        checks = r.score_details.get("conversation_checks", {}).get("metadata", {}).get("checks")
        at: dict[int, bool] = {}
        for ch in checks or ():
            at[int(ch["turn"])] = at.get(int(ch["turn"]), True) and bool(ch["passed"])
        for turn, ok in at.items():
            per_turn[turn].append(ok)
    ok_all = [r.scores["all_checks"] for r in records if r.error is None and r.scores]
    return ConversationReport(
        run_id,
        wilson(int(sum(ok_all)), len(ok_all), confidence),
        {t: wilson(sum(v), len(v), confidence) for t, v in sorted(per_turn.items())},
    )


def conversation_turns(
    config: RunConfig,
    store: Store,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
) -> ConversationReport:
    """Run a conversation task (``config.tasks[0]``) and report its checks per turn."""
    result = asyncio.run(arun(config, store, provider=provider, progress=progress))
    return turn_rates(store.get_samples(result.run_id), result.run_id, config.confidence)
