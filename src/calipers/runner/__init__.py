"""Plan -> schedule -> sample -> finalize, and the entry points that tie them together."""

from calipers.runner._api import RunResult, aresume, arun, run
from calipers.runner._config import RunConfig
from calipers.runner._finalize import summarize_records
from calipers.runner._methodology import Methodology, TaskMethodology, comparable_hash
from calipers.runner._plan import Plan, make_plan
from calipers.runner._schedule import Progress
from calipers.runner._seeds import RunSeeds

__all__ = [
    "Methodology",
    "Plan",
    "Progress",
    "RunConfig",
    "RunResult",
    "RunSeeds",
    "TaskMethodology",
    "aresume",
    "arun",
    "comparable_hash",
    "make_plan",
    "run",
    "summarize_records",
]
