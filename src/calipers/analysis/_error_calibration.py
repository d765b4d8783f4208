"""Do people put failures in the judge's categories? Calibration of a judge error taxonomy
against human labels from a review campaign.

Protocol. The taxonomy's coded samples go to a review campaign (:func:`error_review_rows` writes
them as a file source, prompt, response and reference only: never the judge's note or
category) with one ``choice`` question whose options are the category names and ``other``
(:func:`error_review_questions`). Raters pick the category of each failure; the campaign's final
labels (``calipers.review.final_labels``) are read by :func:`error_campaign_labels` and
compared with the judge's categories by :func:`calibrate_error_taxonomy`. Labels given elsewhere
as free text can be mapped onto the categories (``mapping``).

Agreement: Cohen's kappa (asymptotic Fleiss–Cohen–Everitt interval) over the categories, the
exact agreement (Wilson), and per category the precision (of the samples the judge put there,
the share people put there too) and the recall (of the samples people put there, the share
the judge did), Wilson intervals. The taxonomy is **calibrated** only when at least
:data:`MIN_CALIBRATION_ITEMS` labelled samples were coded and the *lower* end of kappa's 95%
interval is at least :data:`MIN_KAPPA` ("substantial" agreement in Landis & Koch's terms,
with 95% confidence); otherwise every output says "uncalibrated".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from calipers.analysis._campaign_labels import FinalLabelLike, campaign_question
from calipers.analysis._error_clusters import OTHER
from calipers.analysis._error_coding import sample_prompt_text
from calipers.analysis._error_taxonomy import (
    MIN_CALIBRATION_ITEMS,
    MIN_KAPPA,
    CategoryAgreement,
    CategoryCalibration,
    ErrorTaxonomy,
)
from calipers.errors import ConfigError, DataError
from calipers.stats import cohens_kappa, wilson
from calipers.store import ReviewItemRecord, SampleRecord
from calipers.types import Estimate

__all__ = [
    "MIN_CALIBRATION_ITEMS",
    "MIN_KAPPA",
    "CategoryAgreement",
    "CategoryCalibration",
    "calibrate_error_taxonomy",
    "error_campaign_labels",
    "error_review_questions",
    "error_review_rows",
]

QUESTION_ID = "error_category"
SampleKey = tuple[str, str, int]
Labels = Mapping[SampleKey, tuple[Any, str]] | Mapping[SampleKey, Any]


def error_review_questions(
    taxonomy: ErrorTaxonomy, question_id: str = QUESTION_ID
) -> dict[str, Any]:
    """A review question file (as data: dump it as YAML or JSON) with one ``choice``
    question: the taxonomy's categories and ``other``, each described by its words."""
    names = [c.name for c in taxonomy.categories if c.name != OTHER]
    lines = [
        f"- {c.name}: {c.description or ', '.join(c.terms)}"
        for c in taxonomy.categories
        if c.name != OTHER
    ]
    prompt = (
        "The response failed. Which kind of failure is it? Pick the closest category, or "
        "other if none fits.\n" + "\n".join(lines)
    )
    return {
        "title": "Error categories",
        "questions": [
            {"id": question_id, "type": "choice", "prompt": prompt, "options": [*names, OTHER]},
            {"id": "notes", "type": "comment", "prompt": "Anything else?"},
        ],
    }


def error_review_rows(
    taxonomy: ErrorTaxonomy, samples: Sequence[SampleRecord], run_id: str
) -> list[dict[str, Any]]:
    """One row per coded sample for ``calipers review create --from FILE --key key
    --field reference=reference``: what raters see (``prompt``, ``response``,
    ``reference``) and where it came from (``run_id``, ``task``, ``sample_id``, ``epoch``,
    kept in the item's source). Never the judge's note or category."""
    coded = {s.key for s in taxonomy.samples if s.category is not None}
    rows = []
    for r in samples:
        if r.key not in coded:
            continue
        key = f"{r.task}/{r.sample_id}" + (f"/{r.epoch}" if r.epoch else "")
        rows.append(
            {
                "key": key,
                "prompt": sample_prompt_text(r),
                "response": r.response or "",
                "reference": r.target or "",
                "run_id": run_id,
                "task": r.task,
                "sample_id": r.sample_id,
                "epoch": r.epoch,
            }
        )
    return rows


def _source_key(item: ReviewItemRecord, run_id: str) -> SampleKey | None:
    src = item.source
    if isinstance(src.get("row"), dict):  # a file source: the row's columns
        src = src["row"]
    if src.get("run_id") != run_id or "sample_id" not in src or "task" not in src:
        return None
    return (str(src["task"]), str(src["sample_id"]), int(src.get("epoch") or 0))


