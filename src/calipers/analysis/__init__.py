"""Comparing runs: paired tests, intervals, corrected p-values and verdicts in words; format
sensitivity studies; practical factors (latency, cost) measured from stored runs."""

from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
from calipers.analysis._audit import (
    Annotation,
    AuditReport,
    FlagAgreement,
    FlaggedItem,
    RunAudit,
    audit,
)
from calipers.analysis._compare import ComparisonRow, ComparisonSet, compare, load_runs
from calipers.analysis._floors import Floor, format_floors
from calipers.analysis._gate import GateConfig, GateResult, GateRow, gate
from calipers.analysis._judge_calibration import (
    JudgeCalibrationReport,
    calibrate_judge,
    judge_agreement_line,
)
from calipers.analysis._practical import RunFactors, Stability, run_factors, stability
from calipers.analysis._saturation import (
    ItemRow,
    ItemStats,
    SaturationReport,
    item_statistics,
    saturation,
)
from calipers.analysis._sensitivity import (
    RobustnessReport,
    SensitivityReport,
    robustness,
    sensitivity,
)
from calipers.analysis._study import StudyPlan, load_study, plan_study, run_study

__all__ = [
    "Annotation",
    "AuditReport",
    "ComparisonRow",
    "ComparisonSet",
    "FlagAgreement",
    "FlaggedItem",
    "Floor",
    "GateConfig",
    "GateResult",
    "GateRow",
    "ItemRow",
    "ItemStats",
    "JudgeCalibrationReport",
    "Paired",
    "RobustnessReport",
    "RunAudit",
    "RunFactors",
    "SaturationReport",
    "SensitivityReport",
    "Stability",
    "StoredRun",
    "StudyPlan",
    "audit",
    "calibrate_judge",
    "compare",
    "format_floors",
    "gate",
    "item_statistics",
    "judge_agreement_line",
    "load_runs",
    "load_study",
    "methodology_differences",
    "pair",
    "plan_study",
    "robustness",
    "run_factors",
    "run_study",
    "saturation",
    "sensitivity",
    "stability",
]
