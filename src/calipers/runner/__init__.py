"""Plan -> schedule -> sample -> finalize, and the entry points that tie them together.

``RunConfig`` loads with the package (the command line builds its options from its fields);
the rest loads on first use (``calipers._util.lazy``), so ``calipers run --help`` does not
import the store, numpy and the statistics.
"""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports
from calipers.runner._config import RunConfig

if TYPE_CHECKING:
    from calipers.runner._api import RunResult, aresume, arun, run
    from calipers.runner._cache import ResponseCache, cache_key
    from calipers.runner._episode import EpisodeFailed, run_episode
    from calipers.runner._finalize import summarize_records, summarize_stored
    from calipers.runner._methodology import Methodology, TaskMethodology, comparable_hash
    from calipers.runner._plan import Plan, make_plan
    from calipers.runner._ray import RayExecutor
    from calipers.runner._schedule import Progress
    from calipers.runner._seeds import RunSeeds

__all__ = [
    "EpisodeFailed",
    "Methodology",
    "Plan",
    "Progress",
    "RayExecutor",
    "ResponseCache",
    "RunConfig",
    "RunResult",
    "RunSeeds",
    "TaskMethodology",
    "aresume",
    "arun",
    "cache_key",
    "comparable_hash",
    "make_plan",
    "run",
    "run_episode",
    "summarize_records",
    "summarize_stored",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EpisodeFailed": "_episode",
        "Methodology": "_methodology",
        "Plan": "_plan",
        "Progress": "_schedule",
        "RayExecutor": "_ray",
        "ResponseCache": "_cache",
        "RunResult": "_api",
        "RunSeeds": "_seeds",
        "TaskMethodology": "_methodology",
        "aresume": "_api",
        "arun": "_api",
        "cache_key": "_cache",
        "comparable_hash": "_methodology",
        "make_plan": "_plan",
        "run": "_api",
        "run_episode": "_episode",
        "summarize_records": "_finalize",
        "summarize_stored": "_finalize",
    },
)
