"""The fictional world behind ``dyn_rag``: invented entities (companies, people, towns,
festivals), their attributes, and documents of five styles that state them.

Everything is drawn from one ``random.Random``: names from syllables (so none is a real
entity a model could have memorised), values (years, counts, invented towns and people, months,
products, professions) distinct within a world by their normalised form, and documents that each
state some attributes of one entity in their style's wording. A document is rendered from its
entity's values, so rendering it with one value overridden (a counterfactual) changes exactly
that value's span.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from calipers.scorers import alias_in
from calipers.tasks.rag._world_text import (
    ATTRIBUTES,
    FIRST_NAMES,
    INTRO,
    KINDS,
    MONTHS,
    NOUN,
    PRODUCTS,
    PROFESSIONS,
    STYLES,
    SUFFIX,
    SYLLABLES,
)

__all__ = [
    "ATTRIBUTES",
    "KINDS",
    "STYLES",
    "Doc",
    "Entity",
    "Value",
    "claim_text",
    "draw_value",
    "fresh_value",
    "invent_entity",
    "invent_name",
    "near_miss",
    "question_text",
    "render",
]


@dataclass(frozen=True)
class Value:
    """An attribute's value: ``surface`` as documents state it, ``aliases`` every accepted
    answer (the surface first)."""

    surface: str
    aliases: tuple[str, ...]


@dataclass
class Entity:
    kind: str
    name: str
    values: dict[str, Value] = field(default_factory=dict)

    @property
    def display(self) -> str:
        """The name as a sentence or title shows it (``the X Festival`` for events)."""
        return f"the {self.name}" if self.kind == "event" else self.name


@dataclass(frozen=True)
class Doc:
    """One document: an entity (its index in the world), a style and the attributes it states,
    in order."""

    entity: int
    style: str
    facts: tuple[str, ...]


def _stem(r: random.Random, parts: int) -> str:
    return "".join(r.choice(SYLLABLES) for _ in range(parts)).capitalize()


def _person(r: random.Random) -> str:
    return f"{r.choice(FIRST_NAMES)} {_stem(r, 2)}"


def invent_name(r: random.Random, kind: str) -> str:
    """An invented name for an entity of ``kind``."""
    if kind == "person":
        return _person(r)
    if kind == "town":
        return _stem(r, 2) + r.choice(("", "by", "holm", "wick", "dal"))
    return f"{_stem(r, 2)} {r.choice(SUFFIX[kind])}"


def near_miss(r: random.Random, name: str) -> str:
    """A similar name: one letter of the last word's stem changed (vowel for vowel, consonant
    for consonant), so the two names differ as whole words."""
    words = name.split()
    i = 1 if len(words) > 1 and words[0] in FIRST_NAMES else 0  # a person's surname; else the stem
    w = words[i]
    spots = [j for j in range(1, len(w)) if w[j].isalpha()]
    j = r.choice(spots)
    pool = "aeiou" if w[j] in "aeiou" else "bdfgklmnprstvz"
    words[i] = w[:j] + r.choice([c for c in pool if c != w[j]]) + w[j + 1 :]
    return " ".join(words)


def draw_value(r: random.Random, kind: str) -> Value:
    """A fresh value of ``kind`` (``year:A-B``, ``count:A-B``, ``town``, ``person``, ...)."""
    base, _, span = kind.partition(":")
    if base in ("year", "count"):
        lo, hi = (int(x) for x in span.split("-"))
        v = r.randint(lo, hi)
        if base == "year":
            return Value(str(v), (str(v),))
        return Value(f"{v:,}", (f"{v:,}", str(v)) if v >= 1000 else (str(v),))
    if base == "person":
        p = _person(r)
        return Value(p, (p, p.split()[-1]))
    if base == "river":
        s = _stem(r, 2)
        return Value(f"{s} River", (f"{s} River", s))
    if base == "company":
        c = invent_name(r, "company")
        return Value(c, (c, c.split()[0]))
    if base == "town":
        t = invent_name(r, "town")
        return Value(t, (t,))
    pool = {"product": PRODUCTS, "profession": PROFESSIONS, "month": MONTHS}[base]
    x = r.choice(pool)
    return Value(x, (x,))


def invent_entity(r: random.Random, kind: str, name: str, taken: list[str]) -> Entity:
    """An entity with a value for every attribute of its kind, each value's aliases distinct
    (as whole normalised words) from everything in ``taken``, which grows with them."""
    e = Entity(kind, name)
    for attr, (vkind, *_rest) in ATTRIBUTES[kind].items():
        e.values[attr] = fresh_value(r, vkind, taken)
    return e


def fresh_value(r: random.Random, vkind: str, taken: list[str]) -> Value:
    """A value of ``vkind`` that shares no alias with ``taken`` either way (``taken`` grows)."""
    for _ in range(200):
        v = draw_value(r, vkind)
        if not any(alias_in(t, v.aliases) or alias_in(a, [t]) for t in taken for a in v.aliases):
            taken.extend(v.aliases)
            return v
    raise AssertionError(f"no fresh {vkind} value after 200 draws")


def render(doc: Doc, entity: Entity, override: dict[str, Value] | None = None) -> tuple[str, str]:
    """``(title, text)`` of a document; ``override`` replaces some of the entity's values."""
    values = {**entity.values, **(override or {})}
    intro, title = INTRO[doc.style]
    s = STYLES.index(doc.style)
    n = entity.name
    parts = [_cap(intro.format(N=entity.display, noun=NOUN[entity.kind]))]
    for attr in doc.facts:
        line = ATTRIBUTES[entity.kind][attr][3][s].format(n=n, v=values[attr].surface)
        parts.append(_cap(line))
    return title.format(N=_cap(entity.display)), " ".join(parts)


def claim_text(entity: Entity, attr: str, value: Value) -> str:
    return _cap(ATTRIBUTES[entity.kind][attr][2].format(n=entity.name, v=value.surface))


def question_text(entity: Entity, attr: str) -> str:
    return ATTRIBUTES[entity.kind][attr][1].format(n=entity.name)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]
