"""Scorers: async ``(sample, output) -> Score`` callables built by registered factories."""

from calipers.scorers import _checks, _judge, _refusal, _similarity  # noqa: F401 - registers
from calipers.scorers._base import Scorer, ScorerSpec, build_scorer, list_scorers, scorer

__all__ = ["Scorer", "ScorerSpec", "build_scorer", "list_scorers", "scorer"]
