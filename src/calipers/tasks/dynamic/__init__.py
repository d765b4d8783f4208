"""Dynamic tasks: items generated from a seed at evaluation time, with verified answers, so a
model cannot have memorized them. See docs/dynamic-tasks.md."""

from calipers.tasks.dynamic._seeding import FEWSHOT_POOL, fewshot_loader, generate, loader
from calipers.tasks.dynamic.arithmetic import arithmetic_task, make_arithmetic
from calipers.tasks.dynamic.dates import (
    dates_mc_task,
    dates_task,
    make_date_mc,
    make_date_question,
)
from calipers.tasks.dynamic.word_problems import make_word_problem, word_problems_task

SUITE = ("dyn_word_problems", "dyn_arithmetic", "dyn_dates", "dyn_dates_mc")
"""The built-in ``dynamic`` suite (the default of ``calipers run``)."""

__all__ = [
    "FEWSHOT_POOL",
    "SUITE",
    "arithmetic_task",
    "dates_mc_task",
    "dates_task",
    "fewshot_loader",
    "generate",
    "loader",
    "make_arithmetic",
    "make_date_mc",
    "make_date_question",
    "make_word_problem",
    "word_problems_task",
]
