"""The rater's page: the next item of their own queue, leased on the server, and its answer.

A pairwise item shows its two answers as left and right as the lease says (``swapped``: ``b``
on the left); the lease's payload holds no model name, id or run, and an item's ``source`` is
never read here. A POST answers or skips one lease: another rater's lease is 403, an expired
one 409 (the item went back to the pool), an excluded rater is told so.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from calipers._util.clock import utc_now
from calipers.errors import ConfigError
from calipers.review import QuestionSet, validate_answers
from calipers.store import (
    LeaseClosedError,
    LeaseExpiredError,
    LeaseNotYoursError,
    LeaseRecord,
    RaterExcludedError,
    ReviewNotFoundError,
)
from calipers.web._review_app import (
    FormData,
    PageError,
    Visitor,
    check_csrf,
    render,
    require,
    state,
    text_of,
)

__all__ = ["answers_from_form", "router", "shown"]

router = APIRouter()
MAX_SECONDS = 24 * 3600.0
_EXCLUDED = PageError(
    403,
    "You are no longer on this campaign",
    "The campaign's owner has excluded you from rating. Thank you for your work so far.",
)


def shown(kind: str, payload: dict[str, Any], swapped: bool | None) -> dict[str, str]:
    """What the page shows of a payload: the prompt and either the response (and reference)
    or the left and right answers (``b`` on the left when ``swapped``)."""
    out = {"prompt": text_of(payload.get("prompt", ""))}
    if kind == "pairwise":
        left, right = ("b", "a") if swapped else ("a", "b")
        out |= {"left": text_of(payload.get(left, "")), "right": text_of(payload.get(right, ""))}
    else:
        out["response"] = text_of(payload.get("response", ""))
        if payload.get("reference") is not None:
            out["reference"] = text_of(payload["reference"])
    return out


def answers_from_form(questions: QuestionSet, form: dict[str, list[str]]) -> dict[str, Any]:
    """The raw answers in a form: field ``q.ID`` per question (every ticked tag for tags)."""
    raw: dict[str, Any] = {}
    for q in questions.items():
        values = form.get(f"q.{q.id}", [])
        if q.type == "tags":
            raw[q.id] = [v for v in values if v]
        elif values and values[-1] != "":
            raw[q.id] = values[-1]
    return raw


def _seconds(form: dict[str, list[str]]) -> float | None:
    try:
        s = float((form.get("seconds") or [""])[-1])
    except ValueError:
        return None
    return s if math.isfinite(s) and 0 <= s <= MAX_SECONDS else None


def _page(request: Request, v: Visitor, *, status: int = 200, error: str | None = None) -> Response:
    st = state(request)
    now = utc_now()
    try:
        lease: LeaseRecord | None = st.store.lease_next(
            st.campaign, v.rater.name, now=now, lease_s=st.lease_s
        )
    except RaterExcludedError:
        raise _EXCLUDED from None
    done = st.progress.done(v.rater.name)
    waiting = 0
    if lease is None:  # waiting for others, or done: ask the store now
        waiting = st.store.waiting_for(st.campaign, v.rater.name, now=now)

    def still_to_come() -> int:
        if lease is None:
            return waiting
        return st.store.waiting_for(st.campaign, v.rater.name, now=now)

    open_now = 0 if lease is None else 1
    total = st.progress.total(v.rater.name, done, open_now, still_to_come, fresh=lease is None)
    progress = {"done": done, "total": total}
    if lease is None:
        return render(
            request, "rate.html.j2", v=v, lease=None, waiting=waiting, progress=progress, error=None
        )
    return render(
        request,
        "rate.html.j2",
        status,
        v=v,
        lease=lease,
        kind=st.kind,
        show=shown(st.kind, lease.payload, lease.swapped),
        questions=st.questions.items(),
        waiting=waiting,
        progress=progress,
        error=error,
    )


@router.get("/rate")
def rate(request: Request) -> Response:
    return _page(request, require(request, "rater"))


def _rater(request: Request, form: dict[str, list[str]]) -> Visitor:
    v = require(request, "rater")
    check_csrf(request, v, form)
    if v.rater.excluded:
        raise _EXCLUDED
    return v


def _closed(e: Exception) -> PageError:
    if isinstance(e, LeaseNotYoursError):
        return PageError(403, "Not your item", "This item is in another rater's queue.")
    if isinstance(e, LeaseExpiredError):
        return PageError(
            409,
            "This item's time ran out",
            "The item was open too long and went back to the pool; your answer was not "
            "recorded. Go on with the next item.",
            link="/rate",
        )
    if isinstance(e, LeaseClosedError):
        return PageError(409, "Already answered", "This item was already answered.", link="/rate")
    return PageError(404, "No such item", "This item is not in the campaign.", link="/rate")


_LEASE_ERRORS = (LeaseNotYoursError, LeaseExpiredError, LeaseClosedError, ReviewNotFoundError)


@router.post("/rate/{assignment_id}")
def answer(request: Request, assignment_id: int, form: FormData) -> Response:
    v = _rater(request, form)
    st = state(request)
    try:
        answers = validate_answers(st.questions, answers_from_form(st.questions, form))
    except ConfigError as e:
        return _page(request, v, status=400, error=e.message)
    try:
        st.store.submit(
            st.campaign,
            v.rater.name,
            assignment_id,
            answers,
            seconds=_seconds(form),
            now=utc_now(),
        )
    except _LEASE_ERRORS as e:
        raise _closed(e) from None
    st.progress.answered(v.rater.name)
    return RedirectResponse("/rate", 303)


@router.post("/rate/{assignment_id}/skip")
def skip(request: Request, assignment_id: int, form: FormData) -> Response:
    v = _rater(request, form)
    st = state(request)
    try:
        st.store.skip(st.campaign, v.rater.name, assignment_id, now=utc_now())
    except _LEASE_ERRORS as e:
        raise _closed(e) from None
    return RedirectResponse("/rate", 303)
