"""Choosing a model: hard constraints from model cards, measured capability, cost and
latency, the Pareto front and a recommendation in words (``calipers select``)."""

from calipers.selection._render import pareto_svg, to_html, to_markdown
from calipers.selection._select import Check, ModelResult, SelectionResult, select
from calipers.selection._spec import Candidate, Selection, load_selection

__all__ = [
    "Candidate",
    "Check",
    "ModelResult",
    "Selection",
    "SelectionResult",
    "load_selection",
    "pareto_svg",
    "select",
    "to_html",
    "to_markdown",
]
