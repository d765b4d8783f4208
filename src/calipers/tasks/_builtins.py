"""Registration of the built-in tasks and suites, through the same path plugins use."""

from __future__ import annotations

from calipers.tasks._registry import register_suite, register_task
from calipers.tasks.dynamic import (
    SUITE,
    arithmetic_task,
    dates_mc_task,
    dates_task,
    word_problems_task,
)

__all__ = ["register"]

# Standard benchmarks: each module registers its tasks (data from --data-dir, else the hub).
_BENCHMARKS = (
    "commonsense",
    "winogrande",
    "knowledge",
    "gsm8k",
    "truthfulqa",
    "humaneval",
    "bbq",
    "ifeval",
    "mmlu_pro",
    "gpqa",
    "bbh",
)


def register() -> None:
    register_task("dyn_word_problems", word_problems_task)
    register_task("dyn_arithmetic", arithmetic_task)
    register_task("dyn_dates", dates_task)
    register_task("dyn_dates_mc", dates_mc_task, formulations=("cloze", "letter", "generate"))
    register_suite("dynamic", SUITE)
    import importlib

    for name in _BENCHMARKS:
        importlib.import_module(f"calipers.tasks.benchmarks.{name}").register()
