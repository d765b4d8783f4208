"""Where cards come from, and finding one by name.

Three places, later ones overriding earlier ones card by card (by ``name``):

1. built-in cards shipped in the package (``calipers/cards/builtin/*.yaml``);
2. the user's cards in ``$CALIPERS_HOME/models/`` (``./.calipers/models/`` without
   ``CALIPERS_HOME``, the same home the store uses);
3. folders given explicitly (``--cards DIR``).

A card is found by its name, display name, an alias or its calipers model spec; the match
ignores case and punctuation (``SmolLM2 135M Instruct`` finds ``smollm2-135m-instruct``), and a
part of a name is enough when only one card contains it (``olmo``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from calipers._util.home import calipers_home
from calipers._util.yamlloc import load_yaml
from calipers.cards._card import ModelCard, load_card, parse_card
from calipers.cards._mof import MOF_COMPONENTS, MofResult, mof_classify
from calipers.cards._openness import OpennessVerdict, classify_openness
from calipers.errors import ConfigError, UnknownNameError

__all__ = [
    "BUILTIN",
    "CardCatalog",
    "CatalogEntry",
    "builtin_card_names",
    "card_to_dict",
    "user_cards_dir",
]

BUILTIN = "built-in"
_SUFFIXES = (".yaml", ".yml", ".json")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass(frozen=True)
class CatalogEntry:
    card: ModelCard
    source: str  # "built-in" or the file path

    @property
    def openness(self) -> OpennessVerdict:
        return classify_openness(self.card.openness)

    @property
    def mof(self) -> MofResult:
        return mof_classify(self.card.mof)

    def lookup_keys(self) -> set[str]:
        c = self.card
        names = [c.name, *c.aliases, *([c.display_name] if c.display_name else [])]
        if c.spec:
            names.append(c.spec)
        return {_norm(n) for n in names if n}


def user_cards_dir() -> Path:
    """``$CALIPERS_HOME/models``, else ``./.calipers/models``."""
    return calipers_home() / "models"


def _builtin() -> list[CatalogEntry]:
    folder = resources.files("calipers.cards").joinpath("builtin")
    out = []
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.is_file() and item.name.endswith(_SUFFIXES):
            text = item.read_text(encoding="utf-8")
            card = parse_card(
                load_yaml(text, f"builtin/{item.name}"), source=f"builtin/{item.name}", text=text
            )
            out.append(CatalogEntry(card, BUILTIN))
    return out


def builtin_card_names() -> list[str]:
    return [e.card.name for e in _builtin()]


def _folder(path: Path) -> list[CatalogEntry]:
    if not path.is_dir():
        raise ConfigError(
            f"Card folder {path} does not exist or is not a folder.",
            hint="Give a folder of *.yaml / *.json model cards.",
        )
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in _SUFFIXES)
    entries = [CatalogEntry(load_card(p), str(p)) for p in files]
    seen: dict[str, str] = {}
    for e in entries:
        if e.card.name in seen:
            raise ConfigError(
                f"Two cards in {path} are named {e.card.name!r}: {seen[e.card.name]} and "
                f"{e.source}.",
                hint="Give each card its own name.",
            )
        seen[e.card.name] = e.source
    return entries


class CardCatalog:
    """Every known card, in order: built-in first, then user cards, then extra folders."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        merged: dict[str, CatalogEntry] = {}
        for e in entries:
            merged[e.card.name] = e  # a later source overrides an earlier one
        self._entries = merged

    @classmethod
    def load(cls, extra_dirs: Sequence[str | Path] = (), *, user: bool = True) -> CardCatalog:
        entries = _builtin()
        home = user_cards_dir()
        if user and home.is_dir():
            entries += _folder(home)
        for d in extra_dirs:
            entries += _folder(Path(d))
        return cls(entries)

    def entries(self) -> list[CatalogEntry]:
        return list(self._entries.values())

    def names(self) -> list[str]:
        return list(self._entries)

    def get(self, name: str) -> CatalogEntry:
        """The card called ``name`` (or with that alias, display name or spec)."""
        if name in self._entries:
            return self._entries[name]
        key = _norm(name)
        hits = [e for e in self._entries.values() if key and key in e.lookup_keys()]
        if len(hits) == 1:
            return hits[0]
        if not hits:  # a unique partial name ("olmo") is enough
            hits = [
                e for e in self._entries.values() if key and any(key in k for k in e.lookup_keys())
            ]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ConfigError(
                f"{name!r} matches several model cards: {', '.join(e.card.name for e in hits)}.",
                hint="Use the card's exact name.",
            )
        known = [*self._entries, *(a for e in self._entries.values() for a in e.card.aliases)]
        raise UnknownNameError(
            "model card",
            name,
            known,
            hint=f"Known model cards: {', '.join(self._entries)}. Write your own in "
            f"{user_cards_dir()} (see docs/model-cards.md).",
        )

    def for_model(self, spec: str, model_name: str | None = None) -> CatalogEntry | None:
        """The card for a run's model: by spec first, then by the resolved model name."""
        for e in self._entries.values():
            if e.card.spec and e.card.spec == spec:
                return e
        for probe in (spec, model_name):
            key = _norm(probe or "")
            hits = [e for e in self._entries.values() if key and key in e.lookup_keys()]
            if len(hits) == 1:
                return hits[0]
        return None


def card_to_dict(entry: CatalogEntry) -> dict[str, Any]:
    """The whole card with its openness verdict and MOF class, as JSON-ready data."""
    v, m = entry.openness, entry.mof
    names = {c.key: c.name for c in MOF_COMPONENTS}
    return {
        **entry.card.model_dump(mode="json"),
        "source": entry.source,
        "openness_class": v.openness_class,
        "openness_decided_by": list(v.decided_by),
        "openness_reason": v.reason,
        "mof_class": m.mof_class,
        "mof_label": m.label,
        "mof_next_class": m.next_class,
        "mof_missing_for_next": [
            {"component": g.key, "name": g.name, "class": g.mof_class, "reason": g.reason}
            for g in m.missing_for_next
        ],
        "mof_satisfied": [{"component": k, "name": names[k]} for k in m.satisfied],
        "mof_potential_class": m.potential_class,
        "mof_licence_not_established": [
            {"component": k, "name": names[k]} for k in m.unestablished
        ],
        "mof_notes": list(m.notes),
    }
