"""``dyn_rag``: RAG items from a seeded fictional world, fresh every seed and judge-free.

Item ``i`` of seed ``s`` is drawn from its own generator (``dynamic`` seeding: the first ``n``
items of ``(s, n)`` are the first ``n`` of ``(s, N)`` for any ``N > n``, which the arms rely on:
they draw their pool from a full load). Each item builds a small world (``_world``): a target
entity (a company, person, town or festival with invented names) and two near misses of the
same kind with similar names (one letter apart), each with every attribute of its kind; then
documents in up to five styles (encyclopedia, news, official page, forum post, interview), each
stating some attributes of one entity. The question asks one attribute of the target.

- Answerable (80%): the documents stating the asked fact (1 to 5 of them, so an item can have
  several gold passages) are shown, ``gold=True, kind="gold"``; the answer aliases are the
  value's forms (``"12,400"`` and ``"12400"``; a person's full name and surname; ...).
- Unanswerable (20%, ``unanswerable=True``, no answers): the world holds the value but no
  document states it; the target's other documents are shown (``kind="hard"``), and the
  withheld value's aliases are in ``metadata["withheld"]`` (stated in no document).
- ``metadata["distractors"]``: near-miss passages as Passage dicts (``kind="hard"``): the
  target's documents that do not state the asked fact and the near misses' documents. Passage
  has no metadata, so the wrong answers are the parallel ``metadata["wrong_answers"]``:
  passage id -> the value it states for the asked attribute (of the similarly named entity),
  for the distractors that state one.
- ``metadata["counterfactual"]`` (answerable): ``{"passage", "answer"}``, a gold passage
  rendered again with the asked value swapped for a fresh one (id ``<gold id>-cf``, ``kind=
  "counterfactual"``): its text differs from the gold's only in that span.
- ``metadata["claims"]``: planted claims ``{"text", "supported", "value"}`` about the target:
  supported ones restate facts that the shown passages state; unsupported ones are plausible
  (same wording, a fresh value of the right kind) but stated in no document of the world.

Every invariant (answer stated in each gold passage, no alias in a distractor, withheld and
unsupported values stated nowhere, counterfactual swap) is checked when the item is made; a
world that breaks one is drawn again from the same generator.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from calipers.scorers import alias_in, build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.dynamic import generate
from calipers.tasks.rag._item import RAG_INSTRUCTION, RAG_TEMPLATE, Passage, rag_sample
from calipers.tasks.rag._world import (
    ATTRIBUTES,
    KINDS,
    STYLES,
    Doc,
    Entity,
    claim_text,
    fresh_value,
    invent_entity,
    invent_name,
    near_miss,
    question_text,
    render,
)
from calipers.types import GenerateParams, Sample

__all__ = ["DEFAULT_N", "NAME", "UNANSWERABLE_SHARE", "dyn_rag_task", "make_rag_item", "register"]

NAME = "dyn_rag"
DEFAULT_N = 200
UNANSWERABLE_SHARE = 0.2
_TRIES = 50


def _world(r: random.Random, kind: str) -> list[Entity]:
    names = [invent_name(r, kind)]
    while len(names) < 3:
        cand = near_miss(r, names[0])
        if cand not in names:
            names.append(cand)
    taken: list[str] = [w for n in names for w in (n, *n.split())]
    return [invent_entity(r, kind, n, taken) for n in names]


def _docs(r: random.Random, world: list[Entity], attr: str, unanswerable: bool) -> list[Doc]:
    """Which style of document states which attribute, per entity (empty documents dropped)."""
    out: list[Doc] = []
    for e, ent in enumerate(world):
        stated: dict[str, list[str]] = {s: [] for s in STYLES}
        for a in ATTRIBUTES[ent.kind]:
            if a == attr:
                k = (0 if unanswerable else r.choice((1, 1, 2, 2, 3, 4, 5))) if e == 0 else 1
            else:
                k = r.choice((0, 1, 1, 2, 3) if e == 0 else (0, 0, 1))
            for s in r.sample(STYLES, k):
                stated[s].append(a)
        if e == 0 and not any(stated.values()):  # the target needs a document
            other = [a for a in ATTRIBUTES[ent.kind] if a != attr]
            stated[r.choice(STYLES)].append(r.choice(other))
        for s in STYLES:
            if stated[s]:
                r.shuffle(stated[s])
                out.append(Doc(e, s, tuple(stated[s])))
    return out


def _passage(sid: str, doc: Doc, world: list[Entity], gold: bool, kind: Any) -> Passage:
    title, text = render(doc, world[doc.entity])
    return Passage(id=f"{sid}/e{doc.entity}-{doc.style}", title=title, text=text, gold=gold,
                   kind=kind)  # fmt: skip


def _claims(
    r: random.Random, target: Entity, shown: list[Doc], taken: list[str]
) -> list[dict[str, Any]]:
    """Two supported claims (facts the shown documents state) and two unsupported ones (a fresh
    value for one of the target's attributes), shuffled."""
    said = sorted({a for d in shown if d.entity == 0 for a in d.facts})
    claims = [
        {"text": claim_text(target, a, target.values[a]), "supported": True,
         "value": target.values[a].surface}
        for a in r.sample(said, min(2, len(said)))
    ]  # fmt: skip
    for a in r.sample(list(ATTRIBUTES[target.kind]), 2):
        v = fresh_value(r, ATTRIBUTES[target.kind][a][0], taken)
        claims.append({"text": claim_text(target, a, v), "supported": False, "value": v.surface})
    r.shuffle(claims)
    return claims


def _attempt(r: random.Random, sid: str) -> Sample | None:
    kind = r.choice(KINDS)
    attr = r.choice(list(ATTRIBUTES[kind]))
    unanswerable = r.random() < UNANSWERABLE_SHARE
    world = _world(r, kind)
    target = world[0]
    taken = [a for ent in world for v in ent.values.values() for a in v.aliases]
    taken += [w for ent in world for w in (ent.name, *ent.name.split())]
    docs = _docs(r, world, attr, unanswerable)
    texts = [render(d, world[d.entity])[1] for d in docs]
    value = target.values[attr]
    gold_docs = [d for d in docs if d.entity == 0 and attr in d.facts]
    shown = gold_docs if not unanswerable else [d for d in docs if d.entity == 0]
    r.shuffle(shown)
    others = [d for d in docs if d not in shown]
    distractors = [_passage(sid, d, world, False, "hard") for d in others]
    wrong = {
        p.id: world[d.entity].values[attr].surface
        for d, p in zip(others, distractors, strict=True)
        if d.entity and attr in d.facts
    }
    meta: dict[str, Any] = {
        "distractors": [p.model_dump() for p in distractors],
        "wrong_answers": wrong,
        "claims": _claims(r, target, shown, taken),
        "entity": target.name,
        "attribute": attr,
    }
    if unanswerable:
        meta["withheld"] = list(value.aliases)
        if any(alias_in(t, value.aliases) for t in texts):
            return None
    else:
        doc = r.choice(gold_docs)
        cf_value = fresh_value(r, ATTRIBUTES[kind][attr][0], taken)
        title, text = render(doc, target, {attr: cf_value})
        cf = Passage(
            id=f"{_passage(sid, doc, world, True, 'gold').id}-cf", title=title, text=text,
            kind="counterfactual",
        )  # fmt: skip
        meta["counterfactual"] = {"passage": cf.model_dump(), "answer": cf_value.surface}
        if any(alias_in(p.text, value.aliases) for p in distractors) or any(
            alias_in(t, cf_value.aliases) for t in texts
        ):
            return None
    if any(alias_in(t, [c["value"]]) for c in meta["claims"] if not c["supported"] for t in texts):
        return None
    passages = [
        _passage(sid, d, world, not unanswerable, "hard" if unanswerable else "gold") for d in shown
    ]
    answers = [] if unanswerable else list(value.aliases)
    return rag_sample(
        sid, question_text(target, attr), passages, answers,
        unanswerable=unanswerable, category=kind, **meta,
    )  # fmt: skip


def make_rag_item(rng: random.Random, sample_id: str) -> Sample:
    """One ``dyn_rag`` item from its own generator (see the module docstring)."""
    for _ in range(_TRIES):
        item = _attempt(rng, sample_id)
        if item is not None:
            return item
    raise AssertionError(f"dyn_rag: no valid world for item {sample_id} in {_TRIES} draws")


@functools.lru_cache(maxsize=8)
def _items(seed: int, n: int) -> tuple[Sample, ...]:
    return tuple(generate(NAME, make_rag_item, seed, n))


def _load(ctx: LoadContext) -> list[Sample]:
    """``ctx.n`` items (default 200) of ``ctx.seed``, generated once per (seed, n): an arm
    loads its items and then the whole pool."""
    return list(_items(ctx.seed, DEFAULT_N if ctx.n is None else ctx.n))


def dyn_rag_task() -> Task:
    return Task(
        name=NAME,
        version="1",
        description="Fresh RAG items from a seeded fictional world: questions whose answers "
        "the shown passages state (1-5 gold passages), unanswerable questions, near-miss "
        "distractors, counterfactual passages and planted claims, all known exactly.",
        kind="generate",
        load=_load,
        scorers=(build_scorer("rag_outcome"),),
        prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
        params=GenerateParams(max_tokens=32, temperature=0.0),
        default_n=DEFAULT_N,
        dynamic=True,
        source="calipers (generated)",
        tags=("rag", "dynamic"),
    )


def register() -> None:
    """Register dyn_rag (idempotent)."""
    register_task(NAME, dyn_rag_task)
