"""The selection file: what a team needs from a model, as one validated YAML/JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from calipers._util.yamlloc import load_yaml
from calipers.cards import OPENNESS_CLASSES
from calipers.errors import ConfigError

__all__ = ["Candidate", "Limits", "Requirements", "RunSettings", "Selection", "load_selection"]

OpennessName = Literal["opaque", "described", "inspectable", "fully open"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Candidate(_Strict):
    """A model to consider: a model card (by name) and/or a calipers model spec. The card
    gives licence, openness and prices; the spec says how to run it (default: the card's)."""

    card: str | None = None
    spec: str | None = None
    base_url: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Candidate:
        if self.card is None and self.spec is None:
            raise ValueError("a candidate needs a card name or a model spec")
        return self


class Requirements(_Strict):
    openness: OpennessName | None = None  # the minimum class
    licences: tuple[str, ...] | None = None  # allowed licences (exact names); None: any
    capability: dict[str, float] = Field(default_factory=dict)  # task -> minimum score


class Limits(_Strict):
    cost_per_1000_usd: float | None = Field(None, ge=0)
    latency_p95_s: float | None = Field(None, gt=0)


class RunSettings(_Strict):
    limit: int | None = Field(None, ge=1)
    seed: int = 0
    data_dir: str | None = None
    chat_template: bool = True
    hardware_cost_per_hour: float | None = Field(None, ge=0)


class Selection(_Strict):
    name: str = "model selection"
    candidates: tuple[Candidate, ...] = Field(min_length=1)
    require: Requirements = Field(default_factory=Requirements)
    tasks: dict[str, float] = Field(min_length=1)  # task -> weight
    limits: Limits = Field(default_factory=Limits)
    run: RunSettings = Field(default_factory=RunSettings)

    @model_validator(mode="after")
    def _weights(self) -> Selection:
        bad = [t for t, w in self.tasks.items() if not w > 0]
        if bad:
            raise ValueError(f"task weights must be positive: {', '.join(bad)}")
        return self

    @property
    def all_tasks(self) -> list[str]:
        return list(dict.fromkeys([*self.require.capability, *self.tasks]))


def openness_rank(name: str) -> int:
    return [str(c) for c in OPENNESS_CLASSES].index(name)


def load_selection(path: str | Path) -> Selection:
    """Parse and validate a selection file; errors name the file and the field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read selection file {p}: {e.strerror}.") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else load_yaml(text, p)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{p}:{e.lineno}: not valid JSON ({e.msg}).") from None
    try:
        return Selection.model_validate(data or {})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise ConfigError(
            f"{p}: field {where!r}: {first['msg']}.",
            hint="See docs/selection.md for the selection file format.",
        ) from None
