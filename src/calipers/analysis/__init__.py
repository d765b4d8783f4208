"""Comparing runs: paired tests, intervals, corrected p-values and verdicts in words."""

from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
from calipers.analysis._compare import ComparisonRow, ComparisonSet, compare, load_runs

__all__ = [
    "ComparisonRow",
    "ComparisonSet",
    "Paired",
    "StoredRun",
    "compare",
    "load_runs",
    "methodology_differences",
    "pair",
]
