"""Memorisation probes, run together: Min-K%++, the completion test and TS-Guessing, each on
the benchmark items and (optionally) on reference items the model cannot have seen."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from calipers.contamination._completion import completion_probe
from calipers.contamination._minkpp import min_k_pp_probe
from calipers.contamination._result import ProbeResult, Progress, with_reference
from calipers.contamination._tsguess import ts_guessing_probe
from calipers.errors import UnknownNameError
from calipers.models import ModelProvider
from calipers.types import Sample

__all__ = ["PROBES", "probe_name", "run_probes"]

ProbeFn = Callable[..., Awaitable[ProbeResult]]
_FUNCTIONS: dict[str, ProbeFn] = {
    "min-k%++": min_k_pp_probe,
    "completion": completion_probe,
    "ts-guessing": ts_guessing_probe,
}
PROBES: tuple[str, ...] = tuple(_FUNCTIONS)
# Other spellings people type (``min_k_pp`` was what ``--help`` once showed); never shown.
_ALIASES = {"min-k-pp": "min-k%++", "mink%++": "min-k%++", "mink-pp": "min-k%++"}
# ``progress(probe, done, total)``; the probe name ends in ``/reference`` for reference items.
NamedProgress = Callable[[str, int, int], None]


def probe_name(name: str) -> str:
    """The probe's one name (as in :data:`PROBES`, results and docs) for ``name`` written with
    any case, ``_`` for ``-``, or ``-pp`` for ``%++``. Raises ConfigError for an unknown one."""
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _FUNCTIONS:
        raise UnknownNameError("probe", name, PROBES)
    return key


def _named(progress: NamedProgress | None, name: str) -> Progress | None:
    if progress is None:
        return None
    return lambda done, total: progress(name, done, total)


async def run_probes(
    model: ModelProvider,
    samples: Sequence[Sample],
    *,
    probes: Sequence[str] = PROBES,
    reference: Sequence[Sample] | None = None,
    seed: int = 0,
    progress: NamedProgress | None = None,
) -> list[ProbeResult]:
    """Run the named probes one after the other on ``samples``. With ``reference`` (items the
    model cannot have seen, e.g. a dynamic task's), each probe also runs on them and its result
    carries the reference difference and the excess of the benchmark's difference over it."""
    probes = [probe_name(p) for p in probes]
    results: list[ProbeResult] = []
    for name in probes:
        fn = _FUNCTIONS[name]
        result = await fn(model, samples, seed=seed, progress=_named(progress, name))
        if reference is not None and result.skipped is None:
            ref = await fn(
                model, reference, seed=seed, progress=_named(progress, f"{name}/reference")
            )
            result = with_reference(result, ref)
        results.append(result)
    return results
