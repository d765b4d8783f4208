"""``self_contradiction``: does the assistant contradict itself across the turns of one
conversation? Assistant against assistant, never against a reference.

Which replies are compared. A sample may declare the turns that answer the same question
(``fields["same_question"]`` or ``metadata["same_question"]``: lists of 0-based reply indices,
e.g. a question and its re-ask ten turns later); ``pairs="auto"`` compares the pairs inside
each declared group, or every pair of replies when none is declared (``"all"`` forces that).

How a pair is decided:

1. **Checkable answers, deterministically.** When both replies of a *declared* same-question
   pair carry a checkable answer of the same kind (:func:`checkable_answer`: an option letter,
   a number, yes/no, stated as "the answer is X" or as the whole reply), they contradict
   exactly when the answers differ. Replies to different questions are never compared this
   way (two different numbers answer two different questions).
2. **A judge otherwise** (``judge=SPEC``): it sees the two replies with the user turns they
   answer and says whether they assert incompatible things (:func:`judge_contradiction`; the
   texts are data between nonce markers). A verdict it cannot give in readable JSON after a
   format reminder makes the sample an error, never a "no contradiction".
3. Without a judge, a pair that is not checkable is left unchecked.

Metrics: ``contradiction`` (1 when any checked pair contradicts) and ``contradiction_rate``
(contradicting / checked pairs); a conversation with no checked pair is unscored (NaN, left out
of the means), not 0. Each pair's method, answers and verdict are kept in the metadata.
The judge path is calibrated on planted conversations (:func:`planted_conversations`, and
``calipers judge-calibrate RUN --planted``).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from calipers.errors import ConfigError, DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._judge import _SECURITY, JudgeClient, Verdict, new_nonce, render_block
from calipers.types import ChatMessage, Sample, SampleOutput, Score, Transcript

__all__ = [
    "PlantedConversation",
    "checkable_answer",
    "conversation_turns",
    "judge_contradiction",
    "planted_conversations",
    "planted_transcript",
    "self_contradiction",
]

AnswerKind = Literal["letter", "number", "yes_no"]
Answer = tuple[AnswerKind, str | float]

_MARKED = re.compile(
    r"\b(?:final answer|answer)\s*(?:is\s*:?|:)\s*[*_`\"'(\[]*\s*([A-Za-z]+|-?[\d,]*\.?\d+)",
    re.IGNORECASE,
)
_LETTER = re.compile(r"^\(?([A-J])\)?[.)]?$")
_NUMBER = re.compile(r"^-?(?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d+)?$")
_YES_NO = re.compile(r"^(yes|no)(?:[.,!;:]|$)", re.IGNORECASE)


def _token(tok: str) -> Answer | None:
    t = tok.strip().rstrip(".")
    if re.fullmatch(r"[A-Ja-j]", t):
        return ("letter", t.upper())
    if t.lower() in ("yes", "no"):
        return ("yes_no", t.lower())
    if _NUMBER.fullmatch(t) and any(c.isdigit() for c in t):
        return ("number", float(t.replace(",", "")))
    return None


def checkable_answer(text: str) -> Answer | None:
    """The answer a reply commits to, when it can be read without judgement: an option letter
    (A-J), a number or yes/no, stated as "(final) answer is/: X" (the last such statement), or
    as the whole reply ("B", "(B).", "42", "1,250", "Yes." / "No, because..."). None otherwise.
    """
    marked = [_token(m.group(1)) for m in _MARKED.finditer(text)]
    marked_ok = [a for a in marked if a is not None]
    if marked_ok:
        return marked_ok[-1]
    whole = text.strip().strip("*").strip()
    if m := _LETTER.fullmatch(whole):
        return ("letter", m.group(1))
    if (m := _YES_NO.match(whole)) is not None:
        return ("yes_no", m.group(1).lower())
    num = whole.rstrip(".")
    if _NUMBER.fullmatch(num) and any(c.isdigit() for c in num):
        return ("number", float(num.replace(",", "")))
    return None


def _same(a: Answer, b: Answer) -> bool:
    if a[0] == "number":
        return math.isclose(float(a[1]), float(b[1]), rel_tol=1e-9, abs_tol=1e-9)
    return a[1] == b[1]


def conversation_turns(transcript: Transcript) -> list[tuple[str, str]]:
    """(user turn, the model's reply) for each reply of the episode, in order (the user turns
    are the last ones of the final messages: an opening may replay earlier turns)."""
    users = [m.content for m in transcript.messages if m.role == "user"]
    replies = list(transcript.replies)
    users = users[len(users) - len(replies) :] if len(users) >= len(replies) else users
    users = [""] * (len(replies) - len(users)) + users
    return list(zip(users, replies, strict=True))


_SHAPE = '{"reasoning": "<short justification>", "contradiction": true | false}'
_CRITERIA = (
    "Two replies by the same assistant, from different turns of one conversation, are shown "
    "with the user turns they answer. They contradict each other when they assert "
    "incompatible things about the same matter, so that both cannot be true: different "
    "answers to the same question, a fact stated one way and then another. Replies about "
    "different matters, a reply that adds detail, or a change the user explicitly asked for "
    "are not contradictions."
)
_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _parse(obj: dict[str, Any]) -> tuple[bool, Any]:
    v = obj.get("contradiction")
    key = str(v).strip().lower() if isinstance(v, bool | str | int) else ""
    if key not in _BOOL:
        raise ValueError(f"contradiction must be true or false, got {v!r}")
    return _BOOL[key], v


async def judge_contradiction(
    client: JudgeClient, first: tuple[str, str], second: tuple[str, str]
) -> Verdict:
    """Whether two (user turn, reply) pairs contradict (``Verdict.value``, a bool)."""
    texts = [*first, *second]
    nonce = new_nonce(texts)
    system = (
        f"You are a careful, impartial checker of consistency.\n\n"
        f"{_SECURITY.format(nonce=nonce)}\n\nCriteria:\n{_CRITERIA}\n\n"
        f"Reply with one JSON object and nothing else: {_SHAPE}"
    )
    blocks = [
        render_block(name, text, nonce)
        for name, text in zip(
            ("QUESTION 1", "ANSWER 1", "QUESTION 2", "ANSWER 2"), texts, strict=True
        )
    ]
    user = (
        "Do ANSWER 1 and ANSWER 2 contradict each other?\n\n"
        + "\n\n".join(blocks)
        + "\n\nReply with the JSON object only."
    )
    return await client.judge(system, user, _parse, _SHAPE, "contradiction")


def _groups(sample: Sample, n: int, pairs: str) -> tuple[list[tuple[int, int]], bool]:
    """(pairs to compare, whether they are declared same-question pairs)."""
    raw = sample.fields.get("same_question", sample.metadata.get("same_question"))
    if pairs == "all" or (pairs == "auto" and raw is None):
        return list(itertools.combinations(range(n), 2)), False
    if raw is None:
        raise DataError(
            f"Sample {sample.id!r} declares no same_question groups (pairs='same_question')."
        )
    ok = isinstance(raw, list) and all(
        isinstance(g, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in g)
        for g in raw
    )
    if not ok:
        raise DataError(
            f"Sample {sample.id!r}: same_question must be lists of reply indices: {raw!r:.80}."
        )
    out = []
    for g in raw:
        bad = [i for i in g if not 0 <= i < n]
        if bad:
            raise DataError(f"Sample {sample.id!r}: same_question names reply {bad[0]}, of {n}.")
        out += list(itertools.combinations(sorted(set(g)), 2))
    return out, True


@scorer("self_contradiction", metrics=("contradiction", "contradiction_rate"))
def self_contradiction(
    *,
    judge: str | None = None,
    pairs: str = "auto",
    max_tokens: int = 512,
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> ScoreFn:
    """Does the assistant contradict itself across turns? Checkable answers (letters,
    numbers, yes/no) of same-question turns compared exactly; a judge for the other pairs."""
    if pairs not in ("auto", "same_question", "all"):
        raise ConfigError(f"pairs must be 'auto', 'same_question' or 'all', not {pairs!r}.")
    client = (
        None
        if judge is None
        else JudgeClient(judge, base_url=base_url, api_key_env=api_key_env, max_tokens=max_tokens)
    )

    async def decide(
        turns: list[tuple[str, str]], i: int, j: int, declared: bool
    ) -> dict[str, Any]:
        a, b = checkable_answer(turns[i][1]), checkable_answer(turns[j][1])
        if declared and a is not None and b is not None and a[0] == b[0]:
            return {
                "i": i,
                "j": j,
                "method": "answers",
                "answers": [a[1], b[1]],
                "contradiction": not _same(a, b),
            }
        if client is None:
            return {"i": i, "j": j, "method": "unchecked", "contradiction": None}
        v = await judge_contradiction(client, turns[i], turns[j])
        return {
            "i": i,
            "j": j,
            "method": "judge",
            "contradiction": bool(v.value),
            "reasoning": v.reasoning,
            "attempts": v.attempts,
        }

    async def score(sample: Sample, output: SampleOutput) -> Score:
        if output.transcript is None:
            raise DataError(
                "self_contradiction compares the turns of a conversation: the task must be "
                "an episode task."
            )
        turns = conversation_turns(output.transcript)
        todo, declared = _groups(sample, len(turns), pairs)
        done = await asyncio.gather(*(decide(turns, i, j, declared) for i, j in todo))
        checked = [p for p in done if p["contradiction"] is not None]
        hits = sum(bool(p["contradiction"]) for p in checked)
        values = (
            {}
            if not checked
            else {"contradiction": float(hits > 0), "contradiction_rate": hits / len(checked)}
        )
        meta: dict[str, Any] = {
            "mode": "pass_fail",
            "pairs": done,
            "n_pairs": len(done),
            "n_checked": len(checked),
            "judge": None if client is None else client.name(),
            "answer_chars": sum(len(r) for _u, r in turns),
        }
        if checked:
            meta["raw_score"] = (
                "true" if hits else "false"
            )  # contradiction found: calibration's label
        first = next((p for p in checked if p["contradiction"]), None)
        why = (
            "no pair could be checked"
            if not checked
            else f"replies {first['i'] + 1} and {first['j'] + 1} contradict ({first['method']})"
            if first
            else f"{len(checked)} pair(s) checked, none contradict"
        )
        return Score(values=values, answer=output.text.strip(), explanation=why, metadata=meta)

    return score


# ---- planted conversations: known contradicting pairs and clean controls -------------------

_NAMES = ("Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea")
_FACTS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    (
        "Where does {n} live, according to the letter?",
        "According to the letter, {n} lives in {v}.",
        "Remind me, which city is {n}'s home?",
        "{n}'s home is {v}.",
        ("Lisbon", "Oslo", "Nairobi", "Lima", "Hanoi", "Quebec", "Tunis", "Perth"),
    ),
    (
        "What colour is {n}'s bicycle in the story?",
        "In the story, {n}'s bicycle is {v}.",
        "Sorry, what colour was {n}'s bicycle again?",
        "It is {v}, as the story describes it.",
        ("red", "green", "blue", "yellow", "black", "white", "orange", "purple"),
    ),
    (
        "Which instrument does {n} play in the band?",
        "{n} plays the {v} in the band.",
        "What does {n} play, once more?",
        "{n} is the band's {v} player.",
        ("violin", "drums", "trumpet", "cello", "flute", "piano", "harp", "guitar"),
    ),
    (
        "On which day is {n}'s dentist appointment?",
        "{n}'s dentist appointment is on {v}.",
        "When is {n} seeing the dentist?",
        "{n} sees the dentist on {v}.",
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    ),
    (
        "Who wrote the memo that {n} received?",
        "The memo {n} received was written by {v}.",
        "And the memo to {n}, who was its author?",
        "Its author was {v}.",
        ("the finance team", "the director", "a volunteer", "the landlord", "the coach"),
    ),
)
_FILLER = (
    ("Give me a synonym for 'happy'.", "Cheerful."),
    ("How do you say 'thank you' in Spanish?", "Gracias."),
    ("Suggest a name for a goldfish.", "How about Bubbles?"),
    ("What is a haiku?", "A short poem of three lines, of five, seven and five syllables."),
    ("Recommend a hobby for rainy days.", "Jigsaw puzzles are a calm choice."),
    ("What does 'ubiquitous' mean?", "Found everywhere."),
)


@dataclass(frozen=True)
class PlantedConversation:
    """A conversation with one declared same-question pair (``pair``, reply indices) whose
    replies contradict (``contradicts``) or agree (a control); the other turns are filler."""

    id: str
    turns: tuple[tuple[str, str], ...]
    pair: tuple[int, int]
    contradicts: bool

    def as_sample(self) -> Sample:
        """The conversation as an item, its pair declared (``fields["same_question"]``)."""
        return Sample(
            id=self.id,
            input=self.turns[0][0],
            target="contradiction" if self.contradicts else "consistent",
            fields={"same_question": [list(self.pair)], "turns": [list(t) for t in self.turns]},
        )


def planted_conversations(n: int, seed: int = 0) -> list[PlantedConversation]:
    """``n`` seeded conversations, half (``n // 2``) with a contradicting pair and the rest
    clean controls, in a seeded order. A pair asks about one fact twice (the second time
    paraphrased, 1-3 filler turns apart); the contradicting reply states a different value,
    the control the same value in other words. Facts are not numbers, letters or yes/no, so
    only a judge can decide them."""
    if n < 2:
        raise ConfigError(f"Plant at least 2 conversations (one of each kind), not {n}.")
    rng = random.Random(seed)
    kinds = [True] * (n // 2) + [False] * (n - n // 2)
    rng.shuffle(kinds)
    out = []
    for k, contradicts in enumerate(kinds):
        q1, a1, q2, a2, values = _FACTS[rng.randrange(len(_FACTS))]
        name = rng.choice(_NAMES)
        v = rng.choice(values)
        w = rng.choice([x for x in values if x != v]) if contradicts else v
        gap = rng.randint(1, 3)
        lead = rng.randint(0, 1)
        fill = rng.sample(_FILLER, gap + lead)
        turns = [*fill[:lead], (q1.format(n=name), a1.format(n=name, v=v)), *fill[lead:]]
        turns.append((q2.format(n=name), a2.format(n=name, v=w)))
        out.append(
            PlantedConversation(
                id=f"planted-{seed}-{k}",
                turns=tuple(turns),
                pair=(lead, len(turns) - 1),
                contradicts=contradicts,
            )
        )
    return out


def planted_transcript(conversation: PlantedConversation) -> Transcript:
    """The conversation as the transcript of an episode (for scoring it end to end)."""
    msgs = []
    for u, a in conversation.turns:
        msgs += [ChatMessage(role="user", content=u), ChatMessage(role="assistant", content=a)]
    return Transcript(messages=tuple(msgs), replies=tuple(a for _u, a in conversation.turns))
