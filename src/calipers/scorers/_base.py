"""Scorers: async callables ``(sample, output) -> Score``, made by decorated factories that
record their arguments, so a stored run can rebuild the exact scorer from its spec."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from calipers._util.registry import Plugins, Registry
from calipers.errors import ConfigError
from calipers.types import Sample, SampleOutput, Score

__all__ = ["Scorer", "ScorerInfo", "ScorerSpec", "build_scorer", "list_scorers", "scorer"]

ScoreFn = Callable[[Sample, SampleOutput], Awaitable[Score]]


class ScorerSpec(BaseModel):
    """Name and arguments of a scorer: stored in the methodology card."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Scorer(Protocol):
    spec: ScorerSpec
    metrics: tuple[str, ...]
    needs: str  # "generation" or "loglikelihood"

    async def __call__(self, sample: Sample, output: SampleOutput) -> Score: ...


class _BoundScorer:
    def __init__(self, fn: ScoreFn, spec: ScorerSpec, metrics: tuple[str, ...], needs: str) -> None:
        self._fn = fn
        self.spec = spec
        self.metrics = metrics
        self.needs = needs

    async def __call__(self, sample: Sample, output: SampleOutput) -> Score:
        return await self._fn(sample, output)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.spec.args.items())
        return f"{self.spec.name}({args})"


F = TypeVar("F", bound=Callable[..., ScoreFn])


@dataclass(frozen=True)
class ScorerInfo:
    name: str
    factory: Callable[..., ScoreFn]
    metrics: tuple[str, ...]
    needs: str
    doc: str


# Entry point group ``calipers.scorers``: built-ins (one entry point per scorer, naming the
# module whose ``@scorer`` registers it) and plugins.
_scorers = Registry("scorer", Plugins("calipers.scorers"), ScorerInfo)


def scorer(
    name: str, *, metrics: tuple[str, ...], needs: str = "generation"
) -> Callable[[F], Callable[..., Scorer]]:
    """Register a scorer factory. ``metrics`` are the keys of ``Score.values`` it produces."""

    def wrap(factory: F) -> Callable[..., Scorer]:
        @functools.wraps(factory)
        def make(**kwargs: Any) -> Scorer:
            try:
                fn = factory(**kwargs)
            except TypeError as e:
                raise ConfigError(f"Bad arguments for scorer {name!r}: {e}") from None
            return _BoundScorer(fn, ScorerSpec(name=name, args=kwargs), metrics, needs)

        _scorers.add(
            name, ScorerInfo(name, factory, metrics, needs, (factory.__doc__ or "").strip())
        )
        return make

    return wrap


def build_scorer(spec: ScorerSpec | str | dict[str, Any]) -> Scorer:
    """Rebuild a scorer from its spec (or its bare name)."""
    if isinstance(spec, str):
        spec = ScorerSpec(name=spec)
    elif isinstance(spec, dict):
        spec = ScorerSpec.model_validate(spec)
    info = _scorers.get(spec.name)
    try:
        fn = info.factory(**spec.args)
    except TypeError as e:
        raise ConfigError(f"Bad arguments for scorer {spec.name!r}: {e}") from None
    return _BoundScorer(fn, spec, info.metrics, info.needs)


def list_scorers() -> dict[str, tuple[tuple[str, ...], str, str]]:
    """name -> (metrics, needs, first docstring line)."""
    return {
        n: (i.metrics, i.needs, i.doc.splitlines()[0] if i.doc else "")
        for n, i in _scorers.items().items()
    }
