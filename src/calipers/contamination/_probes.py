"""Memorisation probes, run together: Min-K%++, the completion test and TS-Guessing, each on
the benchmark items and (optionally) on reference items the model cannot have seen. Plugins
add probes through entry point group ``calipers.probes`` (:func:`register_probe`), where the
built-ins are declared too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from calipers._util.registry import Plugins, Registry
from calipers.contamination._result import ProbeResult, Progress, with_reference
from calipers.errors import UnknownNameError
from calipers.models import ModelProvider
from calipers.types import Sample

__all__ = ["PROBES", "ProbeFn", "probe_name", "register", "register_probe", "run_probes"]

# ``await fn(model, samples, seed=, progress=)``
ProbeFn = Callable[..., Awaitable[ProbeResult]]
_probes: Registry[ProbeFn] = Registry("probe", Plugins("calipers.probes"))
PROBES: tuple[str, ...] = ("min-k%++", "completion", "ts-guessing")  # the built-ins, run order
# Other spellings people type (``min_k_pp`` was what ``--help`` once showed); never shown.
_ALIASES = {"min-k-pp": "min-k%++", "mink%++": "min-k%++", "mink-pp": "min-k%++"}
# ``progress(probe, done, total)``; the probe name ends in ``/reference`` for reference items.
NamedProgress = Callable[[str, int, int], None]


def register_probe(name: str, fn: ProbeFn) -> None:
    _probes.add(name, fn)


def register() -> None:
    """The built-ins (named by calipers' own entry points)."""
    from calipers.contamination._completion import completion_probe
    from calipers.contamination._minkpp import min_k_pp_probe
    from calipers.contamination._tsguess import ts_guessing_probe

    register_probe("min-k%++", min_k_pp_probe)
    register_probe("completion", completion_probe)
    register_probe("ts-guessing", ts_guessing_probe)


def probe_name(name: str) -> str:
    """The probe's one name (as in :data:`PROBES`, results and docs) for ``name`` written with
    any case, ``_`` for ``-``, or ``-pp`` for ``%++``. Raises ConfigError for an unknown one."""
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in _probes:
        raise UnknownNameError("probe", name, _probes.names())
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
        fn = _probes.get(name)
        result = await fn(model, samples, seed=seed, progress=_named(progress, name))
        if reference is not None and result.skipped is None:
            ref = await fn(
                model, reference, seed=seed, progress=_named(progress, f"{name}/reference")
            )
            result = with_reference(result, ref)
        results.append(result)
    return results
