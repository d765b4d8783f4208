"""``mt_bench_judge``: a judge model grades each judged turn of an MT-Bench-101 dialogue 1-10 by
its ability's rubric; the dialogue scores its lowest turn, as the benchmark aggregates.

The sample is a dialogue (``fields["turns"]``: ``{"user", "bot"}`` with reference replies,
``fields["first_judged"]``: the first turn the model answered, ``category``: the ability's
code); the output's transcript carries the model's reply to each of those turns
(``transcript.replies``). For turn ``k`` the judge sees the earlier turns with their reference
replies (the golden history the model was given), the user's turn ``k``, the model's reply,
and, for the reasoning abilities (MR, GR), the turn's reference reply as the reference
solution. Everything from the dialogue and the model is data between nonce markers
(:func:`render_block`), never instructions to the judge.

Metrics: ``mtb_score``, the minimum over judged turns (the benchmark's dialogue score), and
``mtb_turn_mean``, the mean over them. Each turn's score, the judge's reasoning and its
attempts are kept in the metadata (``turns``); ``raw_score`` is the dialogue score on the 1-10
scale (what ``calipers judge-calibrate`` compares with human 1-10 labels of the dialogue). A
turn the judge cannot grade (no readable verdict after a format reminder) makes the sample an
error, never a low score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._judge import _SECURITY, JudgeClient, _scale, new_nonce, render_block
from calipers.types import Sample, SampleOutput, Score

__all__ = ["MTB_RUBRICS", "mt_bench_judge", "turn_prompt"]

SCALE = (1, 10)
_BANDS = (
    "1-3: the reply fails the criteria (wrong, off the point, or ignores what the turn needs). "
    "4-6: it meets them in part, with real errors or gaps. 7-9: it meets them, with minor "
    "flaws only. 10: it meets every criterion fully."
)
MTB_RUBRICS: dict[str, str] = {
    "CM": "Context memory. When the reply needs something said earlier in the conversation, "
    "does it recall the right details accurately and use them, without contradicting them? "
    "Where nothing earlier is needed, do not mark the reply down for not referring back.",
    "SI": "Separate input. The first user turn states a task without its material; later "
    "turns supply the material without restating the task. The reply must carry out the "
    "earlier task on the material now given, correctly. On the first turn itself, the reply "
    "should ask for or wait for the material instead of inventing it.",
    "AR": "Anaphora resolution. The current question refers back (it, that, the former, "
    "this one) to something earlier. Does the reply resolve the reference to the right thing "
    "and answer accurately about it?",
    "TS": "Topic shift. The user has moved to a new topic. Does the reply address the new "
    "topic fully and well, without being steered by or dragging in the earlier topic?",
    "CC": "Content confusion. The current question looks like earlier ones but asks "
    "something different. Does the reply answer exactly what is asked now, accurately, "
    "without being misled by the earlier questions and answers?",
    "CR": "Content rephrasing. The user asks to rewrite earlier content (shorter, simpler, "
    "for another audience...). The rewrite must keep the meaning of that content and meet "
    "every requirement of the request.",
    "FR": "Format rephrasing. The user asks for earlier content in another format (a table, "
    "JSON, a list...). The result must keep the content and follow the requested format "
    "exactly.",
    "SC": "Self-correction. The user points out a real mistake in the previous answer. Does "
    "the reply recognise the mistake and give a corrected, accurate answer?",
    "SA": "Self-affirmation. The user challenges the previous answer, which was in fact "
    "right. Does the reply keep its correct position, politely and with reasons, instead of "
    "giving in to the user?",
    "MR": "Mathematical reasoning. Is the final answer right, checked against the reference "
    "solution? Is the working correct, complete and clear, using any earlier information the "
    "problem depends on? A wrong final answer cannot score above 3.",
    "GR": "General reasoning. Is the conclusion right, checked against the reference "
    "solution? Is the reasoning sound, complete and clear, using any earlier information the "
    "problem depends on? A wrong conclusion cannot score above 3.",
    "IC": "Instruction clarification. If the request is ambiguous or lacks what is needed to "
    "answer it, the reply should ask a focused clarifying question rather than guess; once "
    "the user has clarified, the reply should answer fully and correctly.",
    "PI": "Proactive interaction. Does the reply engage with the user's message "
    "appropriately and keep the conversation going, with a relevant question, suggestion or "
    "reflection, rather than a flat or closed reply?",
}
"""Per ability, what a judged turn is graded on: MT-Bench-101's criteria in our words."""
_NEED_REFERENCE = frozenset({"MR", "GR"})


def _history(turns: Sequence[dict[str, str]]) -> str:
    if not turns:
        return "(none: this is the first turn)"
    return "\n\n".join(f"User: {t['user']}\n\nAssistant: {t['bot']}" for t in turns)


