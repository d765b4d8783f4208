"""The production side (layer 4): A/B decisions on the gateway's logged traffic
(``calipers ab``) and monitoring with drift detection (``calipers monitor``). Both read what
the gateway wrote to the store. See ``docs/ab.md`` and ``docs/monitor.md``.
"""

from calipers.monitor._ab import ABConfig, ABResult, MetricResult, analyze_ab, run_ab
from calipers.monitor._export import ExportResult, export_to_review, export_to_suite
from calipers.monitor._novelty import Novelty, find_novelty
from calipers.monitor._online import OnlineScorer, ScoringReport, parse_scorer, score_exchanges
from calipers.monitor._report import MonitorConfig, MonitorReport, monitor
from calipers.monitor._simulate import simulate_alarms
from calipers.monitor._synthetic import TrafficProfile, synthetic_traffic
from calipers.monitor._traffic import (
    Exchange,
    load_exchanges,
    messages_of,
    pair_records,
    prompt_text,
)

__all__ = [
    "ABConfig",
    "ABResult",
    "Exchange",
    "ExportResult",
    "MetricResult",
    "MonitorConfig",
    "MonitorReport",
    "Novelty",
    "OnlineScorer",
    "ScoringReport",
    "TrafficProfile",
    "analyze_ab",
    "export_to_review",
    "export_to_suite",
    "find_novelty",
    "load_exchanges",
    "messages_of",
    "monitor",
    "pair_records",
    "parse_scorer",
    "prompt_text",
    "run_ab",
    "score_exchanges",
    "simulate_alarms",
    "synthetic_traffic",
]
