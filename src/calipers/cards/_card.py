"""A model card: who makes a model, how to call it in calipers, its size, licence, price and
how open it is. Cards are data users can write (YAML or JSON), validated strictly: an unknown
key, a bad level or a negative price is an error naming the file, line and field.

A value nobody knows stays missing (``None``), never 0: a missing price gives no cost, not a
free model.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calipers._util.yamlloc import YamlError, load_yaml, yaml_line
from calipers.cards._mof import MOF_COMPONENTS
from calipers.errors import CardError  # re-exported: it lives in the one error hierarchy

__all__ = [
    "Assessment",
    "CardError",
    "Level",
    "ModelCard",
    "MofComponent",
    "Openness",
    "Pricing",
    "load_card",
    "parse_card",
]

Level = Literal["closed", "partial", "open"]
_MOF_KEYS = tuple(c.key for c in MOF_COMPONENTS)
_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())


class Assessment(_Strict):
    """One openness dimension: a level and the evidence for it (a link, or a note)."""

    level: Level
    evidence: str = Field(min_length=1)


class Openness(_Strict):
    """The seven openness dimensions. A dimension left out is "not assessed" and counts as
    closed when the card is classified."""

    weights: Assessment | None = None
    architecture: Assessment | None = None
    training_methods: Assessment | None = None
    training_data: Assessment | None = None
    inference_code: Assessment | None = None
    documentation: Assessment | None = None
    licence: Assessment | None = None


class Pricing(_Strict):
    """Prices in US dollars. API models: per million input / output tokens. Self-hosted:
    hardware cost per hour. Prices change: ``as_of`` and ``source`` say when and where from."""

    input_usd_per_mtok: float | None = Field(None, ge=0)
    output_usd_per_mtok: float | None = Field(None, ge=0)
    hardware_usd_per_hour: float | None = Field(None, ge=0)
    as_of: date | None = None
    source: str | None = None
    note: str | None = None


class MofComponent(_Strict):
    """One Model Openness Framework component: released or not, and whether its licence is an
    open one (``None``: not established, which does not count)."""

    released: bool
    licence: str | None = None
    open_licence: bool | None = None
    evidence: str | None = None


class ModelCard(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="card name (lower case)")
    display_name: str | None = None
    provider: str = Field(min_length=1)
    spec: str | None = Field(None, description="the calipers model spec, e.g. smollm2")
    aliases: tuple[str, ...] = ()
    as_of: date
    parameters: int | None = Field(None, gt=0)
    context_length: int | None = Field(None, gt=0)
    licence: str | None = None
    licence_url: str | None = None
    pricing: Pricing = Field(default_factory=Pricing)
    openness: Openness = Field(default_factory=Openness)
    mof: dict[str, MofComponent] = Field(default_factory=dict)
    sources: tuple[str, ...] = ()
    notes: str | None = None

    @field_validator("parameters", mode="before")
    @classmethod
    def _parameters(cls, v: Any) -> Any:
        """``135M``, ``7.3B``, ``1e9`` or a plain integer."""
        if isinstance(v, str):
            m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([kmbt]?)\s*", v.lower())
            if not m:
                raise ValueError("expected a count such as 135000000, 135M, 7.3B or 1e9")
            return round(float(m.group(1)) * _SUFFIX.get(m.group(2), 1.0))
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    @field_validator("mof")
    @classmethod
    def _mof_keys(cls, v: dict[str, MofComponent]) -> dict[str, MofComponent]:
        unknown = sorted(set(v) - set(_MOF_KEYS))
        if unknown:
            raise ValueError(
                f"unknown MOF component(s) {', '.join(unknown)}; known: {', '.join(_MOF_KEYS)}"
            )
        return v

    @property
    def title(self) -> str:
        return self.display_name or self.name


def _read(path: Path) -> tuple[Any, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CardError([(str(path), "", "the file does not exist")]) from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text, path)
    except json.JSONDecodeError as e:
        raise CardError([(f"{path}:{e.lineno}", "", f"not valid JSON ({e.msg})")]) from None
    except YamlError as e:
        raise CardError([(e.where, "", e.problem)], hint=e.hint) from None
    return raw, text


def parse_card(raw: Any, *, source: str = "<card>", text: str | None = None) -> ModelCard:
    """Validate one card's data; ``text`` (the YAML source) lets errors name a line."""
    if not isinstance(raw, dict):
        raise CardError([(source, "", "expected a mapping of card fields at the top level")])
    try:
        return ModelCard.model_validate(raw)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = [x if isinstance(x, int) else str(x) for x in err["loc"]]
            line = yaml_line(text, loc) if text is not None else None
            where = f"{source}:{line}" if line else source
            problems.append((where, ".".join(str(x) for x in loc) or "(top level)", err["msg"]))
        raise CardError(
            problems, hint="See docs/model-cards.md for the card fields and their values."
        ) from None


def load_card(path: str | Path) -> ModelCard:
    """Read and validate a card file (``.yaml``, ``.yml`` or ``.json``)."""
    p = Path(path)
    raw, text = _read(p)
    return parse_card(raw, source=str(p), text=None if p.suffix.lower() == ".json" else text)
