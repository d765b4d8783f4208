"""Human labels from a review campaign, as the judge's calibration and the judge-corrected
estimates read them: a campaign's final labels (``calipers.review.final_labels``) of the items
created from a run's samples, keyed like a labels file's rows.

Pure over records: the caller computes the final labels (the review layer sits above this one)
and passes them with the campaign's items and questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from calipers.errors import ConfigError, DataError
from calipers.store import ReviewItemRecord

__all__ = ["FinalLabelLike", "campaign_labels", "campaign_question"]

Key = tuple[str, int]


class FinalLabelLike(Protocol):
    """What is read of ``calipers.review.FinalLabel``."""

    @property
    def item_key(self) -> str: ...
    @property
    def value(self) -> Any: ...


_REFUSAL = {"answered": ("answered", "refused"), "harm": ("harmful", "harmless")}
_USABLE = ("pass_fail", "likert", "choice")


def campaign_question(
    questions: Sequence[dict[str, Any]], question: str | None
) -> tuple[str, str, tuple[str, ...]]:
    """(id, type, options) of the campaign question to read: ``question``, or the campaign's
    one pass/fail, Likert or choice question (the built-in refusal pair counts as two choice
    questions, ``answered`` and ``harm``)."""
    found: list[tuple[str, str, tuple[str, ...]]] = []
    for q in questions:
        if q.get("type") == "refusal":
            found += [(qid, "choice", opts) for qid, opts in _REFUSAL.items()]
        else:
            found.append((str(q.get("id")), str(q.get("type")), tuple(q.get("options") or ())))
    if question is not None:
        for f in found:
            if f[0] == question:
                return f
        raise ConfigError(
            f"The campaign has no question {question!r}.",
            hint=f"Its questions: {', '.join(f[0] for f in found) or '(none)'}.",
        )
    usable = [f for f in found if f[1] in _USABLE]
    if len(usable) != 1:
        raise ConfigError(
            f"The campaign has {len(usable)} pass/fail, Likert or choice questions; "
            "choose the one that labels what the judge grades.",
            hint=f"--question {' | '.join(f[0] for f in usable) or 'ID'}",
        )
    return usable[0]


def _check(qtype: str, options: tuple[str, ...], positive: str | None) -> None:
    """Whether the question's answers can be read on a judge's scale (before any label)."""
    if qtype == "choice":
        if positive is None:
            raise ConfigError(
                "A choice question has no pass/fail of its own: say which answer counts as "
                "a pass (1) for the judge; every other one counts as a fail (0).",
                hint=f"--positive {' | '.join(options) or 'VALUE'}",
            )
        if positive not in options:
            raise ConfigError(
                f"--positive {positive!r} is not an option of the question.",
                hint=f"Its options: {', '.join(options)}.",
            )
    elif positive is not None:
        raise ConfigError(f"--positive applies to choice questions; this one is {qtype}.")
    elif qtype not in _USABLE:
        raise ConfigError(
            f"A {qtype} question cannot label a judge: use a pass/fail, Likert or choice one."
        )


def _value(value: Any, qtype: str, positive: str | None) -> Any:
    if qtype == "choice":
        return "pass" if value == positive else "fail"
    if qtype == "pass_fail" and isinstance(value, bool):
        return "pass" if value else "fail"
    return value  # pass/fail text or a Likert number: read on the judge's scale like a file's


def campaign_labels(
    campaign: str,
    questions: Sequence[dict[str, Any]],
    items: Sequence[ReviewItemRecord],
    finals: Sequence[FinalLabelLike],
    *,
    run_id: str,
    task: str,
    question: str | None = None,
    positive: str | None = None,
) -> tuple[dict[Key, tuple[Any, str]], int]:
    """``({(sample_id, epoch): (label, where)}, n_unresolved)`` for the items of
    ``campaign`` whose ``source`` names run ``run_id`` (and ``task``, when the source says).

    Pass/fail answers become ``pass``/``fail``; Likert ones stay numbers (a scale judge's);
    a choice question needs ``positive``, the option that counts as a pass. Unresolved final
    labels (a tie nobody adjudicated) are left out and counted."""
    qid, qtype, options = campaign_question(questions, question)
    _check(qtype, options, positive)
    by_key = {it.item_key: it for it in items}
    out: dict[Key, tuple[Any, str]] = {}
    unresolved = 0
    for fl in finals:
        src = by_key[fl.item_key].source if fl.item_key in by_key else {}
        if src.get("run_id") != run_id or src.get("task") not in (None, task):
            continue
        if "sample_id" not in src:
            continue
        if fl.value is None:
            unresolved += 1
            continue
        key = (str(src["sample_id"]), int(src.get("epoch") or 0))
        where = f"campaign {campaign}, item {fl.item_key} ({qid})"
        if key in out:
            raise DataError(f"{where}: sample {key[0]!r} is labelled by two items.")
        out[key] = (_value(fl.value, qtype, positive), where)
    if not out:
        raise DataError(
            f"Campaign {campaign!r} has no final {qid!r} labels of run {run_id}'s task {task!r}.",
            hint="Its items must come from the run (review create --from run:RUN) and "
            "have judgments.",
        )
    return out, unresolved
