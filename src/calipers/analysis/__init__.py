"""Comparing runs: paired tests, intervals, corrected p-values and verdicts in words; format
sensitivity studies; practical factors (latency, cost) measured from stored runs.

Names load on first use (``calipers._util.lazy``): ``from calipers.analysis import
judge_agreement_line`` imports that one module, not the statistics the others need.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports

if TYPE_CHECKING:
    from calipers.analysis._ab_corrected import ABJudgeCorrected, ab_judge_corrected
    from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
    from calipers.analysis._audit import (
        Annotation,
        AuditReport,
        FlagAgreement,
        FlaggedItem,
        RunAudit,
        audit,
    )
    from calipers.analysis._campaign_labels import campaign_labels, campaign_question
    from calipers.analysis._claim_calibration import (
        ClaimCalibrationReport,
        calibrate_claim_judge,
        planted_samples,
    )
    from calipers.analysis._compare import ComparisonRow, ComparisonSet, compare, load_runs
    from calipers.analysis._contradiction_calibration import (
        ContradictionCalibrationReport,
        calibrate_contradiction_judge,
        contradiction_judge,
    )
    from calipers.analysis._floors import Floor, format_floors
    from calipers.analysis._gate import (
        GateConfig,
        GateResult,
        GateRow,
        gate,
        prepare_gate,
        run_gate,
    )
    from calipers.analysis._gate import judge as gate_verdict
    from calipers.analysis._judge_calibration import (
        JUDGE_SCORERS,
        JudgeCalibrationReport,
        calibrate_judge,
        calibrate_similarity,
        judge_spec,
        save_judge_calibration,
    )
    from calipers.analysis._judge_corrected import (
        JudgeCorrected,
        JudgeCorrectedComparison,
        corrected_rows,
        judge_corrected,
        judge_corrected_comparison,
    )
    from calipers.analysis._judge_line import (
        board_calibrations,
        is_judge_metric,
        judge_agreement_line,
        judge_calibration,
        judge_calibrations,
        metric_calibration,
        row_calibrations,
    )
    from calipers.analysis._leaderboard import Board, leaderboard
    from calipers.analysis._practical import RunFactors, Stability, run_factors, stability
    from calipers.analysis._rag_plan import (
        FACTORS as RAG_FACTORS,
    )
    from calipers.analysis._rag_plan import (
        StressGrid,
        plan_rag_stress,
        rag_arms,
    )
    from calipers.analysis._rag_report import (
        ArmRow,
        FillCurve,
        KneeFit,
        OutcomeCell,
        RagReport,
        rag_report,
    )
    from calipers.analysis._reuse import find_reusable
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
    from calipers.analysis._sizing import plan_size
    from calipers.analysis._study import (
        StudyPlan,
        list_studies,
        load_study,
        plan_study,
        run_study,
    )

_MODULES = {
    "ArmRow": "_rag_report",
    "FillCurve": "_rag_report",
    "KneeFit": "_rag_report",
    "OutcomeCell": "_rag_report",
    "RAG_FACTORS": "_rag_plan",
    "RagReport": "_rag_report",
    "StressGrid": "_rag_plan",
    "plan_rag_stress": "_rag_plan",
    "rag_arms": "_rag_plan",
    "rag_report": "_rag_report",
    "Annotation": "_audit",
    "AuditReport": "_audit",
    "Board": "_leaderboard",
    "ComparisonRow": "_compare",
    "ComparisonSet": "_compare",
    "FlagAgreement": "_audit",
    "FlaggedItem": "_audit",
    "Floor": "_floors",
    "GateConfig": "_gate",
    "GateResult": "_gate",
    "GateRow": "_gate",
    "ItemRow": "_saturation",
    "ItemStats": "_saturation",
    "JUDGE_SCORERS": "_judge_calibration",
    "JudgeCalibrationReport": "_judge_calibration",
    "ClaimCalibrationReport": "_claim_calibration",
    "calibrate_claim_judge": "_claim_calibration",
    "planted_samples": "_claim_calibration",
    "ContradictionCalibrationReport": "_contradiction_calibration",
    "calibrate_contradiction_judge": "_contradiction_calibration",
    "contradiction_judge": "_contradiction_calibration",
    "JudgeCorrected": "_judge_corrected",
    "JudgeCorrectedComparison": "_judge_corrected",
    "Paired": "_align",
    "RobustnessReport": "_sensitivity",
    "RunAudit": "_audit",
    "RunFactors": "_practical",
    "SaturationReport": "_saturation",
    "ABJudgeCorrected": "_ab_corrected",
    "ab_judge_corrected": "_ab_corrected",
    "SensitivityReport": "_sensitivity",
    "Stability": "_practical",
    "StoredRun": "_align",
    "StudyPlan": "_study",
    "audit": "_audit",
    "board_calibrations": "_judge_line",
    "calibrate_judge": "_judge_calibration",
    "calibrate_similarity": "_judge_calibration",
    "campaign_labels": "_campaign_labels",
    "campaign_question": "_campaign_labels",
    "compare": "_compare",
    "corrected_rows": "_judge_corrected",
    "find_reusable": "_reuse",
    "format_floors": "_floors",
    "gate": "_gate",
    "gate_verdict": "_gate",
    "item_statistics": "_saturation",
    "is_judge_metric": "_judge_line",
    "judge_agreement_line": "_judge_line",
    "judge_calibration": "_judge_line",
    "judge_calibrations": "_judge_line",
    "judge_corrected": "_judge_corrected",
    "judge_corrected_comparison": "_judge_corrected",
    "judge_spec": "_judge_calibration",
    "leaderboard": "_leaderboard",
    "load_runs": "_compare",
    "list_studies": "_study",
    "load_study": "_study",
    "methodology_differences": "_align",
    "metric_calibration": "_judge_line",
    "pair": "_align",
    "plan_size": "_sizing",
    "plan_study": "_study",
    "prepare_gate": "_gate",
    "robustness": "_sensitivity",
    "row_calibrations": "_judge_line",
    "run_factors": "_practical",
    "run_gate": "_gate",
    "run_study": "_study",
    "saturation": "_saturation",
    "save_judge_calibration": "_judge_calibration",
    "sensitivity": "_sensitivity",
    "stability": "_practical",
}

__all__ = [
    "JUDGE_SCORERS",
    "RAG_FACTORS",
    "ABJudgeCorrected",
    "Annotation",
    "ArmRow",
    "AuditReport",
    "Board",
    "ClaimCalibrationReport",
    "ComparisonRow",
    "ComparisonSet",
    "ContradictionCalibrationReport",
    "FillCurve",
    "FlagAgreement",
    "FlaggedItem",
    "Floor",
    "GateConfig",
    "GateResult",
    "GateRow",
    "ItemRow",
    "ItemStats",
    "JudgeCalibrationReport",
    "JudgeCorrected",
    "JudgeCorrectedComparison",
    "KneeFit",
    "OutcomeCell",
    "Paired",
    "RagReport",
    "RobustnessReport",
    "RunAudit",
    "RunFactors",
    "SaturationReport",
    "SensitivityReport",
    "Stability",
    "StoredRun",
    "StressGrid",
    "StudyPlan",
    "ab_judge_corrected",
    "audit",
    "board_calibrations",
    "calibrate_claim_judge",
    "calibrate_contradiction_judge",
    "calibrate_judge",
    "calibrate_similarity",
    "campaign_labels",
    "campaign_question",
    "compare",
    "contradiction_judge",
    "corrected_rows",
    "find_reusable",
    "format_floors",
    "gate",
    "gate_verdict",
    "is_judge_metric",
    "item_statistics",
    "judge_agreement_line",
    "judge_calibration",
    "judge_calibrations",
    "judge_corrected",
    "judge_corrected_comparison",
    "judge_spec",
    "leaderboard",
    "list_studies",
    "load_runs",
    "load_study",
    "methodology_differences",
    "metric_calibration",
    "pair",
    "plan_rag_stress",
    "plan_size",
    "plan_study",
    "planted_samples",
    "prepare_gate",
    "rag_arms",
    "rag_report",
    "robustness",
    "row_calibrations",
    "run_factors",
    "run_gate",
    "run_study",
    "saturation",
    "save_judge_calibration",
    "sensitivity",
    "stability",
]

__getattr__, __dir__ = lazy_exports(
    __name__, _MODULES, renamed={"gate_verdict": "judge", "RAG_FACTORS": "FACTORS"}
)
