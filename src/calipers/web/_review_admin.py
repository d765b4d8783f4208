"""The adjudicator's page (items whose raters disagree, with every label, and the decision) and
the owner's page (progress, raters with their flags, exclude and include).

Adjudicators and owners see raters' names; nobody here sees a model's identity: items are shown
from their payload (pairwise answers as A and B, A on the left), never from their ``source``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from calipers._util.clock import utc_now
from calipers.errors import ConfigError, StoreError
from calipers.review import disagreements, pairwise_outcome, review_report, validate_answers
from calipers.store import JudgmentRecord, ReviewItemRecord
from calipers.types import Estimate
from calipers.web._review_app import (
    FormData,
    PageError,
    ReviewState,
    check_csrf,
    render,
    require,
    state,
)
from calipers.web._review_rate import answers_from_form, shown

__all__ = ["adjudication_queue", "router"]

router = APIRouter()
_DECIDED = ("pass_fail", "likert", "choice", "preference")  # questions with one label


def adjudication_queue(
    st: ReviewState,
    items: list[ReviewItemRecord],
    judgments: list[JudgmentRecord],
    adjudications: list[Any],
) -> list[str]:
    """Item keys, in queue order, on which the raters disagree on a pass/fail, Likert, choice
    or preference question and that no one has adjudicated (tags and comments differ too
    often to send every difference to a person)."""
    keys: set[str] = set()
    for q in st.questions.items():
        if q.type in _DECIDED:
            keys.update(disagreements(items, judgments, adjudications, q.id))
    return [i.item_key for i in items if i.item_key in keys]


def _label(st: ReviewState, j: JudgmentRecord) -> dict[str, str]:
    """A judgment's answers as text; a preference as the answer it picked (A or B)."""
    out: dict[str, str] = {}
    pref = st.questions.preference()  # its id is the owner's choice ("preference" by default)
    for qid, value in j.answers.items():
        if pref is not None and qid == pref.id:
            outcome = pairwise_outcome(value, j.swapped)
            out[qid] = {"a": "A", "b": "B"}.get(outcome, "tie")
        elif isinstance(value, list):
            out[qid] = ", ".join(map(str, value)) or "(none)"
        else:
            out[qid] = str(value)
    return out


@router.get("/adjudicate")
def adjudicate_page(request: Request, item: str | None = None) -> Response:
    v = require(request, "adjudicator", "owner")
    st = state(request)
    items = st.store.get_review_items(st.campaign)
    judgments = st.store.get_judgments(st.campaign)
    queue = adjudication_queue(st, items, judgments, st.store.get_adjudications(st.campaign))
    if not queue:
        return render(request, "adjudicate.html.j2", v=v, item=None, queue=queue)
    key = item if item in queue else queue[0]
    found = next(i for i in items if i.item_key == key)
    labels = [
        {"rater": j.rater, "pool": j.pool, "seconds": j.seconds, "answers": _label(st, j)}
        for j in judgments
        if j.item_key == key and j.counted
    ]
    return render(
        request,
        "adjudicate.html.j2",
        v=v,
        item=key,
        queue=queue,
        kind=st.kind,
        show=shown(st.kind, found.payload, False),  # A on the left
        labels=labels,
        questions=st.questions.items(),
    )


@router.post("/adjudicate")
def adjudicate(request: Request, form: FormData) -> Response:
    v = require(request, "adjudicator", "owner")
    check_csrf(request, v, form)
    st = state(request)
    key = (form.get("item") or [""])[-1]
    note = (form.get("note") or [""])[-1].strip() or None
    try:
        answers = validate_answers(st.questions, answers_from_form(st.questions, form))
    except ConfigError as e:
        raise PageError(400, "Incomplete decision", e.message, link="/adjudicate") from None
    for q in st.questions.items():  # stored in the payload's terms: A was on the left
        if q.type == "preference" and q.id in answers:
            answers[q.id] = pairwise_outcome(answers[q.id], False)
    try:
        st.store.adjudicate(st.campaign, key, v.rater.name, answers, note=note, now=utc_now())
    except StoreError:
        raise PageError(403, "Decision refused", "This item cannot be decided by you.") from None
    return RedirectResponse("/adjudicate", 303)


def _share(e: Estimate | None) -> str:
    """``62% [48, 75]``, or a dash when there is nothing to estimate."""
    if e is None or e.n == 0 or math.isnan(e.value):
        return "–"
    return f"{100 * e.value:.0f}% [{100 * e.low:.0f}, {100 * e.high:.0f}]"


def _rater_rows(st: ReviewState) -> list[dict[str, Any]]:
    """Each person's quality figures from the campaign's report (``review_report``), with a
    position-bias flag when the share of left picks has an interval that excludes one half."""
    rows = []
    for q in review_report(st.store, st.campaign).raters:
        flags = list(q.flag_reasons)
        left = q.left_share
        if left is not None and left.n and not left.low <= 0.5 <= left.high:
            flags.append(f"picks left {100 * left.value:.0f}% of the time")
        rows.append(
            {
                "r": q,
                "flags": flags,
                "median": q.median_seconds,
                "gold": _share(q.gold_accuracy),
                "consistency": _share(q.self_consistency),
                "agreement": _share(q.agreement),
                "left": _share(left),
            }
        )
    return rows


@router.get("/owner")
def owner_page(request: Request) -> Response:
    v = require(request, "owner")
    st = state(request)
    every = st.store.get_review_items(st.campaign)
    items = [i for i in every if not i.is_control]
    judgments = st.store.get_judgments(st.campaign)
    counts = Counter(j.item_key for j in judgments if j.counted)
    k = st.store.get_campaign(st.campaign).k
    progress = {
        "n_items": len(items),
        "complete": sum(1 for i in items if counts[i.item_key] >= k),
        "judgments": sum(counts.values()),
        "needed": k * len(items),
        "k": k,
    }
    queue = adjudication_queue(
        st,
        st.store.get_review_items(st.campaign),
        judgments,
        st.store.get_adjudications(st.campaign),
    )
    return render(
        request,
        "owner.html.j2",
        v=v,
        progress=progress,
        raters=_rater_rows(st),
        disagreements=len(queue),
    )


@router.post("/owner/raters")
def set_excluded(request: Request, form: FormData) -> Response:
    v = require(request, "owner")
    check_csrf(request, v, form)
    st = state(request)
    name = (form.get("rater") or [""])[-1]
    action = (form.get("action") or [""])[-1]
    reason = (form.get("reason") or [""])[-1].strip() or None
    if action not in ("exclude", "include"):
        raise PageError(400, "Unknown action", "Choose exclude or include.", link="/owner")
    try:
        st.store.set_rater_excluded(
            st.campaign, name, action == "exclude", reason=reason, now=utc_now()
        )
    except StoreError:
        raise PageError(404, "No such rater", "That rater is not in the campaign.") from None
    return RedirectResponse("/owner", 303)
