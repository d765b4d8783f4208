"""Grade-school arithmetic word problems, generated from templates in the spirit of
GSM-Symbolic (Mirzadeh et al., 2024): names, objects and numbers vary with the seed, and some
problems carry an irrelevant sentence with a number in it (GSM-NoOp style) that must not
change the answer. Every answer is computed from the sampled numbers and is a positive integer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._task import Task
from calipers.tasks.dynamic._seeding import fewshot_loader, loader
from calipers.types import GenerateParams, Sample

__all__ = ["TEMPLATES", "make_word_problem", "word_problems_task"]

NAME = "dyn_word_problems"
DISTRACTOR_RATE = 0.4
_REFERS_BACK = re.compile(r"\b(?:it|them)\b", re.IGNORECASE)

_NAMES = (
    "Amara",
    "Ben",
    "Chen",
    "Diego",
    "Elif",
    "Fatima",
    "Grace",
    "Hiro",
    "Ines",
    "Jamal",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tomas",
)
_GOODS = ("notebooks", "pens", "apples", "mugs", "stickers", "candles", "oranges", "rulers")
_THINGS = ("marbles", "cards", "stamps", "shells", "beads", "coins", "buttons", "seeds")
_PRICED = ("jacket", "lamp", "backpack", "bicycle", "toaster", "guitar", "chair", "kettle")
_FRAGILE = ("eggs", "crayons", "pencils", "cookies", "plates", "cups")
_MADE = ("bolts", "bottles", "bricks", "boxes", "toys", "tiles")
_FRACTIONS = (
    ("Half", 1, 2),
    ("One third", 1, 3),
    ("One quarter", 1, 4),
    ("One fifth", 1, 5),
    ("Two thirds", 2, 3),
    ("Three quarters", 3, 4),
)


@dataclass(frozen=True)
class _Problem:
    setup: list[str]
    question: str
    answer: int
    steps: str


Template = Callable[[random.Random, str, str], _Problem]


def _shopping(r: random.Random, n: str, _m: str) -> _Problem:
    g1, g2 = r.sample(_GOODS, 2)
    a, b, p, q = r.randint(2, 12), r.randint(2, 12), r.randint(1, 15), r.randint(1, 15)
    return _Problem(
        [f"{n} buys {a} {g1} for ${p} each and {b} {g2} for ${q} each."],
        f"How many dollars does {n} spend in total?",
        a * p + b * q,
        f"{a} * {p} = {a * p} and {b} * {q} = {b * q}, so {a * p} + {b * q} = {a * p + b * q}.",
    )


def _sharing(r: random.Random, n: str, _m: str) -> _Problem:
    obj, k, each = r.choice(_THINGS), r.randint(2, 9), r.randint(2, 15)
    return _Problem(
        [
            f"{n} has {k * each} {obj}.",
            f"{n} shares them equally among {k} friends and keeps none.",
        ],
        f"How many {obj} does each friend get?",
        each,
        f"{k * each} / {k} = {each}.",
    )


def _savings(r: random.Random, n: str, _m: str) -> _Problem:
    s, w = r.randint(3, 25), r.randint(2, 12)
    x = r.randint(1, s * w - 1)
    return _Problem(
        [
            f"{n} saves ${s} every week for {w} weeks.",
            f"Then {n} spends ${x} on a {r.choice(_PRICED)}.",
        ],
        f"How many dollars does {n} have left?",
        s * w - x,
        f"{s} * {w} = {s * w}, and {s * w} - {x} = {s * w - x}.",
    )


def _ages(r: random.Random, n: str, m: str) -> _Problem:
    a, d, y = r.randint(5, 40), r.randint(2, 30), r.randint(2, 15)
    return _Problem(
        [f"{n} is {a} years old.", f"{m} is {d} years older than {n}."],
        f"How old will {m} be in {y} years?",
        a + d + y,
        f"{m} is {a} + {d} = {a + d} now, so in {y} years {a + d} + {y} = {a + d + y}.",
    )


def _production(r: random.Random, n: str, _m: str) -> _Problem:
    obj, rate, h, d = r.choice(_MADE), r.randint(3, 40), r.randint(2, 10), r.randint(2, 7)
    return _Problem(
        [
            f"A machine in {n}'s workshop makes {rate} {obj} per hour.",
            f"The machine runs for {h} hours each day.",
        ],
        f"How many {obj} does the machine make in {d} days?",
        rate * h * d,
        f"{rate} * {h} = {rate * h} per day, and {rate * h} * {d} = {rate * h * d}.",
    )


def _discount(r: random.Random, n: str, _m: str) -> _Problem:
    thing, p, pct = r.choice(_PRICED), 20 * r.randint(1, 15), r.choice((10, 20, 25, 40, 50, 75))
    off = p * pct // 100
    return _Problem(
        [
            f"{n} wants to buy a {thing}.",
            f"The {thing} costs ${p}.",
            f"The store sells it at {pct}% off.",
        ],
        f"How many dollars does {n} pay for the {thing} on sale?",
        p - off,
        f"{pct}% of {p} is {off}, so {p} - {off} = {p - off}.",
    )


def _changes(r: random.Random, n: str, m: str) -> _Problem:
    obj, a = r.choice(_THINGS), r.randint(10, 60)
    b, c = r.randint(1, a - 1), r.randint(2, 30)
    return _Problem(
        [f"{n} has {a} {obj}.", f"{n} gives {b} of them to {m}.", f"Then {n} buys {c} more {obj}."],
        f"How many {obj} does {n} have now?",
        a - b + c,
        f"{a} - {b} = {a - b}, and {a - b} + {c} = {a - b + c}.",
    )


def _packs(r: random.Random, n: str, _m: str) -> _Problem:
    obj, p, k = r.choice(_FRAGILE), r.randint(2, 9), r.randint(4, 12)
    bad = r.randint(2, p * k - 1)
    return _Problem(
        [
            f"{n} buys {p} packs of {obj}.",
            f"Each pack holds {k} {obj}.",
            f"{bad} of the {obj} are broken.",
        ],
        f"How many unbroken {obj} does {n} have?",
        p * k - bad,
        f"{p} * {k} = {p * k}, and {p * k} - {bad} = {p * k - bad}.",
    )


def _travel(r: random.Random, n: str, _m: str) -> _Problem:
    v, t, w, u = r.randint(40, 120), r.randint(2, 6), r.randint(40, 120), r.randint(2, 6)
    return _Problem(
        [
            f"{n} takes a train.",
            f"The train travels at {v} kilometers per hour for {t} hours.",
            f"Then the train travels at {w} kilometers per hour for {u} hours.",
        ],
        "How many kilometers does the train travel in total?",
        v * t + w * u,
        f"{v} * {t} = {v * t} and {w} * {u} = {w * u}, so {v * t} + {w * u} = {v * t + w * u}.",
    )


def _fraction(r: random.Random, n: str, _m: str) -> _Problem:
    word, num, den = r.choice(_FRACTIONS)
    total = den * r.randint(3, 10)
    part = total * num // den
    return _Problem(
        [f"There are {total} students in {n}'s class.", f"{word} of them play soccer."],
        "How many students in the class do not play soccer?",
        total - part,
        f"{word.lower()} of {total} is {part}, so {total} - {part} = {total - part}.",
    )


def _recipe(r: random.Random, n: str, _m: str) -> _Problem:
    b, f, k = r.randint(6, 24), r.randint(2, 5), r.randint(2, 6)
    return _Problem(
        [f"{n}'s recipe for {b} muffins uses {f} cups of flour."],
        f"How many cups of flour does {n} need for {b * k} muffins?",
        f * k,
        f"{b * k} / {b} = {k} batches, and {k} * {f} = {f * k}.",
    )


TEMPLATES: dict[str, Template] = {
    "shopping": _shopping,
    "sharing": _sharing,
    "savings": _savings,
    "ages": _ages,
    "production": _production,
    "discount": _discount,
    "changes": _changes,
    "packs": _packs,
    "travel": _travel,
    "fraction": _fraction,
    "recipe": _recipe,
}
"""Template name (the sample's category) -> generator."""


def _distractor(r: random.Random, n: str) -> str:
    options = (
        f"{n}'s cousin lives {r.randint(2, 90)} kilometers away.",
        f"It was {r.randint(12, 34)} degrees outside that day.",
        f"{n} has lived in the town for {r.randint(2, 20)} years.",
        f"{n}'s bicycle has {r.choice((3, 7, 18, 21))} gears.",
        f"The building next door has {r.randint(3, 30)} floors.",
        f"{n}'s favorite number is {r.randint(2, 99)}.",
    )
    return r.choice(options)


def make_word_problem(rng: random.Random, sample_id: str) -> Sample:
    """One word problem; its template is the category and ``fields["solution"]`` a worked
    answer ending in ``#### N`` (what few-shot examples show)."""
    category = rng.choice(sorted(TEMPLATES))
    name, other = rng.sample(_NAMES, 2)
    problem = TEMPLATES[category](rng, name, other)
    setup = list(problem.setup)
    # A distractor goes after the first sentence, never right before one that refers back
    # ("it", "them"), so it cannot change what a pronoun means.
    after = [*setup[1:], problem.question]
    slots = [i + 1 for i, text in enumerate(after) if not _REFERS_BACK.search(text)]
    distractor = rng.random() < DISTRACTOR_RATE and bool(slots)
    if distractor:
        setup.insert(rng.choice(slots), _distractor(rng, name))
    return Sample(
        id=sample_id,
        input=" ".join([*setup, problem.question]),
        target=str(problem.answer),
        category=category,
        fields={"solution": f"{problem.steps}\n#### {problem.answer}"},
        metadata={"template": category, "distractor": distractor},
    )


def word_problems_task() -> Task:
    default_n = 50
    return Task(
        name=NAME,
        version="1",
        description="Fresh GSM-style word problems (11 templates, some with an irrelevant "
        "sentence); numeric answer after '####'.",
        kind="generate",
        load=loader(NAME, make_word_problem, default_n),
        fewshot=fewshot_loader(NAME, make_word_problem, default_n),
        scorers=(build_scorer("numeric_match"),),
        prompt=PromptTemplate(
            instruction="Solve each problem. Reason briefly, then end your answer with "
            "'#### <number>'.",
            template="Question: {input}\nAnswer:",
            answer=" {solution}",
        ),
        default_few_shot=3,
        few_shot_sampling="fixed",
        params=GenerateParams(max_tokens=160, temperature=0.0, stop=("\nQuestion:",)),
        default_n=default_n,
        dynamic=True,
        source="calipers (generated)",
        tags=("dynamic", "math", "reasoning"),
    )
