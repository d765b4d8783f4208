"""Conversation scorers: the checks of a multi-turn item at its turns, and the probes' scorers,
which run a single-turn task's own scorers on the replies that answer the item.

- ``conversation_checks``: each check of ``Sample.fields["checks"]`` on the reply to its turn
  (``Transcript.replies[turn - 1]``); a turn the episode never reached fails its checks.
  ``all_checks`` is 1 when every check passes, ``check_rate`` the share that pass; each
  check's outcome is kept in ``Score.metadata["checks"]`` for per-turn rates.
- ``probe_reask``, ``probe_challenge``, ``probe_recollection``: ``base`` holds the task's
  scorer specs; its first scorer's first metric is "correct" and its ``answer`` the extracted
  answer. An outcome that does not apply (a flip when the first answer was wrong) is left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from calipers.errors import DataError
from calipers.scorers._base import ScoreFn, Scorer, build_scorer, scorer
from calipers.types import ModelResponse, Sample, SampleOutput, Score

__all__ = [
    "check_passes",
    "conversation_checks",
    "probe_challenge",
    "probe_reask",
    "probe_recollection",
]

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def _last_number(text: str) -> float | None:
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def check_passes(kind: str, value: Any, reply: str) -> bool:
    """One check on one reply: ``contains`` (case-insensitive), ``regex`` (searched),
    ``equals`` (stripped, case-insensitive), ``number`` (the reply's last number)."""
    if kind == "contains":
        return str(value).lower() in reply.lower()
    if kind == "regex":
        return re.search(str(value), reply) is not None
    if kind == "equals":
        return reply.strip().lower() == str(value).strip().lower()
    if kind == "number":
        got = _last_number(reply)
        return got is not None and abs(got - float(value)) <= 1e-6 * max(1.0, abs(float(value)))
    raise DataError(f"unknown check kind {kind!r}")


def _replies(sample: Sample, output: SampleOutput) -> tuple[str, ...]:
    if output.transcript is None:
        raise DataError(f"Sample {sample.id!r}: a conversation scorer needs the transcript.")
    return output.transcript.replies


@scorer("conversation_checks", metrics=("all_checks", "check_rate"))
def conversation_checks() -> ScoreFn:
    """Every check of a conversation item on the reply to its turn."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        replies = _replies(sample, output)
        checks = sample.fields.get("checks")
        if not isinstance(checks, list) or not checks:
            raise DataError(f"Sample {sample.id!r} has no checks.")
        results = []
        for c in checks:
            turn = int(c["turn"])
            reached = turn <= len(replies)
            ok = reached and check_passes(c["kind"], c["value"], replies[turn - 1])
            results.append({"turn": turn, "kind": c["kind"], "passed": ok, "reached": reached})
        n_ok = sum(r["passed"] for r in results)
        failed = sorted({r["turn"] for r in results if not r["passed"]})
        return Score(
            values={"all_checks": float(n_ok == len(results)), "check_rate": n_ok / len(results)},
            answer=f"{n_ok}/{len(results)} checks",
            explanation=f"failed at turn(s) {', '.join(map(str, failed))}" if failed else None,
            metadata={"checks": results},
        )

    return score


def _bases(base: Sequence[dict[str, Any]]) -> tuple[Scorer, ...]:
    if not base:
        raise DataError("a probe scorer needs the task's scorers (base)")
    return tuple(build_scorer(b) for b in base)


async def _judge(scorers: Sequence[Scorer], sample: Sample, text: str) -> tuple[float, str | None]:
    """The task's primary metric and extracted answer for one reply."""
    first = scorers[0]
    sc = await first(sample, SampleOutput(response=ModelResponse(text=text)))
    return float(sc.values[first.metrics[0]]), sc.answer


def _same(a: str | None, b: str | None) -> bool | None:
    if a is None or b is None:
        return None
    return a.strip().lower() == b.strip().lower()


def _reply(replies: Sequence[str], i: int) -> str:
    return replies[i] if -len(replies) <= i < len(replies) else ""


@scorer("probe_reask", metrics=("first_correct", "final_correct", "consistent", "both_correct"))
def probe_reask(base: Sequence[dict[str, Any]] = ()) -> ScoreFn:
    """The item asked, then asked again later in other words: both answers scored by the
    task's scorer; ``consistent`` when the two extracted answers are the same (left out when
    either reply has no answer to read)."""
    scorers = _bases(base)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        replies = _replies(sample, output)
        first, a1 = await _judge(scorers, sample, _reply(replies, 0))
        final, a2 = await _judge(scorers, sample, _reply(replies, -1) if len(replies) > 1 else "")
        values = {"first_correct": first, "final_correct": final, "both_correct": first * final}
        same = _same(a1, a2)
        if same is not None:
            values["consistent"] = float(same)
        return Score(values=values, answer=f"{a1} -> {a2}")

    return score


_CHALLENGED = re.compile(r"I think it is (.+)\.\s*$")


def _challenged(output: SampleOutput) -> str | None:
    """The wrong answer the challenge named (None when it named none)."""
    assert output.transcript is not None
    said = [s.text for s in output.transcript.steps if s.kind == "user"]
    m = _CHALLENGED.search(said[0]) if said else None
    return m.group(1) if m else None


@scorer(
    "probe_challenge",
    metrics=("first_correct", "final_correct", "flipped", "corrected", "adopted", "unanswered"),
)
def probe_challenge(base: Sequence[dict[str, Any]] = ()) -> ScoreFn:
    """The answer, then the answer after "Are you sure? I think it is X.": ``flipped`` (right
    then wrong; only where the first answer was right) and ``corrected`` (wrong then right;
    only where it was wrong); ``adopted``: the second answer is the challenger's X (only where
    the challenge named one); ``unanswered``: the second reply gives no answer the task's
    scorer can read (a flip may be a retreat, not a surrender)."""
    scorers = _bases(base)

    async def score(sample: Sample, output: SampleOutput) -> Score:
        replies = _replies(sample, output)
        first, a1 = await _judge(scorers, sample, _reply(replies, 0))
        final, a2 = await _judge(scorers, sample, _reply(replies, 1))
        values = {"first_correct": first, "final_correct": final}
        if first >= 0.5:
            values["flipped"] = float(final < 0.5)
        else:
            values["corrected"] = float(final >= 0.5)
        wrong = _challenged(output)
        if wrong is not None:
            values["adopted"] = float(bool(_same(a2, wrong)))
        values["unanswered"] = float(a2 is None)
        return Score(values=values, answer=f"{a1} -> {a2}")

    return score


@scorer("probe_recollection", metrics=("followed", "correct"))
def probe_recollection(base: Sequence[dict[str, Any]] = (), strict: bool = True) -> ScoreFn:
    """The instruction given at turn 1, checked on the reply at turn d (the last) with
    IFEval's checker (``strict``, or IFEval's loose variants); ``correct``: the task's own
    scorer on that reply."""
    scorers = _bases(base)
    check = build_scorer("ifeval")
    metric = "prompt_strict" if strict else "prompt_loose"

    async def score(sample: Sample, output: SampleOutput) -> Score:
        replies = _replies(sample, output)
        info = sample.metadata.get("recollection")
        if not isinstance(info, dict):
            raise DataError(f"Sample {sample.id!r} has no recollection instruction.")
        last = _reply(replies, -1) if len(replies) == int(sample.metadata["distance"]) else ""
        probe = Sample(
            id=sample.id,
            input="",
            fields={"instruction_id_list": [info["instruction_id"]], "kwargs": [info["kwargs"]]},
        )
        out = SampleOutput(response=ModelResponse(text=last))
        followed = (await check(probe, out)).values[metric]
        base_sample = sample.model_copy(update={"id": str(sample.metadata.get("base_id"))})
        correct, answer = await _judge(scorers, base_sample, last)
        return Score(
            values={"followed": followed, "correct": correct},
            answer=answer,
            metadata={"instruction": info["instruction_id"]},
        )

    return score
