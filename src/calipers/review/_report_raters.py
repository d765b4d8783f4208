"""Per-rater quality control for the review report: answered and skipped counts, time,
gold accuracy, attention checks, self-consistency, left share, the rusher / random-clicker
flag and a Dawid-Skene competence, each from ``calipers.stats``.

The *primary* question (the first pass/fail, choice, Likert or preference question) is the
one a rater's answers are checked on: against the gold answer of a gold item, against the
other raters' consensus on an ordinary item, and against the rater's own first answer on a
planned repeat. Excluded raters are shown with all their figures; the report's other
statistics leave their judgments out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from calipers.review._questions import Likert, PassFail, Preference, Tags, pairwise_outcome
from calipers.review._report_model import RaterQC
from calipers.review._report_stats import Labelled, categories
from calipers.stats import (
    dawid_skene,
    gold_accuracy,
    left_share,
    rater_flag,
    self_consistency,
)
from calipers.store import JudgmentRecord, RaterRecord, ReviewCampaignRecord, ReviewItemRecord

__all__ = ["label_of", "rater_qc"]

DEFAULT_MIN_SECONDS = 5.0  # rater_flag's placeholder when the campaign sets none


def label_of(q: Labelled, answers: dict[str, Any], swapped: bool | None) -> Hashable | None:
    """A judgment's answer to ``q`` as a label: pass/fail as bool, a preference as the
    payload's ``a``/``b``/``tie``, a Likert rating as int, a choice as its text; tags as a
    sorted tuple. None when not answered or not readable."""
    v = answers.get(q.id)
    if v is None:
        return None
    if isinstance(q, PassFail):
        return {True: True, "pass": True, False: False, "fail": False}.get(v)
    if isinstance(q, Preference):
        try:
            return pairwise_outcome(str(v), swapped)
        except ValueError:
            return None
    if isinstance(q, Likert):
        return int(v) if isinstance(v, int | str) and str(v).strip().isdigit() else None
    if isinstance(q, Tags):
        return tuple(sorted(v)) if isinstance(v, list | tuple) else None
    return v if isinstance(v, str) else None


def _gold_ok(gold: Any, j: JudgmentRecord, qs: Sequence[Labelled], primary: Labelled) -> bool:
    """Did the judgment give the gold answer? ``gold`` is a mapping question id -> answer, or
    the answer to the primary question."""
    by_id = {q.id: q for q in qs}
    expected = gold if isinstance(gold, dict) else {primary.id: gold}
    for qid, want in expected.items():
        q = by_id.get(qid)
        if q is None:
            if j.answers.get(qid) != want:
                return False
            continue
        fake = {q.id: want}
        if label_of(q, j.answers, j.swapped) != label_of(q, fake, False):
            return False
    return True


def _consensus_others(
    judgments: Sequence[JudgmentRecord], primary: Labelled
) -> dict[tuple[str, str], Hashable | None]:
    """For each (item, rater): the unique most common label of the item's other raters."""
    per_item: dict[str, list[tuple[str, Hashable]]] = defaultdict(list)
    for j in judgments:
        lab = label_of(primary, j.answers, j.swapped)
        if lab is not None:
            per_item[j.item_key].append((j.rater, lab))
    out: dict[tuple[str, str], Hashable | None] = {}
    for item, rows in per_item.items():
        for rater, _lab in rows:
            top = Counter(lab for r, lab in rows if r != rater).most_common(2)
            unique = bool(top) and (len(top) == 1 or top[0][1] > top[1][1])
            out[(item, rater)] = top[0][0] if unique else None
    return out


def _competence(judgments: Sequence[JudgmentRecord], primary: Labelled) -> dict[str, float]:
    rows = [(j.item_key, j.rater, label_of(primary, j.answers, j.swapped)) for j in judgments]
    rows = [r for r in rows if r[2] is not None]
    if not rows or isinstance(primary, Tags):
        return {}
    items, raters, labels = zip(*rows, strict=True)
    try:
        fit = dawid_skene(items, raters, labels, classes=list(categories(primary)))
    except ValueError:
        return {}
    return {str(r): float(a) for r, a in zip(fit.raters, fit.accuracy, strict=True)}


