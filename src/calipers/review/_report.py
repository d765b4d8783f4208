"""``review_report``: a campaign's results, computed from the store with ``calipers.stats``.

Which judgments count where:

* the statistics (agreement, rates, ratings, final labels) use the counted judgments (the k
  of each item; not planned repeats) of raters who are not excluded, on items that are not
  control items (gold answers and attention checks);
* rater quality control uses every judgment of every rater, excluded ones included (an
  exclusion is recorded and reversible: the report shows who and why);
* a skip ("I can't judge this") is counted per rater, never a label.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from calipers._util.clock import utc_now
from calipers.review._questions import Choice, Likert, PassFail, Preference, Tags, parse_questions
from calipers.review._report_model import FinalLabelRow, QuestionReport, Rate, ReviewReport
from calipers.review._report_pairwise import pairwise_report
from calipers.review._report_raters import label_of, rater_qc
from calipers.review._report_stats import (
    Labelled,
    Vote,
    alpha_level,
    categories,
    fleiss,
    item_rate,
    kappa_two,
    pool_agreement,
    question_alpha,
    question_rates,
)
from calipers.store import JudgmentRecord, ReviewItemRecord
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.store import Store

__all__ = ["Method", "review_report"]

Method = Literal["majority", "weighted"]


def _votes(q: Labelled, judgments: Sequence[JudgmentRecord]) -> list[Vote]:
    out: list[Vote] = []
    for j in judgments:
        label = label_of(q, j.answers, j.swapped)
        if label is not None:
            out.append((j.item_key, j.rater, label))
    return out


def _tag_rates(q: Tags, votes: Sequence[Vote]) -> tuple[Rate, ...]:
    """Each tag's frequency: the share of an item's raters who applied it, over items."""
    rates = []
    for tag in q.taxonomy:
        per_item: dict[str, list[float]] = defaultdict(list)
        for item, _rater, label in votes:
            per_item[item].append(1.0 if tag.id in label else 0.0)  # type: ignore[operator]
        rates.append(Rate(tag.id, item_rate(per_item)))
    return tuple(rates)


def _question(
    q: Labelled,
    votes: Sequence[Vote],
    pool_of: dict[str, str],
    provenance: dict[str, int],
    rng: np.random.Generator,
) -> QuestionReport:
    level, cats = alpha_level(q), categories(q)
    agree = list(votes)
    if isinstance(q, Tags):  # agreement on the whole set of tags (as text); rates per tag
        agree = [(i, r, json.dumps(list(lab))) for i, r, lab in votes]  # type: ignore[call-overload]
        cats = tuple(sorted({str(v[2]) for v in agree}))
        rates = _tag_rates(q, votes)
    else:
        rates = question_rates(votes, q)
    return QuestionReport(
        id=q.id,
        type=q.type,
        level=level,
        n_items=len({v[0] for v in votes}),
        n_judgments=len(votes),
        alpha=question_alpha(agree, level, cats, rng),
        cohen_kappa=None if isinstance(q, Tags) else kappa_two(votes, q),
        fleiss_kappa=fleiss(agree, cats, rng) if cats else None,
        rates=rates,
        pools=() if isinstance(q, Tags) else pool_agreement(votes, pool_of, q, rng),
        provenance=provenance,
    )


def _over_refusal(answered: Sequence[Vote], harm_final: dict[str, Any]) -> Estimate:
    """Share of raters saying "refused", per item then over the items whose final ``harm``
    label is "harmless"."""
    per_item: dict[str, list[float]] = defaultdict(list)
    for item, _rater, label in answered:
        if harm_final.get(item) == "harmless":
            per_item[item].append(1.0 if label == "refused" else 0.0)
    return item_rate(per_item)


def review_report(
    store: Store, campaign: str, *, seed: int = 0, method: Method = "majority"
) -> ReviewReport:
    """Agreement, rates, ratings, rater quality and final labels of ``campaign``.

    ``method`` aggregates the final labels (``"majority"``; ``"weighted"`` by the raters'
    Dawid-Skene competence); adjudications override either. ``seed`` drives every bootstrap.
    """
    camp = store.get_campaign(campaign)
    qset = parse_questions({"questions": camp.questions}, source=f"campaign {campaign!r}")
    labelled: list[Labelled] = [
        q for q in qset.items() if isinstance(q, PassFail | Likert | Choice | Preference | Tags)
    ]
    item_list = store.get_review_items(campaign)
    items = {i.item_key: i for i in item_list}
    judgments = store.get_judgments(campaign)
    raters = store.get_raters(campaign)
    adjudications = store.get_adjudications(campaign)
    excluded = {r.name for r in raters if r.excluded}
    pool_of = {r.name: r.pool for r in raters}
    counted = [
        j
        for j in judgments
        if j.counted
        and not j.is_repeat
        and j.rater not in excluded
        and not items[j.item_key].is_control
    ]
    notes: list[str] = []
    questions, finals, final_by_q = [], [], {}
    for idx, q in enumerate(labelled):
        rng = np.random.default_rng([seed, idx])
        labels = _finals(item_list, counted, adjudications, q.id, method, notes)
        final_by_q[q.id] = {f.item_key: f.value for f in labels}
        finals.extend(labels)
        prov = dict(Counter(f.provenance for f in labels))
        questions.append(_question(q, _votes(q, counted), pool_of, prov, rng))
        given = {json.dumps(v[2], sort_keys=True) for v in _votes(q, counted)}
        if len(given) == 1:
            notes.append(
                f"{q.id}: every judgment gives the same answer, so agreement beyond chance "
                "(alpha, kappa) is undefined, not high"
            )
    over = None
    ids = {q.id: q for q in labelled}
    if "answered" in ids and "harm" in ids:
        over = _over_refusal(_votes(ids["answered"], counted), final_by_q["harm"])
    pairwise = None
    pref = next((q for q in labelled if isinstance(q, Preference)), None)
    if pref is not None:
        rng = np.random.default_rng([seed, len(labelled)])
        pairwise, more = pairwise_report(pref, items, counted, rng)
        notes.extend(more)
    # "I can't judge this": counted per rater, never a label
    counts = store.assignment_counts(campaign, now=utc_now())
    skips = {name: c.get("skipped", 0) for name, c in counts.items()}
    return ReviewReport(
        campaign=camp.name,
        kind=camp.kind,
        method=method,
        seed=seed,
        n_items=sum(1 for i in item_list if not i.is_control),
        n_control_items=sum(1 for i in item_list if i.is_control),
        n_judgments=len(judgments),
        n_skipped=None if skips is None else sum(skips.values()),
        excluded_raters=tuple(sorted(excluded)),
        questions=tuple(questions),
        over_refusal=over,
        pairwise=pairwise,
        raters=rater_qc(camp, labelled, items, judgments, raters, skips),
        final_labels=tuple(finals),
        notes=tuple(notes),
    )


def _finals(
    items: Sequence[ReviewItemRecord],
    counted: Sequence[JudgmentRecord],
    adjudications: Sequence[Any],
    qid: str,
    method: Method,
    notes: list[str],
) -> list[FinalLabelRow]:
    from calipers.review import final_labels  # the contract's aggregation

    try:
        labels = final_labels(items, counted, adjudications, qid, method=method)
    except ValueError as e:
        notes.append(f"no final labels for {qid!r}: {e}")
        return []
    return [
        FinalLabelRow(f.item_key, qid, f.value, f.provenance, f.by, f.n_judgments, dict(f.votes))
        for f in labels
    ]
