"""Comparing runs: paired tests, intervals, corrected p-values and verdicts in words; format
sensitivity studies; practical factors (latency, cost) measured from stored runs."""

from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
from calipers.analysis._compare import ComparisonRow, ComparisonSet, compare, load_runs
from calipers.analysis._floors import Floor, format_floors
from calipers.analysis._practical import RunFactors, Stability, run_factors, stability
from calipers.analysis._sensitivity import SensitivityReport, sensitivity
from calipers.analysis._study import StudyPlan, load_study, plan_study, run_study

__all__ = [
    "ComparisonRow",
    "ComparisonSet",
    "Floor",
    "Paired",
    "RunFactors",
    "SensitivityReport",
    "Stability",
    "StoredRun",
    "StudyPlan",
    "compare",
    "format_floors",
    "load_runs",
    "load_study",
    "methodology_differences",
    "pair",
    "plan_study",
    "run_factors",
    "run_study",
    "sensitivity",
    "stability",
]
