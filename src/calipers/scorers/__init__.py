"""Scorers: async ``(sample, output) -> Score`` callables built by registered factories
(entry point group ``calipers.scorers``: each built-in is loaded on first use by name)."""

from calipers.scorers._base import Scorer, ScorerSpec, build_scorer, list_scorers, scorer
from calipers.scorers._refusal import DEFAULT_REFUSAL_PATTERNS, detect_refusal

__all__ = [
    "DEFAULT_REFUSAL_PATTERNS",
    "Scorer",
    "ScorerSpec",
    "build_scorer",
    "detect_refusal",
    "list_scorers",
    "scorer",
]
