"""The rows of the store as frozen, validated Python values.

A record's fields are the table's columns, with JSON columns as plain ``dict``/``list``, so the
runner builds records without knowing SQL, and what it reads back is what it wrote. Times are
timezone-aware UTC; a naive ``datetime`` is taken to be UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from calipers._util.clock import utc_now
from calipers._util.environment import calipers_version
from calipers.store._summary import read_summary
from calipers.types import RunSummary, TaskSummary

__all__ = [
    "ASSIGNMENT_STATES",
    "NOT_SENT_BREAKER_OPEN",
    "RATER_ROLES",
    "REVIEW_KINDS",
    "RUN_STATUSES",
    "TRAFFIC_ROLES",
    "AdjudicationRecord",
    "AssignmentState",
    "ImportedJudgment",
    "JudgmentRecord",
    "LeaseRecord",
    "OnlineScoreRecord",
    "RaterRecord",
    "RaterRole",
    "ReviewCampaignRecord",
    "ReviewItemRecord",
    "ReviewKind",
    "ReviewSessionRecord",
    "RunRecord",
    "RunStatus",
    "SampleKey",
    "SampleRecord",
    "TrafficRecord",
    "TrafficRole",
]

RunStatus = Literal["running", "finished", "interrupted", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "finished", "interrupted", "failed")

TrafficRole = Literal["baseline", "candidate"]
TRAFFIC_ROLES: tuple[TrafficRole, ...] = ("baseline", "candidate")

SampleKey = tuple[str, str, int]
"""``(task, sample_id, epoch)``: what identifies a sample within a run."""


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())


class RunRecord(_Record):
    """One evaluation run: model × tasks × methodology.

    ``model`` is the spec string as the user gave it, ``model_name`` the resolved name: both
    are copies, kept as columns so runs can be looked up by model, of ``config["model"]`` and
    the card's ``model.name``. A record fills them from there when they are not given, and
    refuses copies that disagree with their source, so a model is stored one way.
    ``methodology`` is the methodology card and ``methodology_hash`` its hash: runs with
    different hashes are never ranked together. ``config`` holds everything needed to resume.
    ``summary`` stays ``None`` until the run is finalized (a stored summary of any earlier
    shape reads as a :class:`RunSummary`); ``error`` says why a run failed.
    """

    id: str
    model: str = ""  # filled from config["model"] (below)
    model_name: str = ""  # filled from the card's model.name (below)
    tasks: list[str]
    methodology: dict[str, Any]
    methodology_hash: str
    config: dict[str, Any]
    status: RunStatus = "running"
    created_at: datetime = Field(default_factory=utc_now)
    finished_at: datetime | None = None
    summary: RunSummary | None = None
    error: str | None = None
    calipers_version: str = Field(default_factory=calipers_version)

    _utc = field_validator("created_at", "finished_at")(_as_utc)
    _summary = field_validator("summary", mode="before")(read_summary)

    @model_validator(mode="before")
    @classmethod
    def _model_columns(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        card_model = (out.get("methodology") or {}).get("model") or {}
        for field, source, where in (
            ("model", (out.get("config") or {}).get("model"), 'config["model"]'),
            ("model_name", card_model.get("name"), "the methodology card's model.name"),
        ):
            if source is None:
                continue
            if not out.get(field):
                out[field] = source
            elif out[field] != source:
                raise ValueError(f"{field} {out[field]!r} is not {where} ({source!r})")
        if not out.get("model"):
            raise ValueError('a run names its model: give config["model"] (or model)')
        return out

    def task_summary(self, task: str) -> TaskSummary | None:
        """The summary of ``task``; None before the run is finalized or for a task not in it."""
        return self.summary.tasks.get(task) if self.summary is not None else None

    @property
    def seed(self) -> int | None:
        """The seed the user gave (``config["seed"]``, its one place in the run row; the
        streams derived from it are the card's ``methodology["seeds"]``); None if not recorded."""
        seed = self.config.get("seed")
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


class SampleRecord(_Record):
    """One sample of a run: the request as sent, the raw response, the parsed answer, the
    scores, latency, tokens and cost, and the seed its item was made with (the run's items
    stream; ``None`` on rows stored before migration 4 whose run recorded no seed).

    A sample whose model call or scoring failed has ``error`` set and ``scores=None``: it is
    kept (nothing is lost) but is not "done", so a resumed run retries it. ``id`` is assigned by
    the store and is ``None`` on a record that has not been stored.
    """

    run_id: str
    task: str
    sample_id: str
    position: int
    prompt: dict[str, Any]
    epoch: int = 0
    category: str | None = None
    cluster: str | None = None
    response: str | None = None
    answer: str | None = None
    target: str | None = None
    scores: dict[str, float] | None = None
    score_details: dict[str, Any] | None = None
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    error: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    seed: int | None = None  # the run's items stream that made the item; None: not recorded
    id: int | None = None

    _utc = field_validator("created_at")(_as_utc)

    @property
    def key(self) -> SampleKey:
        return (self.task, self.sample_id, self.epoch)

    @property
    def ok(self) -> bool:
        """Completed without error: a resumed run will not redo it."""
        return self.error is None


NOT_SENT_BREAKER_OPEN = "not sent: the circuit breaker was open"
"""The ``error`` of a candidate call the gateway chose to make but did not send because its
circuit breaker was open: logged like any call, a candidate failure everywhere (see
``docs/ab.md``)."""


class TrafficRecord(_Record):
    """One upstream call the gateway made for one user request: the baseline's or the
    candidate's. The two calls of one request share ``pair_id``; ``served`` says whose answer
    the user got.

    ``request`` is the request body as sent (redacted; never headers, never API keys);
    ``response`` the answer's text (redacted), streamed or not. ``status`` is ``None`` when no
    HTTP response came back (connection refused, timeout), and ``error`` says what went wrong.
    Times are milliseconds from the gateway receiving the request; tokens are the upstream's
    own ``usage`` counts, ``None`` when it reported none. ``user_key_hash`` is a salted hash of
    the user/session key, never the key itself.
    """

    pair_id: str
    role: TrafficRole
    served: bool
    mode: str
    endpoint: str
    upstream: str
    request: dict[str, Any]
    stream: bool = False
    ts: datetime = Field(default_factory=utc_now)
    user_key_hash: str | None = None
    model: str | None = None
    response: str | None = None
    finish_reason: str | None = None
    status: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    ttft_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    id: int | None = None

    _utc = field_validator("ts")(_as_utc)

    @property
    def ok(self) -> bool:
        """The upstream answered 2xx with a usable body."""
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def breaker_open(self) -> bool:
        """A call not sent because the circuit breaker was open (not ``ok``: a failure)."""
        return self.error == NOT_SENT_BREAKER_OPEN


class OnlineScoreRecord(_Record):
    """One score of one arm of a logged request, given after the fact (``calipers ab``) or by
    the user (``scorer="feedback"``): what later looks read instead of scoring again.

    ``scorer`` is the scorer's key (``"refusal"``, ``"llm_judge:helpfulness"``,
    ``"llm_judge_pairwise"``, ``"feedback"``); ``(pair_id, role, scorer)`` is unique. ``value``
    is NaN when the arm could not be scored (never 0); ``details`` says why, or holds the
    scorer's other metrics and explanation. A pairwise judge scores the pair once, stored
    under ``role="candidate"`` as the probability that the candidate's answer is preferred.
    """

    pair_id: str
    role: TrafficRole
    scorer: str
    value: float
    details: dict[str, Any] | None = None
    scored_at: datetime = Field(default_factory=utc_now)
    id: int | None = None

    _utc = field_validator("scored_at")(_as_utc)


ReviewKind = Literal["single", "pairwise"]
REVIEW_KINDS: tuple[ReviewKind, ...] = ("single", "pairwise")

RaterRole = Literal["rater", "adjudicator", "owner"]
RATER_ROLES: tuple[RaterRole, ...] = ("rater", "adjudicator", "owner")

AssignmentState = Literal["leased", "answered", "skipped", "expired"]
ASSIGNMENT_STATES: tuple[AssignmentState, ...] = ("leased", "answered", "skipped", "expired")


class ReviewCampaignRecord(_Record):
    """A human review campaign: what raters are asked (``questions``, validated by the review
    layer) about which items, and how many judgments each item gets (``k``).

    ``repeat_fraction`` plans self-consistency checks: after answering ``n`` items a rater is
    shown ``round(n * repeat_fraction)`` of them again (extra judgments, never counted toward
    ``k``). ``seed`` drives the pairwise left/right draws and the choice of repeats;
    ``settings`` holds the owner's other choices (minimum seconds per item, source, ...).
    """

    name: str = Field(min_length=1)
    kind: ReviewKind
    questions: list[dict[str, Any]]
    k: int = Field(ge=1)
    repeat_fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    seed: int = 0
    settings: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)
    id: int | None = None

    _utc = field_validator("created_at")(_as_utc)


