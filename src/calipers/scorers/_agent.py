"""``agent_outcome``: a tool-world episode graded three ways, each reported on its own and
combined (see docs/worlds.md).

Everything is read from the item's scenario (``Sample.metadata``, written by the world) and the
episode's :class:`~calipers.types.Transcript`:

- ``end_state``: the final database equals the expected one on the tables that matter
  (``metadata["compare"]``);
- ``info``: every piece of ``required_info`` is stated in the agent's replies (a money amount
  or a time by value, so "$44.49" and "44.49 dollars" alike; text case-insensitively); left
  out for items that require none;
- ``procedure``: no rule broken over the trajectory (:func:`procedure_violations`);
- ``success``: all three (``info`` counting only where it applies).

With a model-played user, ``user_error_rate`` is the share of its messages that broke the
scenario (wrong facts, leaks, wrong confirmations; the environment's ``user_check``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calipers.scorers._base import ScoreFn, scorer
from calipers.types import ChatMessage, Sample, SampleOutput, Score, Step, Transcript

__all__ = [
    "AFFIRMATIVE",
    "agent_outcome",
    "claims_in",
    "end_state_matches",
    "grade_episode",
    "missing_info",
    "procedure_violations",
]

AFFIRMATIVE = re.compile(
    r"^\W*(yes|yeah|yep|sure|ok|okay|go ahead|please do|confirm(ed)?|do it)\b", re.IGNORECASE
)
_MONEY = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?![\d:])")


def _money(text: str) -> set[float]:
    return {round(float(a.replace(",", "") + (b or "")), 2) for a, b in _MONEY.findall(text)}


def _times(text: str) -> set[tuple[int, int]]:
    return {(int(h), int(m)) for h, m in _TIME.findall(text) if int(h) < 24 and int(m) < 60}


def claims_in(text: str) -> set[tuple[str, Any]]:
    """The concrete facts a reply states: money amounts (``$12.50``), ISO dates, times."""
    out: set[tuple[str, Any]] = {("money", v) for v in _money(text)}
    out |= {("date", d) for d in _DATE.findall(text)}
    out |= {("time", t) for t in _times(text)}
    return out


def _evidence(text: str) -> set[tuple[str, Any]]:
    """What a message makes known: every number (as an amount), date and time in it."""
    out: set[tuple[str, Any]] = {("money", round(float(n), 2)) for n in _NUMBER.findall(text)}
    out |= {("date", d) for d in _DATE.findall(text)}
    out |= {("time", t) for t in _times(text)}
    return out


def end_state_matches(sample: Sample, state: Mapping[str, Any] | None) -> tuple[bool, list[str]]:
    """Whether the final database equals the expected one on the compared tables, and which
    tables differ."""
    if state is None:
        return False, ["no final state"]
    expected = sample.metadata["expected"]
    diff = [t for t in sample.metadata["compare"] if state.get(t) != expected.get(t)]
    return not diff, diff


def missing_info(required: Iterable[Mapping[str, Any]], replies: Sequence[str]) -> list[str]:
    """The required pieces of information no reply states."""
    text = "\n".join(replies)
    money, times, low = _money(text) | _evidence_numbers(text), _times(text), text.lower()
    missing = []
    for item in required:
        kind, value = item["kind"], item["value"]
        if kind == "money":
            ok = round(float(value), 2) in money
        elif kind == "time":
            ok = _times(str(value)) <= times
        else:
            ok = str(value).lower() in low
        if not ok:
            missing.append(f"{kind}:{value}")
    return missing


def _evidence_numbers(text: str) -> set[float]:
    return {round(float(n), 2) for n in _NUMBER.findall(text)}


def _result(step: Step) -> dict[str, Any]:
    try:
        out = json.loads(step.text)
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def procedure_violations(
    rules: Mapping[str, Any], transcript: Transcript, opening: Sequence[ChatMessage] = ()
) -> list[str]:
    """The procedure rules the trajectory broke, in order:

    - ``changed_before_confirmation:<tool>``: a call to a state-changing tool (even one the
      tool refused: the attempt is the violation) when the latest user turn was not a "yes"
      (the opening request does not count as one);
    - ``changed_before_verification:<tool>``: a guarded tool called before a successful
      ``verify_tool`` call (``"verified": true``) for the same ``user_id``;
    - ``claim_before_read:<kind>:<value>``: a reply states an amount, a date or a time that no
      earlier message (the policy, a user turn, a tool result) contained.
    """
    writes = set(rules.get("write_tools") or ())
    verify = rules.get("verify_tool")
    guards = set(rules.get("verify_guards") or ())
    out: list[str] = []
    confirmed = False
    verified: set[Any] = set()
    for step in transcript.steps:
        if step.kind == "user":
            confirmed = bool(AFFIRMATIVE.match(step.text))
        elif step.kind == "tool" and step.tool_call is not None:
            call = step.tool_call
            args = call.arguments or {}
            if call.name == verify and step.error is None and _result(step).get("verified") is True:
                verified.add(_result(step).get("user_id", args.get("user_id")))
            if call.name in writes and not confirmed:
                out.append(f"changed_before_confirmation:{call.name}")
            if call.name in guards and args.get("user_id") not in verified:
                out.append(f"changed_before_verification:{call.name}")
    known: set[tuple[str, Any]] = set()
    messages = transcript.messages or tuple(opening)
    for m in messages:
        if m.role == "assistant":
            for kind, value in sorted(claims_in(m.content) - known, key=str):
                shown = f"{value[0]:02d}:{value[1]:02d}" if kind == "time" else value
                out.append(f"claim_before_read:{kind}:{shown}")
        else:
            known |= _evidence(m.content)
    return out


def grade_episode(sample: Sample, transcript: Transcript) -> Score:
    """The three grades of one episode, their conjunction, and what failed."""
    meta = sample.metadata
    ok_state, diff = end_state_matches(sample, transcript.state)
    required = meta.get("required_info") or []
    missing = missing_info(required, transcript.replies)
    violations = procedure_violations(meta.get("rules") or {}, transcript)
    values = {"end_state": float(ok_state), "procedure": float(not violations)}
    if required:
        values["info"] = float(not missing)
    values["success"] = float(ok_state and not violations and not missing)
    check = (transcript.state or {}).get("user_check")
    if isinstance(check, Mapping) and check.get("messages"):
        values["user_error_rate"] = check["with_errors"] / check["messages"]
    return Score(
        values=values,
        answer=transcript.final_text,
        explanation="; ".join(
            [f"state differs: {', '.join(diff)}"] * bool(diff)
            + [f"missing: {', '.join(missing)}"] * bool(missing)
            + violations
        )
        or None,
        metadata={
            "outcome": meta.get("outcome"),
            "kind": meta.get("kind"),
            "state_diff": diff,
            "missing_info": missing,
            "violations": violations,
            "stopped": transcript.stopped,
            **({"user_check": dict(check)} if isinstance(check, Mapping) else {}),
        },
    )


@scorer("agent_outcome", metrics=("success", "end_state", "info", "procedure", "user_error_rate"))
def agent_outcome() -> ScoreFn:
    """A tool world graded three ways: end state, required info, procedure; success = all."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        if output.transcript is None:
            raise ValueError("agent_outcome scores episodes: the output has no transcript")
        return grade_episode(sample, output.transcript)

    return score