def _one(
    rater: RaterRecord,
    mine: list[JudgmentRecord],
    ctx: _Context,
) -> RaterQC:
    primary, items = ctx.primary, ctx.items
    firsts = [j for j in mine if not j.is_repeat]
    seconds = [j.seconds for j in mine if j.seconds is not None]
    gold_hits: list[int] = []
    attention_hits: list[int] = []
    for j in firsts:
        item = items[j.item_key]
        if item.gold is None:
            continue
        ok = 1 if _gold_ok(item.gold, j, ctx.questions, primary) else 0
        (attention_hits if item.is_attention_check else gold_hits).append(ok)
    first_label = {j.item_key: label_of(primary, j.answers, j.swapped) for j in firsts}
    reps = [j for j in mine if j.is_repeat and j.item_key in first_label]
    consistency = self_consistency(
        [first_label[j.item_key] for j in reps],
        [label_of(primary, j.answers, j.swapped) for j in reps],
    )
    times, agrees = [], []
    for j in firsts:
        item = items[j.item_key]
        if item.gold is not None:
            ref_ok: float = 1.0 if _gold_ok(item.gold, j, ctx.questions, primary) else 0.0
        else:
            ref = ctx.consensus.get((j.item_key, j.rater))
            mine_label = label_of(primary, j.answers, j.swapped)
            ref_ok = np.nan if ref is None or mine_label is None else float(ref == mine_label)
        times.append(np.nan if j.seconds is None else j.seconds)
        agrees.append(ref_ok)
    flag = rater_flag(
        times, agrees, n_choices=max(2, len(categories(primary))), min_seconds=ctx.min_seconds
    )
    lefts = None
    if isinstance(primary, Preference):
        raw = {"left": 1.0, "right": 0.0, "tie": 0.5}
        lefts = left_share([raw.get(str(j.answers.get(primary.id)), np.nan) for j in firsts])
    return RaterQC(
        name=rater.name,
        pool=rater.pool,
        role=rater.role,
        excluded=rater.excluded,
        excluded_reason=rater.excluded_reason,
        answered=len(mine),
        skipped=None if ctx.skips is None else ctx.skips.get(rater.name, 0),
        median_seconds=float(np.median(seconds)) if seconds else None,
        too_fast=(None if ctx.set_min is None else sum(1 for s in seconds if s < ctx.set_min)),
        gold_accuracy=gold_accuracy(gold_hits, [1] * len(gold_hits)),
        attention=gold_accuracy(attention_hits, [1] * len(attention_hits)),
        self_consistency=consistency,
        left_share=lefts,
        agreement=flag.agreement,
        competence=ctx.competence.get(rater.name),
        flagged=flag.flagged,
        flag_reasons=flag.reasons,
    )


class _Context:
    def __init__(
        self,
        campaign: ReviewCampaignRecord,
        questions: Sequence[Labelled],
        primary: Labelled,
        items: dict[str, ReviewItemRecord],
        judgments: Sequence[JudgmentRecord],
        skips: dict[str, int] | None,
    ) -> None:
        self.questions, self.primary, self.items, self.skips = questions, primary, items, skips
        raw = campaign.settings.get("min_seconds")
        self.set_min = float(raw) if isinstance(raw, int | float) else None
        self.min_seconds = DEFAULT_MIN_SECONDS if self.set_min is None else self.set_min
        plain = [
            j
            for j in judgments
            if j.counted and not j.is_repeat and not items[j.item_key].is_control
        ]
        self.consensus = _consensus_others(plain, primary)
        self.competence = _competence(plain, primary)


def rater_qc(
    campaign: ReviewCampaignRecord,
    questions: Sequence[Labelled],
    items: dict[str, ReviewItemRecord],
    judgments: Sequence[JudgmentRecord],
    raters: Sequence[RaterRecord],
    skips: dict[str, int] | None,
) -> tuple[RaterQC, ...]:
    """Quality figures for every rater (adjudicators and owners left out)."""
    primary = next((q for q in questions if not isinstance(q, Tags)), None)
    if primary is None:
        return ()
    ctx = _Context(campaign, questions, primary, items, judgments, skips)
    by_rater: dict[str, list[JudgmentRecord]] = defaultdict(list)
    for j in judgments:
        by_rater[j.rater].append(j)
    return tuple(_one(r, by_rater[r.name], ctx) for r in raters if r.role == "rater")