class ReviewItemRecord(_Record):
    """One item of a campaign. ``payload`` is everything raters see (a pairwise item holds the
    two answers as ``"a"`` and ``"b"``); ``source`` (run id, sample id, model identity) is
    never sent to raters. A control item (``gold`` answer given, or ``is_attention_check``) is
    offered to every rater once and never counts toward ``k``. ``position`` orders the queue
    and is assigned by the store in the order items are added."""

    item_key: str = Field(min_length=1)
    payload: dict[str, Any]
    source: dict[str, Any] = Field(default_factory=dict)
    gold: Any = None
    is_attention_check: bool = False
    position: int | None = None
    campaign_id: int | None = None
    id: int | None = None

    @property
    def is_control(self) -> bool:
        return self.gold is not None or self.is_attention_check


class RaterRecord(_Record):
    """A person invited to a campaign. The store holds only ``token_hash`` (hashed by the
    caller, never the token). An excluded rater gets no new items; ``excluded_reason`` and
    ``excluded_at`` record the latest exclusion and stay when it is reversed."""

    campaign_id: int
    name: str = Field(min_length=1)
    token_hash: str = Field(min_length=1)
    pool: str = "default"
    role: RaterRole = "rater"
    excluded: bool = False
    excluded_reason: str | None = None
    excluded_at: datetime | None = None
    created_at: datetime = Field(default_factory=utc_now)
    token_key: str | None = None
    id: int | None = None

    _utc = field_validator("created_at", "excluded_at")(_as_utc)


