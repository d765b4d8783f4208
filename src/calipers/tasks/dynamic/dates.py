"""Date reasoning: the weekday or the date N days after or before a given date.

``dyn_dates`` asks for a generated answer in a fixed format (a weekday name, or YYYY-MM-DD);
``dyn_dates_mc`` asks the same kinds of question with four options (the answer and three
near misses: off by a day or a week, or counted the wrong way) scored by log-likelihood.
Start dates fall between 1950 and 2049, so leap days and month and year boundaries occur.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import date, timedelta

from calipers.errors import ConfigError
from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.dynamic._seeding import fewshot_loader, loader
from calipers.types import GenerateParams, Sample

__all__ = [
    "FAMILIES",
    "WEEKDAYS",
    "dates_mc_task",
    "dates_task",
    "long_date",
    "make_date_mc",
    "make_date_question",
]

NAME = "dyn_dates"
NAME_MC = "dyn_dates_mc"
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FAMILIES = ("weekday_after", "weekday_before", "date_after", "date_before")
"""Question families (the sample's category)."""

_FIRST, _LAST = date(1950, 1, 1).toordinal(), date(2049, 12, 31).toordinal()
_ANSWER_PATTERN = r"(\d{4}-\d{2}-\d{2}|" + "|".join(WEEKDAYS) + ")"


def long_date(d: date) -> str:
    """``March 3, 2025`` (no zero padding, independent of the locale)."""
    months = (
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    )
    return f"{months[d.month - 1]} {d.day}, {d.year}"


def _question(rng: random.Random) -> tuple[str, date, int, str]:
    """(family, start, signed offset in days, question text without the format request)."""
    family = rng.choice(FAMILIES)
    start = date.fromordinal(rng.randint(_FIRST, _LAST))
    weekday = family.startswith("weekday")
    days = rng.randint(2, 100) if weekday else rng.randint(2, 75)
    sign = 1 if family.endswith("after") else -1
    direction = "after" if sign > 0 else "before"
    if weekday:
        text = (
            f"What day of the week is {days} days {direction} "
            f"{WEEKDAYS[start.weekday()]}, {long_date(start)}?"
        )
    else:
        text = f"What is the date {days} days {direction} {long_date(start)}?"
    return family, start, sign * days, text


def make_date_question(rng: random.Random, sample_id: str) -> Sample:
    """A generation item: the answer is a weekday name or an ISO date (YYYY-MM-DD)."""
    family, start, offset, text = _question(rng)
    answer_day = start + timedelta(days=offset)
    if family.startswith("weekday"):
        target = WEEKDAYS[answer_day.weekday()]
        text += " Answer with the name of the day."
    else:
        target = answer_day.isoformat()
        text += " Answer with the date in YYYY-MM-DD format."
    return Sample(
        id=sample_id,
        input=text,
        target=target,
        category=family,
        metadata={"start": start.isoformat(), "offset": offset},
    )


def _distractors(rng: random.Random, family: str, start: date, offset: int) -> list[str]:
    """Three wrong options near the answer, distinct from it and each other."""
    right = start + timedelta(days=offset)
    if family.startswith("weekday"):
        near = [WEEKDAYS[(right.weekday() + k) % 7] for k in (1, -1, 2, -2, 3)]
        near.append(WEEKDAYS[start.weekday()])  # the start's own weekday
        near.append(WEEKDAYS[(start - timedelta(days=offset)).weekday()])  # the wrong way
        rng.shuffle(near)
        out: list[str] = []
        for w in near:
            if w != WEEKDAYS[right.weekday()] and w not in out:
                out.append(w)
        return out[:3]
    candidates = [right + timedelta(days=k) for k in (1, -1, 7, -7, 2, -2)]
    candidates.append(start - timedelta(days=offset))  # counted the wrong way
    rng.shuffle(candidates)
    picked: list[date] = []
    for d in candidates:
        if d != right and d not in picked:
            picked.append(d)
    return [long_date(d) for d in picked[:3]]


def make_date_mc(rng: random.Random, sample_id: str) -> Sample:
    """A four-option item; the options are weekday names or long dates, in seeded order."""
    family, start, offset, text = _question(rng)
    right = start + timedelta(days=offset)
    answer = WEEKDAYS[right.weekday()] if family.startswith("weekday") else long_date(right)
    options = [answer, *_distractors(rng, family, start, offset)]
    rng.shuffle(options)
    return Sample(
        id=sample_id,
        input=text,
        target=options.index(answer),
        choices=tuple(options),
        category=family,
        metadata={"start": start.isoformat(), "offset": offset},
    )


def dates_task() -> Task:
    default_n = 50
    return Task(
        name=NAME,
        version="1",
        description="Fresh date questions: the weekday or the date N days after/before a "
        "date; answer as a weekday name or YYYY-MM-DD.",
        kind="generate",
        load=loader(NAME, make_date_question, default_n),
        fewshot=fewshot_loader(NAME, make_date_question, default_n),
        # The last weekday or ISO date in the reply: restating the question's weekday first
        # ("10 days after Monday is Thursday") still counts, listing every day does not help.
        scorers=(
            build_scorer(
                {"name": "regex_match", "args": {"pattern": _ANSWER_PATTERN, "last": True}}
            ),
        ),
        prompt=PromptTemplate(template="Question: {input}\nAnswer:", answer=" {target}"),
        default_few_shot=3,
        few_shot_sampling="fixed",
        params=GenerateParams(max_tokens=32, temperature=0.0, stop=("\nQuestion:",)),
        default_n=default_n,
        dynamic=True,
        source="calipers (generated)",
        tags=("dynamic", "dates", "reasoning"),
    )


MC_FORMULATIONS = ("cloze", "letter", "generate")
_MC_HEADER = "Answer the question about dates with the letter of the right option.\n\n"


def _lettered(
    load: Callable[[LoadContext], Sequence[Sample]],
    letters: bool,
) -> Callable[[LoadContext], list[Sample]]:
    """The letter/generate formulations of the four-option items: the options shown with
    letters (``{options}``); ``letters`` makes the choices the letters themselves (scored by
    log-likelihood of " A".." D"), else they stay the texts (read from a generated reply)."""

    def wrapped(ctx: LoadContext) -> list[Sample]:
        out = []
        for s in load(ctx):
            texts = list(s.choices or ())
            fields = {
                **s.fields,
                "options": "\n".join(f"{chr(65 + i)}. {t}" for i, t in enumerate(texts)),
            }
            upd: dict[str, object] = {"fields": fields}
            if letters:
                upd["choices"] = tuple(chr(65 + i) for i in range(len(texts)))
                upd["metadata"] = {**s.metadata, "option_texts": texts}
            out.append(s.model_copy(update=upd))
        return out

    return wrapped


def dates_mc_task(formulation: str = "cloze") -> Task:
    """Four-option date questions. ``cloze`` (default) scores each option text by
    log-likelihood; ``letter`` shows lettered options and scores " A".." D"; ``generate``
    reads the letter from a generated reply. A fresh control for position and
    option-text effects (``calipers contamination``), since its items cannot be memorised."""
    if formulation not in MC_FORMULATIONS:
        raise ConfigError(
            f"{NAME_MC}: no formulation {formulation!r}.",
            hint=f"Use one of {', '.join(MC_FORMULATIONS)}.",
        )
    default_n = 50
    load = loader(NAME_MC, make_date_mc, default_n)
    shots = fewshot_loader(NAME_MC, make_date_mc, default_n)
    prompt = PromptTemplate(
        template="Question: {input}\nAnswer:", answer=" {target}", continuation=" {choice}"
    )
    scorer = "loglikelihood_mc"
    if formulation != "cloze":
        letters = formulation == "letter"
        load, shots = _lettered(load, letters), _lettered(shots, letters)
        prompt = PromptTemplate(
            template=_MC_HEADER + "Question: {input}\n{options}\nAnswer:", answer=" {target_letter}"
        )
        scorer = "loglikelihood_mc" if letters else "choice_letter"
    return Task(
        name=NAME_MC,
        version="1",
        description="Fresh date questions with four options (the answer and three near "
        "misses), scored by log-likelihood.",
        kind="generate" if formulation == "generate" else "multiple_choice",
        load=load,
        fewshot=shots,
        scorers=(build_scorer(scorer),),
        prompt=prompt,
        default_few_shot=0,
        formulation=None if formulation == "cloze" else formulation,
        params=GenerateParams(max_tokens=16, temperature=0.0),
        default_n=default_n,
        dynamic=True,
        source="calipers (generated)",
        tags=("dynamic", "dates", "reasoning"),
    )
