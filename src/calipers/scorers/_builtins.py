"""Importing this module registers the built-in scorers (``build_scorer`` does it lazily)."""

from __future__ import annotations

from calipers.scorers._bbq import bbq
from calipers.scorers._choice import choice_letter, loglikelihood_mc
from calipers.scorers._code import code_tests
from calipers.scorers._ifeval import ifeval
from calipers.scorers._lmeval_gsm8k import gsm8k_lmeval
from calipers.scorers._mc2 import loglikelihood_mc2
from calipers.scorers._numeric import numeric_match
from calipers.scorers._text import exact_match, normalized_match, regex_match

__all__ = [
    "bbq",
    "choice_letter",
    "code_tests",
    "exact_match",
    "gsm8k_lmeval",
    "ifeval",
    "loglikelihood_mc",
    "loglikelihood_mc2",
    "normalized_match",
    "numeric_match",
    "regex_match",
]
