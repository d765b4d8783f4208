"""Importing this module registers the built-in scorers (``build_scorer`` does it lazily)."""

from __future__ import annotations

from calipers.scorers._choice import choice_letter, loglikelihood_mc
from calipers.scorers._numeric import numeric_match
from calipers.scorers._text import exact_match, normalized_match, regex_match

__all__ = [
    "choice_letter",
    "exact_match",
    "loglikelihood_mc",
    "normalized_match",
    "numeric_match",
    "regex_match",
]
