"""Why a failing sample failed, by rule: each scorer that can tell names its error types.

A rule reads what the store keeps of a task's scored samples (:class:`ScoredReply`: reply,
parsed answer, target, score details) and gives every failing one an
:class:`~calipers.types.ErrorLabel` (a passing one gets None). Rules are looked up by the
name of the scorer behind a task's primary metric (:func:`error_rule`); a task whose scorers
have none is left to a judge's open coding (``docs/errors.md``).

- numeric answers (``numeric_match``, ``gsm8k_lmeval``): :mod:`._error_numeric`;
- multiple choice (``choice_letter``, ``loglikelihood_mc``, ``loglikelihood_partial``):
  ``position_bias`` (the option the model picks more often than the answers are there),
  ``distractor`` (another wrong option), ``no_choice`` (no option read);
- code (``code_tests``): ``syntax_error``, ``wrong_answer`` (an assertion failed),
  ``exception:<Type>``, ``timeout``, ``tampering``, ``no_code``, ``killed:<reason>``,
  ``nonzero_exit``;
- IFEval (``ifeval``): ``instruction:<id>``, the first instruction not followed (the detail
  lists them all).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from calipers.errors import ConfigError
from calipers.scorers._error_numeric import numeric_label
from calipers.scorers._reply import ScoredReply
from calipers.stats import wilson
from calipers.types import ErrorLabel

__all__ = ["ErrorRule", "error_rule", "error_rules", "register_error_rule"]

Classify = Callable[[Sequence[ScoredReply]], list[ErrorLabel | None]]


@dataclass(frozen=True)
class ErrorRule:
    """A rule's name, the types it can give (a type ending in ``:`` is a family:
    ``exception:`` covers ``exception:KeyError``) and the classifier itself."""

    name: str
    types: tuple[str, ...]
    classify: Classify = field(repr=False)

    def can_give(self, error_type: str) -> bool:
        return any(
            error_type == t or (t.endswith(":") and error_type.startswith(t)) for t in self.types
        )


def _each(label: Callable[[ScoredReply], ErrorLabel]) -> Classify:
    def classify(replies: Sequence[ScoredReply]) -> list[ErrorLabel | None]:
        return [None if r.passed else label(r) for r in replies]

    return classify


# -- multiple choice ----------------------------------------------------------------


def _pick(r: ScoredReply) -> int | None:
    """The option the primary metric counted: the letter read, the argmax (or, for
    ``acc_norm``, the length-normalized argmax) of the log-likelihoods."""
    if r.primary.endswith("acc_norm"):
        for d in r.details.values():
            meta = d.get("metadata") if isinstance(d, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("pred_norm"), int):
                return int(meta["pred_norm"])
    a = (r.answer or "").strip()
    if a.isdigit():
        return int(a)
    if len(a) == 1 and a.isalpha():
        return ord(a.upper()) - 65
    return None


def _letter(i: int) -> str:
    return chr(65 + i) if 0 <= i < 26 else str(i)


def _choice(replies: Sequence[ScoredReply]) -> list[ErrorLabel | None]:
    picks = [_pick(r) for r in replies]
    targets = [(r.details.get("choice") or {}).get("target_index") for r in replies]
    counts = Counter(p for p in picks if p is not None)
    favourite, why = None, ""
    if counts:
        fav, k = counts.most_common(1)[0]
        n = len(replies)
        share = wilson(k, n)
        there = sum(t == fav for t in targets) / n
        if share.low > there:  # picked more often than the answers are there
            favourite = fav
            why = (
                f"the model picks {_letter(fav)} on {k}/{n} = {share.value:.0%} "
                f"[{share.low:.0%}, {share.high:.0%}] of items; {there:.0%} of answers are "
                f"{_letter(fav)}"
            )
    out: list[ErrorLabel | None] = []
    for r, pick, target in zip(replies, picks, targets, strict=True):
        if r.passed:
            out.append(None)
            continue
        right = f"the answer is {_letter(target)}" if isinstance(target, int) else "wrong"
        if pick is None:
            reply = " ".join((r.response or "").split())[:80]
            out.append(ErrorLabel(type="no_choice", detail=f"no option read in {reply!r}"))
        elif pick == favourite:
            out.append(
                ErrorLabel(
                    type="position_bias",
                    detail=f"picked {_letter(pick)}, its favourite ({why}); {right}",
                )
            )
        else:
            out.append(ErrorLabel(type="distractor", detail=f"picked {_letter(pick)}; {right}"))
    return out


# -- code ----------------------------------------------------------------

_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))\b")
_SYNTAX = {"SyntaxError", "IndentationError", "TabError"}


def exception_name(stderr: str) -> str | None:
    """The exception a traceback ended on (its last line: ``KeyError: 'a'`` -> ``KeyError``)."""
    for line in reversed(stderr.strip().splitlines()):
        if m := _EXC.match(line.strip()):
            return m.group(1).rsplit(".", 1)[-1]
    return None


def _assertion(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("assert")]
    return f": {lines[-1][:160]}" if lines else ""


def _code(r: ScoredReply) -> ErrorLabel:
    d = r.details.get("code_tests") or {}
    meta = d.get("metadata") or {}
    stderr = str(meta.get("stderr_tail") or "")
    if d.get("tampering"):
        return ErrorLabel(type="tampering", detail=str(d.get("explanation") or d["tampering"]))
    if meta.get("timed_out") or meta.get("killed_reason") in ("timeout", "cpu"):
        return ErrorLabel(type="timeout", detail=str(d.get("explanation") or "timed out"))
    if not (r.answer or "").strip():
        return ErrorLabel(type="no_code", detail="the reply holds no code")
    if meta.get("killed_reason") == "memory":
        return ErrorLabel(type="exception:MemoryError", detail="killed at the memory limit")
    if meta.get("killed_reason"):
        return ErrorLabel(type=f"killed:{meta['killed_reason']}", detail=str(d.get("explanation")))
    exc = meta.get("exception") or exception_name(stderr)
    last = str(d.get("explanation") or "")
    if exc in _SYNTAX:
        return ErrorLabel(type="syntax_error", detail=last)
    if exc == "AssertionError":
        return ErrorLabel(type="wrong_answer", detail=f"a test failed{_assertion(stderr)}")
    if exc:
        return ErrorLabel(type=f"exception:{exc}", detail=last)
    return ErrorLabel(type="nonzero_exit", detail=last or f"exit status {meta.get('returncode')}")


# -- IFEval ----------------------------------------------------------------


def _ifeval(r: ScoredReply) -> ErrorLabel:
    meta = (r.details.get("ifeval") or {}).get("metadata") or {}
    ids = list(meta.get("instructions") or [])
    followed = list(meta.get("loose" if "loose" in r.primary else "strict") or [])
    failed = [i for i, ok in zip(ids, followed, strict=False) if not ok]
    if not failed:
        return ErrorLabel(type="unclassified", detail="no failed instruction recorded")
    return ErrorLabel(
        type=f"instruction:{failed[0]}",
        detail=f"not followed: {', '.join(failed)} ({len(failed)} of {len(ids)} instructions)",
    )


# -- the registry ----------------------------------------------------------------

_NUMERIC = ErrorRule(
    "numeric",
    (
        "calculation_slip",
        "wrong_plan",
        "no_working",
        "extraction_failure",
        "no_answer",
        "truncated",
    ),
    _each(numeric_label),
)
_CHOICE = ErrorRule("choice", ("position_bias", "distractor", "no_choice"), _choice)
_CODE = ErrorRule(
    "code",
    (
        "syntax_error",
        "wrong_answer",
        "exception:",
        "timeout",
        "tampering",
        "no_code",
        "killed:",
        "nonzero_exit",
    ),
    _each(_code),
)
_IFEVAL = ErrorRule("ifeval", ("instruction:", "unclassified"), _each(_ifeval))

_RULES: dict[str, ErrorRule] = {
    "numeric_match": _NUMERIC,
    "gsm8k_lmeval": _NUMERIC,
    "choice_letter": _CHOICE,
    "loglikelihood_mc": _CHOICE,
    "loglikelihood_partial": _CHOICE,
    "code_tests": _CODE,
    "ifeval": _IFEVAL,
}


def error_rule(scorer_names: Sequence[str] | str) -> ErrorRule | None:
    """The rule of the first of ``scorer_names`` (a task's scorers, in order) that has one."""
    names = [scorer_names] if isinstance(scorer_names, str) else scorer_names
    return next((_RULES[n] for n in names if n in _RULES), None)


def error_rules() -> Mapping[str, ErrorRule]:
    """Scorer name -> its rule (a copy)."""
    return dict(_RULES)


def register_error_rule(scorer_name: str, rule: ErrorRule, *, replace: bool = False) -> None:
    """Give a (plugin) scorer its error rule."""
    if scorer_name in _RULES and not replace:
        raise ConfigError(f"Scorer {scorer_name!r} already has an error rule.")
    _RULES[scorer_name] = rule
