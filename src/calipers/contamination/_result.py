"""What a memorisation probe returns: per-item scores against paired controls, the paired
difference with its interval, the flagged items, and what the number can and cannot prove."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from calipers.errors import CalipersError
from calipers.models import ModelProvider
from calipers.stats import paired_compare
from calipers.types import Estimate

__all__ = [
    "ItemScore",
    "ProbeResult",
    "Progress",
    "model_name",
    "paired_result",
    "render_probe",
    "skipped",
    "with_reference",
]

# ``progress(done, total)`` after each item.
Progress = Callable[[int, int], None]


def model_name(model: ModelProvider) -> str:
    """The model's identity name; the provider name when the identity cannot be had (an API
    server that is not reachable), so a skipped probe can still say whose it is."""
    try:
        return model.identity().name
    except CalipersError:
        return model.provider_name


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


@dataclass(frozen=True)
class ItemScore:
    """One benchmark item: its score, its paired control's score (NaN when the model call
    failed), whether it is flagged, and a short ``detail`` (a guess, a continuation)."""

    id: str
    item: float
    control: float
    flagged: bool = False
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item": _num(self.item),
            "control": _num(self.control),
            "flagged": self.flagged,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ItemScore:
        return cls(
            str(d["id"]),
            _float(d["item"]),
            _float(d["control"]),
            bool(d.get("flagged", False)),
            str(d.get("detail", "")),
        )


@dataclass(frozen=True)
class ProbeResult:
    """A probe's verdict material. ``difference`` is ``mean(item - control)`` over the items
    whose item and control were both scored (positive: benchmark items look more memorised than
    their controls). ``skipped`` holds the reason a probe did not apply; then every estimate is
    empty (NaN, n = 0), never 0. ``reference`` is the same difference on a reference set of
    items the model cannot have seen, and ``excess`` is ``difference - reference`` (None when
    no reference was run)."""

    probe: str
    metric: str
    model: str
    caveat: str
    item_mean: Estimate
    control_mean: Estimate
    difference: Estimate
    p_value: float
    test: str
    items: tuple[ItemScore, ...] = ()
    n_errors: int = 0
    n_excluded: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None
    reference: Estimate | None = None
    excess: Estimate | None = None

    @property
    def flagged(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.items if s.flagged)

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "metric": self.metric,
            "model": self.model,
            "caveat": self.caveat,
            "skipped": self.skipped,
            "item_mean": self.item_mean.to_dict(),
            "control_mean": self.control_mean.to_dict(),
            "difference": self.difference.to_dict(),
            "p_value": _num(self.p_value),
            "test": self.test,
            "n_errors": self.n_errors,
            "n_excluded": self.n_excluded,
            "flagged": list(self.flagged),
            "settings": dict(self.settings),
            "items": [s.to_dict() for s in self.items],
            "reference": None if self.reference is None else self.reference.to_dict(),
            "excess": None if self.excess is None else self.excess.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProbeResult:
        """The result from its ``to_dict()`` (read back from JSON)."""
        return cls(
            probe=d["probe"],
            metric=d["metric"],
            model=d["model"],
            caveat=d["caveat"],
            item_mean=Estimate.from_dict(d["item_mean"]),  # JSON (to_dict()) read back
            control_mean=Estimate.from_dict(d["control_mean"]),  # JSON (to_dict()) read back
            difference=Estimate.from_dict(d["difference"]),  # JSON (to_dict()) read back
            p_value=_float(d["p_value"]),
            test=d["test"],
            items=tuple(ItemScore.from_dict(s) for s in d.get("items", [])),
            n_errors=int(d.get("n_errors", 0)),
            n_excluded=int(d.get("n_excluded", 0)),
            settings=dict(d.get("settings", {})),
            skipped=d.get("skipped"),
            reference=_estimate(d.get("reference")),
            excess=_estimate(d.get("excess")),
        )


def _estimate(d: dict[str, Any] | None) -> Estimate | None:
    # an optional estimate read back from JSON (ProbeResult.from_dict)
    return None if d is None else Estimate.from_dict(d)


def skipped(
    probe: str,
    metric: str,
    model: str,
    caveat: str,
    reason: str,
    settings: dict[str, Any] | None = None,
    *,
    n_excluded: int = 0,
) -> ProbeResult:
    """A probe that does not apply: no numbers, a reason."""
    empty = Estimate.empty("none")
    return ProbeResult(
        probe,
        metric,
        model,
        caveat,
        empty,
        empty,
        empty,
        math.nan,
        "none",
        n_excluded=n_excluded,
        settings=settings or {},
        skipped=reason,
    )


def paired_result(
    probe: str,
    metric: str,
    model: str,
    caveat: str,
    items: Sequence[ItemScore],
    *,
    seed: int,
    settings: dict[str, Any],
    n_excluded: int = 0,
) -> ProbeResult:
    """Summarise per-item (item, control) scores with the paired comparison of
    :func:`calipers.stats.paired_compare` (control as A, item as B): 0/1 scores get Wilson
    means, Newcombe's paired interval and McNemar; other scores a paired bootstrap and a
    sign-flip permutation test. Items with a failed call are counted in ``n_errors``."""
    a = np.array([s.control for s in items], dtype=np.float64)
    b = np.array([s.item for s in items], dtype=np.float64)
    errors = int(np.count_nonzero(np.isnan(a) | np.isnan(b)))
    res = paired_compare(a, b, rng=np.random.default_rng(seed))
    return ProbeResult(
        probe,
        metric,
        model,
        caveat,
        res.mean_b,
        res.mean_a,
        res.diff,
        res.p_value,
        res.test,
        tuple(items),
        errors,
        n_excluded,
        settings,
    )


def with_reference(result: ProbeResult, reference: ProbeResult) -> ProbeResult:
    """``result`` with the reference set's paired difference and the excess
    ``difference - reference.difference``. The two sets are independent, so the excess interval
    combines the two difference intervals by MOVER (square-and-add; Zou & Donner 2008, the
    construction behind Newcombe's interval): ``low = e - sqrt((d1 - l1)^2 + (u2 - d2)^2)``,
    ``high = e + sqrt((u1 - d1)^2 + (d2 - l2)^2)``. It inherits their validity (Newcombe at small
    n for 0/1 probes, BCa otherwise) and never collapses to a point when they do not."""
    a, b = result.difference, reference.difference
    if a.is_empty or b.is_empty or result.skipped or reference.skipped:
        excess = Estimate.empty("mover", a.confidence)
    else:
        e = a.value - b.value
        low = e - math.hypot(a.value - a.low, b.high - b.value)
        high = e + math.hypot(a.high - a.value, b.value - b.low)
        excess = Estimate(e, low, high, a.n + b.n, "mover", a.confidence)
    return dataclasses.replace(result, reference=b, excess=excess)


def _fmt(e: Estimate) -> str:
    return e.format(digits=3) + f"  (n={e.n}, {e.method})" if not e.is_empty else "n/a (n=0)"


def render_probe(result: ProbeResult, *, max_flagged: int = 10) -> RenderableType:
    """A short terminal rendering: the three estimates, the test, the flagged items and the
    caveat; a skipped probe shows its reason instead of numbers."""
    title = f"{result.probe} — {result.model}"
    if result.skipped:
        return Group(Text(title, style="bold"), Text(f"skipped: {result.skipped}", style="yellow"))
    t = Table(title=title, title_justify="left", header_style="bold", show_header=False)
    t.add_column("what")
    t.add_column("value")
    t.add_row(f"benchmark items ({result.metric})", _fmt(result.item_mean))
    t.add_row("paired controls", _fmt(result.control_mean))
    t.add_row("difference (item - control)", _fmt(result.difference))
    if result.reference is not None and result.excess is not None:
        t.add_row("same difference, reference items", _fmt(result.reference))
        t.add_row("excess over the reference", _fmt(result.excess))
    p = "n/a" if math.isnan(result.p_value) else f"{result.p_value:.3g}"
    t.add_row("test", f"{result.test}, p = {p}")
    flagged = result.flagged
    shown = ", ".join(flagged[:max_flagged]) + (" ..." if len(flagged) > max_flagged else "")
    t.add_row("flagged items", f"{len(flagged)}" + (f": {shown}" if flagged else ""))
    if result.n_errors or result.n_excluded:
        t.add_row("errors / excluded", f"{result.n_errors} / {result.n_excluded}")
    return Group(t, Text(result.caveat, style="dim"))
