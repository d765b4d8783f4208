"""Error types of a numeric answer (GSM8K, the dynamic word problems and arithmetic).

Decided in this order, for a failing reply:

1. ``no_answer`` (or ``truncated``) — the reply is empty;
2. ``extraction_failure`` — the reply does give the right number (as its ``#### N``, an
   "answer is N" / ``\\boxed{N}`` statement, or its last number) but the scorer read another
   or did not accept its form (``12.0`` against lm-eval's string ``12``);
3. ``truncated`` — the reply used every token allowed and stated no final answer;
4. ``no_answer`` — no number at all (the detail says if it refused);
5. ``calculation_slip`` — some ``a op b = c`` step is wrong (:func:`check_steps`);
6. ``wrong_plan`` — every step is right and the answer is still wrong;
7. ``no_working`` — a wrong number with no step to check.
"""

from __future__ import annotations

import re
from decimal import Decimal

from calipers.scorers._numeric import extract_flexible, extract_strict, format_number, parse_number
from calipers.scorers._refusal import DEFAULT_REFUSAL_PATTERNS, detect_refusal
from calipers.scorers._reply import ScoredReply
from calipers.scorers._steps import check_steps
from calipers.types import ErrorLabel

__all__ = ["numeric_label", "stated_answer"]

_NUM = r"(-?\$?\s?[0-9][0-9,]*(?:\.[0-9]+)?)"
_STATED = re.compile(
    r"(?i:(?:final\s+)?answer\s*(?:is|:|=)|\\boxed\{|total\s+(?:is|of))\s*\**\s*" + _NUM
)
_REFUSALS = tuple(re.compile(p, re.I) for p in DEFAULT_REFUSAL_PATTERNS)
_SHOWN = 3  # wrong steps quoted in a detail


def stated_answer(text: str) -> tuple[Decimal, str] | None:
    """The answer a reply states, with how: its first ``#### N``, else its last "answer is
    N" / "Answer: N" / ``\\boxed{N}`` / "total is N"; None when it states none."""
    strict = extract_strict(text)
    if strict is not None:
        return strict, f"#### {format_number(strict)}"
    found = [(parse_number(m.group(1)), m.group(0)) for m in _STATED.finditer(text)]
    found = [(d, how) for d, how in found if d is not None]
    if not found:
        return None
    d, how = found[-1]
    assert d is not None
    return d, " ".join(how.split())


def _target(r: ScoredReply) -> Decimal | None:
    text = r.target or ""
    return extract_strict(text) if "####" in text else parse_number(text)


def _read(r: ScoredReply) -> str:
    return "nothing" if r.answer is None else repr(r.answer)


def _slip(r: ScoredReply, final: str, target: Decimal | None) -> ErrorLabel:
    text = r.response or ""
    steps = check_steps(text)
    wrong = [(i, s) for i, s in enumerate(steps, start=1) if not s.ok]
    want = "?" if target is None else format_number(target)
    if wrong:
        shown = "; ".join(s.describe(i) for i, s in wrong[:_SHOWN])
        more = f" (and {len(wrong) - _SHOWN} more)" if len(wrong) > _SHOWN else ""
        return ErrorLabel(
            type="calculation_slip",
            detail=f"{shown}{more}; {len(wrong)} of {len(steps)} steps wrong; answered "
            f"{final}, target {want}",
        )
    if steps:
        return ErrorLabel(
            type="wrong_plan",
            detail=f"all {len(steps)} steps right ({'; '.join(s.text for s in steps[:_SHOWN])}"
            f"{'; ...' if len(steps) > _SHOWN else ''}); answered {final}, target {want}",
        )
    return ErrorLabel(
        type="no_working",
        detail=f"answered {final} with no a op b = c step to check; target {want}",
    )


def numeric_label(r: ScoredReply) -> ErrorLabel:
    """The error type of one failing numeric reply (module docstring)."""
    text = r.response or ""
    cut = f"cut off at the token limit ({r.max_tokens} tokens)"
    if not text.strip():
        if r.truncated:
            return ErrorLabel(type="truncated", detail=f"{cut} with an empty reply")
        return ErrorLabel(type="no_answer", detail="empty reply")
    target = _target(r)
    stated = stated_answer(text)
    last = extract_flexible(text)
    if target is not None and stated is not None and stated[0] == target:
        return ErrorLabel(
            type="extraction_failure",
            detail=f"the reply answers {format_number(target)} ({stated[1]!r}) but the scorer "
            f"read {_read(r)}",
        )
    if target is not None and last is not None and last == target:
        return ErrorLabel(
            type="extraction_failure",
            detail=f"the reply's last number is {format_number(target)}, the target, but the "
            f"scorer read {_read(r)}",
        )
    if r.truncated and stated is None:
        tail = "" if last is None else f"; its last number was {format_number(last)}"
        return ErrorLabel(type="truncated", detail=f"{cut} before a final answer{tail}")
    if last is None:
        refused = detect_refusal(text, _REFUSALS, 300)
        detail = "no number in the reply"
        if refused:
            said = re.search(refused, text, re.I)
            detail = f"refused: {said.group(0)!r}" if said else "refused"
        return ErrorLabel(type="no_answer", detail=detail)
    final = format_number(stated[0] if stated is not None else last)
    return _slip(r, final, target)