def error_campaign_labels(
    campaign: str,
    questions: Sequence[dict[str, Any]],
    items: Sequence[ReviewItemRecord],
    finals: Sequence[FinalLabelLike],
    *,
    run_id: str,
    question: str | None = None,
) -> tuple[dict[SampleKey, tuple[str, str]], int]:
    """``({(task, sample_id, epoch): (category, where)}, n_unresolved)``: the final
    labels of a campaign's ``choice`` question (``question``, or its only choice one) for
    the items that came from run ``run_id`` (a run source, or a file of
    :func:`error_review_rows`). Unresolved final labels are counted and left out."""
    qid, qtype, _options = campaign_question(
        [q for q in questions if q.get("type") == "choice"] or questions, question
    )
    if qtype != "choice":
        raise ConfigError(
            f"Question {qid!r} is {qtype}; error categories are read from a choice question.",
            hint="Create the campaign with the questions of error_review_questions(taxonomy).",
        )
    by_key = {it.item_key: it for it in items}
    out: dict[SampleKey, tuple[str, str]] = {}
    unresolved = 0
    for fl in finals:
        item = by_key.get(fl.item_key)
        key = _source_key(item, run_id) if item is not None else None
        if key is None:
            continue
        if fl.value is None:
            unresolved += 1
            continue
        where = f"campaign {campaign}, item {fl.item_key} ({qid})"
        if key in out:
            raise DataError(f"{where}: sample {key[1]!r} is labelled by two items.")
        out[key] = (str(fl.value), where)
    if not out and not unresolved:
        raise DataError(
            f"Campaign {campaign!r} has no final {qid!r} labels of run {run_id}'s samples.",
            hint="Its items must come from the run's failures (error_review_rows) or the run "
            "(review create --from run:RUN), and have judgments.",
        )
    return out, unresolved


def _gate(n: int, kappa: Estimate) -> tuple[bool, str]:
    if n < MIN_CALIBRATION_ITEMS:
        return False, (
            f"uncalibrated: {n} human-labelled samples, fewer than {MIN_CALIBRATION_ITEMS}"
        )
    if kappa.is_empty or not kappa.low >= MIN_KAPPA:
        return False, (
            f"uncalibrated: kappa {kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}], "
            f"its lower end below {MIN_KAPPA}"
        )
    return True, (
        f"calibrated: kappa {kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}] on "
        f"{n} human-labelled samples"
    )


def calibrate_error_taxonomy(
    taxonomy: ErrorTaxonomy,
    labels: Labels,
    *,
    source: str = "labels",
    n_unresolved: int = 0,
    mapping: Mapping[str, str] | None = None,
    confidence: float = 0.95,
) -> ErrorTaxonomy:
    """``taxonomy`` with its :class:`CategoryCalibration` against ``labels``:
    ``{(task, sample_id, epoch): category}`` or ``{key: (category, where)}`` (as
    :func:`error_campaign_labels` gives). ``mapping`` renames human labels (free text,
    another taxonomy's names) to categories first; unmapped labels stay as they are and
    count as disagreements unless they are a category's name."""
    judged = {s.key: s.category for s in taxonomy.samples if s.category is not None}
    human: dict[SampleKey, str] = {}
    for key, v in labels.items():
        raw = v[0] if isinstance(v, tuple) else v
        human[key] = (mapping or {}).get(str(raw), str(raw))
    keys = [k for k in human if k in judged]
    h = [human[k] for k in keys]
    j = [str(judged[k]) for k in keys]
    cats = [c.name for c in taxonomy.categories]
    cats += sorted({*h} - set(cats))
    if OTHER not in cats:
        cats.append(OTHER)
    kappa = cohens_kappa(h, j, categories=cats, confidence=confidence)
    confusion = [
        [sum(a == r and b == c for a, b in zip(h, j, strict=True)) for c in cats] for r in cats
    ]
    per = []
    for c in cats:
        nj, nh = j.count(c), h.count(c)
        both = sum(a == c and b == c for a, b in zip(h, j, strict=True))
        if nj or nh:
            per.append(
                CategoryAgreement(
                    name=c,
                    n_judge=nj,
                    n_human=nh,
                    n_both=both,
                    precision=wilson(both, nj, confidence),
                    recall=wilson(both, nh, confidence),
                )
            )
    ok, reason = _gate(len(keys), kappa)
    cal = CategoryCalibration(
        source=source,
        n_labels=len(human),
        n_matched=len(keys),
        n_unmatched=len(human) - len(keys),
        n_unresolved=n_unresolved,
        kappa=kappa,
        exact_agreement=wilson(
            sum(a == b for a, b in zip(h, j, strict=True)), len(keys), confidence
        ),
        categories=cats,
        confusion=confusion,
        per_category=per,
        calibrated=ok,
        reason=reason,
    )
    return taxonomy.model_copy(update={"calibration": cal})
