"""Is the score real? Contamination checks (layer 4: they run models and read stored runs).

Families: n-gram overlap with a user's training corpus (:func:`build_index`,
:func:`ngram_check`), the perturbation gap against a fresh control
(:func:`perturbation_gap`), and memorisation probes on models with log-probabilities. Each
check reports a number with an interval and says what it can and cannot prove; a check that
does not apply is skipped with a reason, never reported as zero contamination.
"""

from calipers.contamination._completion import completion_probe
from calipers.contamination._controls import item_text
from calipers.contamination._flags import GAP_PREFIX, contamination_flags
from calipers.contamination._items import task_item_texts
from calipers.contamination._minkpp import min_k_pp, min_k_pp_probe
from calipers.contamination._ngram import ItemOverlap, NgramReport, ngram_check
from calipers.contamination._ngram_index import CorpusIndex, IndexInfo, build_index, open_index
from calipers.contamination._ngram_render import render_ngram_report
from calipers.contamination._ngram_score import ScoreSplit
from calipers.contamination._perturbation import GapRow, PerturbationGapReport, perturbation_gap
from calipers.contamination._probes import PROBES, probe_name, register_probe, run_probes
from calipers.contamination._result import ItemScore, ProbeResult, render_probe, with_reference
from calipers.contamination._tsguess import ts_guessing_probe

__all__ = [
    "GAP_PREFIX",
    "PROBES",
    "CorpusIndex",
    "GapRow",
    "IndexInfo",
    "ItemOverlap",
    "ItemScore",
    "NgramReport",
    "PerturbationGapReport",
    "ProbeResult",
    "ScoreSplit",
    "build_index",
    "completion_probe",
    "contamination_flags",
    "item_text",
    "min_k_pp",
    "min_k_pp_probe",
    "ngram_check",
    "open_index",
    "perturbation_gap",
    "probe_name",
    "register_probe",
    "render_ngram_report",
    "render_probe",
    "run_probes",
    "task_item_texts",
    "ts_guessing_probe",
    "with_reference",
]
