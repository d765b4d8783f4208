"""rag_outcome: every outcome branch on hand-written items, and counts that agree with a second,
independent implementation over random items and replies."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from calipers.scorers import build_scorer
from calipers.scorers._rag import short_answer
from calipers.tasks.rag import Passage, rag_sample
from calipers.types import ModelResponse, Sample, SampleOutput

GOLD = Passage(id="g", text="Varnholt was founded by Ilse Marrow in 1802.", gold=True, kind="gold")
HARD = Passage(id="h", text="Nearby Dunmere was founded by Otto Kessel.", kind="hard")
RANDOM = Passage(id="r", text="The river Lune floods every spring near Ashby.", kind="distractor")
CF = Passage(id="c", text="Varnholt was founded by Piet Sorel in 1802.", kind="counterfactual")
FILLER = Passage(id="f", text="Weather reports mention a cold wind.", kind="filler")
DISTRACTORS = [{**HARD.model_dump(), "metadata": {"wrong_answer": "Otto Kessel"}}]


def item(*shown: Passage, unanswerable: bool = False, **meta: Any) -> Sample:
    answers = [] if unanswerable else ["Ilse Marrow", "Marrow"]
    meta.setdefault("distractors", DISTRACTORS)
    meta.setdefault("counterfactual", {"passage": CF.model_dump(), "answer": "Piet Sorel"})
    return rag_sample(
        "q", "Who founded Varnholt?", shown, answers, unanswerable=unanswerable, **meta
    )


def outcome(sample: Sample, text: str) -> dict[str, float]:
    out = SampleOutput(response=ModelResponse(text=text))
    return asyncio.run(build_scorer("rag_outcome")(sample, out)).values


def v(c: int, a: int, u: int, **rest: int) -> dict[str, float]:
    return {"correct": c, "abstained": a, "unsupported": u, **rest}


CASES = [
    # gold only: correct, abstained, unsupported; no distractor or counterfactual shown
    ("gold, alias", item(GOLD), "Ilse Marrow", v(1, 0, 0)),
    ("gold, other alias, prefix", item(GOLD), "Answer: Marrow.", v(1, 0, 0)),
    ("gold, abstains: a miss", item(GOLD), "I don't know.", v(0, 1, 0)),
    ("gold, made up", item(GOLD), "Napoleon", v(0, 0, 1)),
    ("gold, wrong but in gold", item(GOLD), "1802", v(0, 0, 0)),
    ("gold, known wrong not shown", item(GOLD), "Otto Kessel", v(0, 0, 1)),
    ("empty reply", item(GOLD), "  \n", v(0, 0, 0)),
    ("first line only", item(GOLD), "Ilse Marrow\nI don't know the year.", v(1, 0, 0)),
    # distractors shown: distractor_adopted applies
    ("hard wrong answer", item(GOLD, HARD), "**Answer:** Otto Kessel", v(0, 0, 0, distractor=1)),
    ("random distractor value", item(GOLD, RANDOM), "Lune", v(0, 0, 0, distractor=1)),
    ("value in gold too", item(GOLD, RANDOM), "1802", v(0, 0, 0, distractor=0)),
    ("right with distractors", item(RANDOM, GOLD, HARD), "Ilse Marrow", v(1, 0, 0, distractor=0)),
    ("filler counts", item(GOLD, FILLER), "cold wind", v(0, 0, 0, distractor=1)),
    ("made up with distractors", item(GOLD, HARD), "Napoleon", v(0, 0, 1, distractor=0)),
    # gold dropped: abstaining is right
    ("dropped, abstains", item(HARD, RANDOM), "I don't know", v(1, 1, 0, distractor=0)),
    ("dropped, alias anyway", item(HARD, RANDOM), "Ilse Marrow", v(0, 0, 1, distractor=0)),
    ("dropped, wrong answer", item(HARD, RANDOM), "Otto Kessel", v(0, 0, 0, distractor=1)),
    (
        "unanswerable, abstains",
        item(RANDOM, unanswerable=True),
        "I do not know",
        v(1, 1, 0, distractor=0),
    ),
    ("unanswerable, answers", item(RANDOM, unanswerable=True), "Ashby", v(0, 0, 0, distractor=1)),
    # counterfactual shown: counterfactual_followed applies
    ("follows swap", item(GOLD, CF), "Piet Sorel", v(0, 0, 0, cf=1)),
    ("resists swap", item(GOLD, CF), "Ilse Marrow", v(1, 0, 0, cf=0)),
    ("hedges both", item(GOLD, CF), "Ilse Marrow or Piet Sorel", v(1, 0, 0, cf=0)),
    ("swap alone, follows", item(CF), "Piet Sorel", v(0, 0, 0, cf=1)),
    ("swap alone, abstains", item(CF), "I don't know", v(1, 1, 0, cf=0)),
    ("swap alone, alias", item(CF), "Ilse Marrow", v(0, 0, 1, cf=0)),
    ("swap and hard", item(GOLD, CF, HARD), "Piet Sorel", v(0, 0, 0, distractor=0, cf=1)),
    (
        "swap value also in a distractor",
        item(GOLD, CF, Passage(id="x", text="Piet Sorel sailed.")),
        "Piet Sorel",
        v(0, 0, 0, distractor=0, cf=1),
    ),
    ("no swap recorded", item(GOLD, CF, counterfactual=None), "Piet Sorel", v(0, 0, 0)),
]


def _expected(want: dict[str, float]) -> dict[str, float]:
    names = {"distractor": "distractor_adopted", "cf": "counterfactual_followed"}
    return {names.get(k, k): float(x) for k, x in want.items()}


@pytest.mark.parametrize(("name", "sample", "reply", "want"), CASES, ids=[c[0] for c in CASES])
def test_outcome_branches(name: str, sample: Sample, reply: str, want: dict[str, float]) -> None:
    assert outcome(sample, reply) == _expected(want)


def test_wrong_answer_of_a_distractor_without_id_is_found_by_its_text() -> None:
    no_id = [{"text": HARD.text, "wrong_answer": "Otto Kessel"}]
    got = outcome(item(GOLD, HARD, distractors=no_id), "Otto Kessel")
    assert got["distractor_adopted"] == 1.0
    details = asyncio.run(
        build_scorer("rag_outcome")(
            item(GOLD, HARD), SampleOutput(response=ModelResponse(text="Otto Kessel"))
        )
    ).metadata
    assert details["wrong_answer"] == "Otto Kessel" and details["alias"] is None


@pytest.mark.parametrize(
    ("reply", "short"),
    [
        ("Answer: Paris", "Paris"),
        ("\n\nA: x\nmore", "x"),
        ("Final answer: **Paris**", "Paris"),
        ("Answer:\nParis", "Paris"),
        ("The answer is: Paris.", "Paris."),
        ("Paris, I think.\nBecause ...", "Paris, I think."),
        ("", ""),
    ],
)
def test_short_answer(reply: str, short: str) -> None:
    assert short_answer(reply) == short


# --- a second implementation over random items ----------------------------------------------

CONS, VOWELS = "bdfgklmnprstvz", "aeiou"


def word(rng: random.Random) -> str:
    return "".join(rng.choice(CONS) + rng.choice(VOWELS) for _ in range(3))


def contig(needle: list[str], hay: list[str]) -> bool:
    n = len(needle)
    return any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))


def random_case(rng: random.Random, i: int) -> tuple[Sample, str, dict[str, Any]]:
    """An item over made-up one-token words (unchanged by normalisation, no stopwords), a reply,
    and the plain facts the second implementation reads."""
    subj, alias, wrong, cf_val, noise, year = (word(rng) for _ in range(6))
    alias2 = [alias, word(rng)]
    unanswerable = rng.random() < 0.15
    gold = [subj, "founded", "by", *alias2, "in", year]
    pool = {
        "gold": gold,
        "hard": ["nearby", word(rng), "founded", "by", wrong],
        "distractor": ["river", cf_val if rng.random() < 0.2 else noise, "floods", "often"],
        "counterfactual": [subj, "founded", "by", cf_val, "in", year],
        "filler": ["wind", word(rng), "cold"],
    }
    if unanswerable:
        del pool["gold"], pool["counterfactual"]
    kinds = [k for k in pool if rng.random() < 0.6] or ["filler"]
    shown = [Passage(id=k, text=" ".join(pool[k]) + ".", gold=k == "gold", kind=k) for k in kinds]
    aliases = [] if unanswerable else [alias, " ".join(alias2)]
    choice = rng.choice(
        [
            [alias],
            alias2,
            [wrong],
            [cf_val],
            [noise],
            [year],
            [word(rng)],
            [alias, cf_val],
            [],
            None,
        ]
    )
    reply = "I don't know." if choice is None else rng.choice(["", "Answer: "]) + " ".join(choice)
    meta: dict[str, Any] = {
        "distractors": [{"id": "hard", "text": " ".join(pool["hard"]), "wrong_answer": wrong}],
    }
    if not unanswerable:
        meta["counterfactual"] = {"passage": {"id": "counterfactual"}, "answer": cf_val}
    sample = rag_sample(f"r{i}", "Who?", shown, aliases, unanswerable=unanswerable, **meta)
    facts = {
        "tokens": choice,
        "kinds": kinds,
        "pool": pool,
        "aliases": [a.split() for a in aliases],
        "wrong": wrong,
        "cf": None if unanswerable else cf_val,
        "unanswerable": unanswerable,
    }
    return sample, reply, facts


def second_implementation(f: dict[str, Any]) -> dict[str, float]:
    toks, kinds, pool = f["tokens"], f["kinds"], f["pool"]
    abstained = toks is None
    answered = bool(toks)

    def in_one(names: list[str]) -> bool:
        return any(set(toks or []) <= set(pool[k]) for k in names)

    alias = answered and any(contig(a, toks) for a in f["aliases"])
    gold_shown = "gold" in kinds
    supported = answered and ((alias and gold_shown) or in_one(kinds))
    out = {
        "correct": alias if gold_shown and not f["unanswerable"] else abstained,
        "abstained": abstained,
        "unsupported": answered and not supported,
    }
    others = [k for k in kinds if k not in ("gold", "counterfactual")]
    if others:
        hit = "hard" in kinds and contig([f["wrong"]], toks or [])
        only = in_one(others) and not in_one([k for k in kinds if k not in others])
        out["distractor_adopted"] = answered and not alias and (hit or only)
    if "counterfactual" in kinds and f["cf"] is not None:
        out["counterfactual_followed"] = answered and not alias and contig([f["cf"]], toks)
    return {k: float(x) for k, x in out.items()}


def test_counts_agree_with_a_second_implementation() -> None:
    rng = random.Random(19)
    got: dict[str, list[float]] = {}
    want: dict[str, list[float]] = {}
    for i in range(600):
        sample, reply, facts = random_case(rng, i)
        mine, theirs = outcome(sample, reply), second_implementation(facts)
        assert set(mine) == set(theirs), (reply, facts)
        for k in mine:
            got.setdefault(k, []).append(mine[k])
            want.setdefault(k, []).append(theirs[k])
    counts = {k: (sum(x), len(x)) for k, x in got.items()}
    assert counts == {k: (sum(x), len(x)) for k, x in want.items()}
    assert got == want  # item by item, not just in total
    # every outcome occurred and was absent somewhere, so the comparison tested something
    assert all(0 < s < n for s, n in counts.values()), counts


def test_a_trace_item_without_a_reference_answer_gets_only_abstained_and_unsupported() -> None:
    from calipers.tasks.rag import Passage, rag_sample

    s = rag_sample(
        "t1",
        "Where is the head office?",
        [Passage(id="d1", text="The head office is in Lyon since 2004.")],
        [],
        answer_unknown=True,
    )
    scorer = build_scorer("rag_outcome")

    def values(text: str) -> dict[str, float]:
        out = SampleOutput(response=ModelResponse(text=text))
        return asyncio.run(scorer(s, out)).values

    assert values("Lyon") == {"abstained": 0.0, "unsupported": 0.0}
    assert values("Berlin") == {"abstained": 0.0, "unsupported": 1.0}
    assert values("I don't know.") == {"abstained": 1.0, "unsupported": 0.0}