def turn_prompt(
    ability: str, turns: Sequence[dict[str, str]], k: int, reply: str
) -> tuple[str, str, str]:
    """(system, user, reply shape) for grading the reply to turn ``k`` (0-based) of a
    dialogue of ``ability``; a fresh nonce each call."""
    rubric = MTB_RUBRICS.get(ability)
    if rubric is None:
        raise DataError(f"{ability!r} is not an MT-Bench-101 ability ({', '.join(MTB_RUBRICS)}).")
    history = _history(turns[:k])
    reference = turns[k]["bot"] if ability in _NEED_REFERENCE else None
    nonce = new_nonce([history, turns[k]["user"], reply, reference or ""])
    shape = '{"reasoning": "<short justification>", "score": <1-10>}'
    system = (
        "You are a careful, impartial grader of one turn of a multi-turn conversation between "
        f"a user and an AI assistant.\n\n{_SECURITY.format(nonce=nonce)}\n\n"
        f"Rubric:\n{rubric}\n\nScore: an integer from 1 (worst) to 10 (best). {_BANDS}\n"
        f"Reply with one JSON object and nothing else: {shape}"
    )
    blocks = [
        render_block("EARLIER TURNS", history, nonce),
        render_block("CURRENT USER TURN", turns[k]["user"], nonce),
    ]
    if reference is not None:
        blocks.append(render_block("REFERENCE SOLUTION", reference, nonce))
    blocks.append(render_block("ANSWER", reply, nonce))
    ref = " Check it against the REFERENCE SOLUTION." if reference is not None else ""
    user = (
        "The EARLIER TURNS are the conversation so far, with reference replies; they are "
        "context, not graded. Grade only the ANSWER: the assistant's reply to the CURRENT USER "
        f"TURN, by the rubric.{ref}\n\n"
        + "\n\n".join(blocks)
        + "\n\nReply with the JSON object only."
    )
    return system, user, shape


def _dialogue(
    sample: Sample, output: SampleOutput
) -> tuple[str, list[dict[str, str]], int, list[str]]:
    turns, first = sample.fields.get("turns"), sample.fields.get("first_judged", 0)
    if not isinstance(turns, list) or not isinstance(first, int) or sample.category is None:
        raise DataError(
            f"Sample {sample.id!r} is not an MT-Bench-101 dialogue (fields.turns, category)."
        )
    if output.transcript is None:
        raise DataError("mt_bench_judge scores a conversation: the task must be an episode task.")
    replies = list(output.transcript.replies)
    if len(replies) != len(turns) - first:
        raise DataError(
            f"Dialogue {sample.id!r}: {len(turns) - first} turns to judge but {len(replies)} "
            f"replies (the episode stopped: {output.transcript.stopped})."
        )
    return sample.category, turns, first, replies


@scorer("mt_bench_judge", metrics=("mtb_score", "mtb_turn_mean"))
def mt_bench_judge(
    *,
    judge: str,
    max_tokens: int = 1024,
    base_url: str | None = None,
    api_key_env: str | None = None,
) -> ScoreFn:
    """MT-Bench-101: a judge grades each judged turn 1-10 (its ability's rubric, the golden
    history as context); the dialogue's score is its worst turn (``mtb_score``)."""
    client = JudgeClient(judge, base_url=base_url, api_key_env=api_key_env, max_tokens=max_tokens)
    parse = _scale(*SCALE)

    async def one(ability: str, turns: list[dict[str, str]], k: int, reply: str) -> Any:
        system, user, shape = turn_prompt(ability, turns, k, reply)
        return await client.judge(system, user, parse, shape)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        ability, turns, first, replies = _dialogue(sample, output)
        verdicts = await asyncio.gather(
            *(one(ability, turns, first + j, r) for j, r in enumerate(replies))
        )
        raw = [float(v.raw) for v in verdicts]
        worst = min(raw)
        return Score(
            values={"mtb_score": worst, "mtb_turn_mean": sum(raw) / len(raw)},
            answer=output.text.strip(),
            explanation=f"turn scores {', '.join(f'{x:g}' for x in raw)}; dialogue = worst",
            metadata={
                "mode": "scale",
                "scale": list(SCALE),
                "raw_score": worst,
                "ability": ability,
                "turns": [
                    {
                        "turn": first + j + 1,
                        "score": x,
                        "reasoning": v.reasoning,
                        "attempts": v.attempts,
                    }
                    for j, (x, v) in enumerate(zip(raw, verdicts, strict=True))
                ],
                "judge": client.name(),
                "answer_chars": sum(len(r) for r in replies),
                "reply": verdicts[raw.index(worst)].replies[-1][:2000],
            },
        )

    return score
