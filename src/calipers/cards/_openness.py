"""Openness along seven dimensions, classified into four classes by one written-down rule.

Each dimension has a level (``closed`` / ``partial`` / ``open``) with evidence; a dimension the
card does not assess counts as ``closed``. The rule is checked top to bottom and the first
match wins; the verdict names the dimensions that decided it:

1. **fully open**: all seven dimensions are ``open`` (weights, architecture, training methods,
   training data, inference code, documentation, and a licence that permits use and
   modification) - transparent and modifiable.
2. **inspectable**: the weights are ``open`` or ``partial`` - the model itself can be
   downloaded, run and examined - but at least one dimension is short of ``open`` (typically
   training data, training methods, or licence rights).
3. **described**: the weights are ``closed``, but the documentation is at least ``partial`` and
   at least one of architecture, training methods or training data is at least ``partial`` - the
   model is documented, little of it is visible.
4. **opaque**: everything else - almost nothing is released or described.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from calipers.cards._card import Level, Openness

__all__ = [
    "DIMENSIONS",
    "DIMENSION_NAMES",
    "OPENNESS_CLASSES",
    "OpennessClass",
    "OpennessVerdict",
    "classify_openness",
]

OpennessClass = Literal["opaque", "described", "inspectable", "fully open"]
OPENNESS_CLASSES: tuple[OpennessClass, ...] = ("opaque", "described", "inspectable", "fully open")

DIMENSIONS: tuple[str, ...] = (
    "weights",
    "architecture",
    "training_methods",
    "training_data",
    "inference_code",
    "documentation",
    "licence",
)
DIMENSION_NAMES = {
    "weights": "weights",
    "architecture": "architecture",
    "training_methods": "training methods",
    "training_data": "training data",
    "inference_code": "inference code",
    "documentation": "documentation",
    "licence": "licence (use and modification)",
}
_DESCRIBING = ("architecture", "training_methods", "training_data")


@dataclass(frozen=True)
class OpennessVerdict:
    openness_class: OpennessClass
    decided_by: tuple[str, ...]
    reason: str
    levels: dict[str, Level | None]  # None: not assessed (counted as closed)


def _levels(o: Openness) -> dict[str, Level | None]:
    out: dict[str, Level | None] = {}
    for d in DIMENSIONS:
        a = getattr(o, d)
        out[d] = None if a is None else a.level
    return out


def _say(dims: tuple[str, ...], levels: dict[str, Level | None]) -> str:
    parts = [f"{DIMENSION_NAMES[d]} {levels[d] or 'not assessed'}" for d in dims]
    return ", ".join(parts)


def classify_openness(openness: Openness) -> OpennessVerdict:
    """Apply the rule in this module's docstring; deterministic, and says why."""
    levels = _levels(openness)
    eff = {d: (lv or "closed") for d, lv in levels.items()}
    short = tuple(d for d in DIMENSIONS if eff[d] != "open")
    if not short:
        return OpennessVerdict("fully open", DIMENSIONS, "all seven dimensions are open", levels)
    if eff["weights"] != "closed":
        decided = ("weights", *(d for d in short if d != "weights"))
        return OpennessVerdict(
            "inspectable",
            decided,
            f"weights {eff['weights']}: the model can be examined; not fully open because "
            f"{_say(tuple(d for d in short if d != 'weights') or ('weights',), levels)}",
            levels,
        )
    visible = tuple(d for d in _DESCRIBING if eff[d] != "closed")
    if eff["documentation"] != "closed" and visible:
        return OpennessVerdict(
            "described",
            ("weights", "documentation", *visible),
            f"weights closed, but {_say(('documentation', *visible), levels)}",
            levels,
        )
    return OpennessVerdict(
        "opaque",
        ("weights", "documentation", *_DESCRIBING),
        f"weights closed and too little described: {_say(('documentation', *_DESCRIBING), levels)}",
        levels,
    )
