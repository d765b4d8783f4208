"""User feedback on an answer the gateway served: ``POST /calipers/feedback`` with the
``x-calipers-request-id`` the answer carried. Stored as an online score (``scorer="feedback"``)
of the arm that served it, where ``calipers ab`` and ``calipers monitor`` read it.

Feedback is its own request, never on the user path of a completion; it is written at once
(one row), not batched. Behind a load balancer, feedback may reach another replica than the
one that served the answer, before that replica's log writer has stored the row: a request
id of the gateway's form that is found nowhere yet is looked up again for a little while
(``wait_s``) before it is refused. A store that cannot be reached for a moment (a database
restart, a cut connection) is retried for up to ``store_wait_s``; after that the answer is
503, which a client may retry.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse

from calipers.errors import StoreError
from calipers.gateway._redact_hook import Redact
from calipers.store import OnlineScoreRecord, Store, TrafficRole

__all__ = ["FEEDBACK_SCORER", "Feedback", "ServedArms", "record_feedback"]

FEEDBACK_SCORER = "feedback"
_GATEWAY_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex, as the gateway makes them
_T = TypeVar("_T")


class Feedback(BaseModel):
    """What a client sends: the request id, a score on its own scale (e.g. 1 thumbs up, 0 thumbs
    down, or a 1-5 rating; the analyses compare means), and an optional comment."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(min_length=1, max_length=64)
    score: float
    comment: str | None = Field(default=None, max_length=4000)

    @field_validator("score", mode="before")
    @classmethod
    def _not_bool(cls, v: object) -> object:
        if isinstance(v, bool):  # pydantic would read true as 1.0 and false as 0.0
            raise ValueError(
                f"score must be a number, not the boolean {str(v).lower()}: "
                "send 1 or 0 for thumbs up or down"
            )
        return v

    @field_validator("score")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("score must be a finite number")
        return v


class ServedArms:
    """Which arm served each recent request (bounded: the oldest are forgotten first, and
    then looked up in the store)."""

    def __init__(self, size: int = 100_000) -> None:
        self._size = size
        self._arms: OrderedDict[str, TrafficRole] = OrderedDict()

    def remember(self, pair_id: str, role: TrafficRole) -> None:
        self._arms[pair_id] = role
        if len(self._arms) > self._size:
            self._arms.popitem(last=False)

    def get(self, pair_id: str) -> TrafficRole | None:
        return self._arms.get(pair_id)


def _stored_arm(store: Store, pair_id: str) -> TrafficRole | None:
    served = [r for r in store.get_traffic(pair_id=pair_id) if r.served]
    return served[0].role if served else None


async def _in_store(call: Callable[[], _T], wait_s: float) -> _T:
    """``call()`` in a worker thread, retried while the store cannot be reached, for up to
    ``wait_s``; then its :class:`StoreError` is raised."""
    give_up, delay = time.monotonic() + wait_s, 0.1
    while True:
        try:
            return await asyncio.to_thread(call)
        except StoreError:
            if time.monotonic() + delay > give_up:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


async def _arm(
    store: Store, arms: ServedArms, pair_id: str, wait_s: float, store_wait_s: float
) -> TrafficRole | None:
    """The arm that served ``pair_id``: this replica's memory, else the store, asked again
    for up to ``wait_s`` (another replica may not have written its row yet)."""
    role = arms.get(pair_id)
    if role is not None:
        return role
    give_up = time.monotonic() + (wait_s if _GATEWAY_ID.fullmatch(pair_id) else 0.0)
    delay = 0.05
    while True:
        role = await _in_store(lambda: _stored_arm(store, pair_id), store_wait_s)
        if role is not None or time.monotonic() + delay > give_up:
            return role
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "invalid_feedback"}}, status)


async def record_feedback(
    request: Request,
    store: Store,
    arms: ServedArms,
    redact: Redact,
    *,
    wait_s: float = 0.0,
    store_wait_s: float = 5.0,
) -> JSONResponse:
    try:
        fb = Feedback.model_validate_json(await request.body())
    except ValidationError as e:
        where = "; ".join(
            f"{'.'.join(map(str, x['loc'])) or 'body'}: {x['msg']}" for x in e.errors()
        )
        return _error(
            400,
            f"Bad feedback ({where}). Send JSON like "
            '{"request_id": "<x-calipers-request-id>", "score": 1}.',
        )
    try:
        return await _store_feedback(fb, store, arms, redact, wait_s, store_wait_s)
    except StoreError as e:
        return JSONResponse(
            {"error": {"message": f"The feedback was not stored: {e.message} Retry it.",
                       "type": "store_unavailable"}},
            503, headers={"retry-after": "1"},
        )  # fmt: skip


async def _store_feedback(
    fb: Feedback, store: Store, arms: ServedArms, redact: Redact, wait_s: float, store_wait_s: float
) -> JSONResponse:
    role = await _arm(store, arms, fb.request_id, wait_s, store_wait_s)
    if role is None:
        return _error(
            404,
            f"No served request with id {fb.request_id!r} is known (yet): use "
            "the x-calipers-request-id header of the gateway's answer.",
        )
    details = {"comment": redact(fb.comment)} if fb.comment else None
    record = OnlineScoreRecord(
        pair_id=fb.request_id, role=role, scorer=FEEDBACK_SCORER, value=fb.score, details=details
    )
    stored = await _in_store(lambda: store.add_online_scores([record]), store_wait_s)
    return JSONResponse({"request_id": fb.request_id, "role": role, "stored": stored == 1})
