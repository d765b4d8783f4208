"""The production side (layer 5, applications): A/B decisions on the gateway's logged traffic
(``calipers ab``) and monitoring with drift detection (``calipers monitor``). Both read what
the gateway wrote to the store. See ``docs/ab.md`` and ``docs/monitor.md``.

The console renderers (``render_*``, which import rich) load on first use
(``calipers._util.lazy``).
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports
from calipers.monitor._ab import ABConfig, ABResult, MetricResult, analyze_ab, run_ab
from calipers.monitor._drift import DriftOptions, WindowDrift
from calipers.monitor._export import ExportResult, export_to_review, export_to_suite
from calipers.monitor._fingerprint import (
    CanaryDesign,
    FingerprintCanaryStatus,
    Sampler,
    fingerprint_canaries,
    fingerprint_canary_status,
    fingerprint_hash,
    take_fingerprint_look,
)
from calipers.monitor._novelty import Novelty, find_novelty
from calipers.monitor._online import OnlineScorer, ScoringReport, parse_scorer, score_exchanges
from calipers.monitor._rag import RAG_METRICS, RagAnswer, rag_answer, rag_metrics
from calipers.monitor._report import MonitorConfig, MonitorReport, monitor
from calipers.monitor._simulate import simulate_alarms
from calipers.monitor._synthetic import TrafficProfile, synthetic_traffic
from calipers.monitor._synthetic_rag import RagProfile
from calipers.monitor._traffic import (
    Exchange,
    load_exchanges,
    messages_of,
    pair_records,
    prompt_text,
)
from calipers.monitor._when import (
    arm_prices,
    floor_time,
    is_relative,
    parse_duration,
    parse_prices,
    parse_range,
    parse_when,
)

if TYPE_CHECKING:
    from calipers.monitor._render import render_export, render_report, render_simulation

__all__ = [
    "RAG_METRICS",
    "ABConfig",
    "ABResult",
    "CanaryDesign",
    "DriftOptions",
    "Exchange",
    "ExportResult",
    "FingerprintCanaryStatus",
    "MetricResult",
    "MonitorConfig",
    "MonitorReport",
    "Novelty",
    "OnlineScorer",
    "RagAnswer",
    "RagProfile",
    "Sampler",
    "ScoringReport",
    "TrafficProfile",
    "WindowDrift",
    "analyze_ab",
    "arm_prices",
    "export_to_review",
    "export_to_suite",
    "find_novelty",
    "fingerprint_canaries",
    "fingerprint_canary_status",
    "fingerprint_hash",
    "floor_time",
    "is_relative",
    "load_exchanges",
    "messages_of",
    "monitor",
    "pair_records",
    "parse_duration",
    "parse_prices",
    "parse_range",
    "parse_scorer",
    "parse_when",
    "prompt_text",
    "rag_answer",
    "rag_metrics",
    "render_export",
    "render_report",
    "render_simulation",
    "run_ab",
    "score_exchanges",
    "simulate_alarms",
    "synthetic_traffic",
    "take_fingerprint_look",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"render_export": "_render", "render_report": "_render", "render_simulation": "_render"},
)
