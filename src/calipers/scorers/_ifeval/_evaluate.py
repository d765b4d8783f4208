"""Strict and loose evaluation of one response against its instructions.

Strict: each checker is applied to the response as it is. Loose (the IFEval paper's
"loose accuracy"): an instruction counts as followed when the checker accepts *any* of eight
variants of the response -- the response, without its first line, without its last line,
without both, and each of those four with every markdown asterisk ``*`` removed. This
forgives a leading "Sure, here is..." line, a trailing "I hope this helps" and bold/italic
markup around a keyword or an ending phrase. An empty (or blank) response or variant follows
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calipers.errors import DataError
from calipers.scorers._ifeval import _case, _format, _keywords, _language, _length  # noqa: F401
from calipers.scorers._ifeval._base import CHECKERS, Args, Detector

__all__ = ["InstructionResult", "evaluate", "follows", "loose_variants"]


@dataclass(frozen=True)
class InstructionResult:
    instruction_id: str
    strict: bool
    loose: bool


def loose_variants(response: str) -> list[str]:
    """The eight loose variants of a response (module docstring), duplicates removed, in a
    fixed order (the response itself first)."""
    lines = response.split("\n")
    cut = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    out: list[str] = []
    for v in [*cut, *(c.replace("*", "") for c in cut)]:
        if v not in out:
            out.append(v)
    return out


def follows(instruction_id: str, response: str, args: Args) -> bool:
    """Strict check of one instruction; a blank response follows nothing."""
    if instruction_id not in CHECKERS:
        raise DataError(
            f"No IFEval checker for instruction {instruction_id!r}.",
            hint=f"Known instructions: {', '.join(sorted(CHECKERS))}.",
        )
    return bool(response.strip()) and CHECKERS[instruction_id](response, args)


def evaluate(
    response: str,
    instruction_ids: Sequence[str],
    kwargs: Sequence[Mapping[str, Any]],
    detect_language: Detector,
) -> list[InstructionResult]:
    """Strict and loose results for each instruction, in the given order."""
    if len(instruction_ids) != len(kwargs):
        raise DataError(f"{len(instruction_ids)} instructions but {len(kwargs)} argument sets.")
    variants = loose_variants(response)
    results = []
    for iid, kw in zip(instruction_ids, kwargs, strict=True):
        args = Args(iid, kw, detect_language)
        strict = follows(iid, response, args)
        loose = strict or any(follows(iid, v, args) for v in variants[1:])
        results.append(InstructionResult(iid, strict, loose))
    return results