class LeaseRecord(_Record):
    """An item leased to a rater: what the rater page may show (never the item's source).
    ``swapped`` (pairwise only) says the rater sees ``b`` on the left and ``a`` on the right;
    ``counted`` says the judgment fills one of the item's ``k`` slots."""

    assignment_id: int
    campaign: str
    rater: str
    item_key: str
    payload: dict[str, Any]
    is_repeat: bool
    counted: bool
    swapped: bool | None
    leased_at: datetime
    lease_expires_at: datetime

    _utc = field_validator("leased_at", "lease_expires_at")(_as_utc)


class JudgmentRecord(_Record):
    """One answered assignment, joined with who judged which item, for analysis."""

    id: int
    assignment_id: int
    item_key: str
    rater: str
    pool: str
    answers: dict[str, Any]
    seconds: float | None
    is_repeat: bool
    counted: bool
    swapped: bool | None
    created_at: datetime

    _utc = field_validator("created_at")(_as_utc)


class AdjudicationRecord(_Record):
    """An adjudicator's decision on an item whose raters disagreed (the latest per item is the
    one in force): ``answers`` as a rater would give them, in the payload's terms (``a``/``b``
    for a pairwise preference, never left/right)."""

    id: int
    item_key: str
    adjudicator: str
    answers: dict[str, Any]
    note: str | None
    created_at: datetime

    _utc = field_validator("created_at")(_as_utc)


class ReviewSessionRecord(_Record):
    """A signed-in rater's web session; the store holds only the hash of the cookie's id."""

    rater_id: int
    csrf_token: str
    created_at: datetime
    expires_at: datetime

    _utc = field_validator("created_at", "expires_at")(_as_utc)


class ImportedJudgment(_Record):
    """A label a person gave outside calipers (a dataset's annotator), imported as a judgment
    of a rater already added to the campaign."""

    item_key: str
    rater: str
    answers: dict[str, Any]
    seconds: float | None = None
    swapped: bool | None = None
