"""What the gateway is told: upstreams, mode, fractions, and the limits that keep the user path
fast (timeouts, queue sizes, the batch window, the circuit breaker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from calipers._util.duration import parse_seconds
from calipers.errors import ConfigError

__all__ = ["FingerprintCanaryConfig", "GatewayConfig", "Mode", "load_config"]

Mode = Literal["shadow", "canary", "off"]


def _check_url(value: str, name: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{name} must be an http(s) URL such as http://127.0.0.1:8000/v1, not {value!r}"
        )
    if parts.username or parts.password:
        raise ValueError(f"{name} must not contain a user or password (keys go in headers)")
    if parts.query or parts.fragment:
        raise ValueError(f"{name} must not have a query or fragment: {value!r}")
    return value.rstrip("/")


class FingerprintCanaryConfig(BaseModel):
    """A fingerprint canary run by the gateway (``docs/fingerprint-canary.md``): every
    ``every`` it sends the probes of the recorded fingerprint ``reference`` to the
    ``upstream`` with the reference's settings, stores the look, and the sequential test
    says (in ``calipers monitor`` and the dashboard) whether the model is still the same."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: Path
    """The fingerprint (JSON) written by ``calipers fingerprint record``."""
    upstream: Literal["baseline", "candidate"] = "baseline"
    every: float = Field(3600.0, gt=0)
    """Seconds between looks; ``1h``, ``30m`` and the like are read too. A look is due
    ``every`` after the last one stored (at start-up when none is)."""
    model: str | None = None
    """The ``model`` field of the probe requests. Default: the reference's model, without
    its provider (``openai:gpt-4o-mini`` sends ``gpt-4o-mini``)."""
    probes_per_look: int | None = Field(None, ge=1)
    """Probes per look, drawn at random; default all of the reference's."""
    name: str = "fingerprint"
    """The canary's name: its looks are stored under it."""
    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    """The chance of ever raising a false alarm, however many looks."""
    timeout_s: float = Field(120.0, gt=0)
    """Deadline of each probe request; a look with a probe past it is a failed look."""
    lease_s: float = Field(30.0, gt=0)
    """Several gateway replicas on one store: one of them, the holder of a lease in the store,
    takes the looks; it renews the lease every third of this, and when it dies another
    replica takes over after at most this long (``30s``, ``1m`` are read too)."""

    @field_validator("every", "lease_s", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        if isinstance(v, str):
            seconds = parse_seconds(v)
            if seconds is None:
                raise ValueError(f"{v!r} is not a duration such as 1h, 30m or 3600")
            return seconds
        return v


class GatewayConfig(BaseModel):
    """The gateway's settings. URLs are OpenAI-compatible base URLs ending where ``/models``
    and ``/chat/completions`` hang off (usually ``.../v1``).

    ``fraction`` is the share of requests mirrored to the candidate (``shadow``) or the share
    of users served by it (``canary``); ``off`` ignores it and the candidate.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline_url: str
    candidate_url: str | None = None
    mode: Mode = "shadow"
    fraction: float = Field(0.1, ge=0.0, le=1.0)
    user_headers: tuple[str, ...] = ("x-calipers-user",)
    """Request headers holding the user/session key, first found wins; then the ``user`` field
    of the body. Canary requests without a key go to the baseline (they cannot be sticky)."""
    salt: str = "calipers"
    """Mixed into the user-key hash: changing it reshuffles which users are in the canary."""
    seed: int | None = None
    """Seeds shadow sampling (reproducible tests); ``None`` draws from the OS."""
    candidate_params: dict[str, Any] = Field(default_factory=dict)
    """Top-level body fields set on every request sent to the candidate (e.g. a temperature)."""
    candidate_system_prompt: str | None = None
    """A system message put first in every chat request sent to the candidate (replacing the
    request's own first system message, if any)."""
    connect_timeout_s: float = Field(5.0, gt=0)
    baseline_timeout_s: float = Field(600.0, gt=0)
    candidate_timeout_s: float = Field(30.0, gt=0)
    canary_deadline_ms: float | None = Field(None, gt=0)
    """How long a canary user waits for the candidate's first byte (a stream's first chunk,
    an unstreamed answer's body) before the baseline answers instead. ``None`` (default):
    the baseline's p95 for that kind of request plus ``canary_deadline_margin_ms``, between
    ``canary_deadline_floor_ms`` and the candidate timeout; ``canary_deadline_start_ms``
    until 20 baseline answers of the kind are in."""
    canary_deadline_margin_ms: float = Field(500.0, ge=0)
    canary_deadline_floor_ms: float = Field(250.0, gt=0)
    canary_deadline_start_ms: float = Field(2000.0, gt=0)
    max_connections: int = Field(512, ge=1)
    shadow_workers: int = Field(16, ge=1)
    shadow_queue_size: int = Field(1000, ge=1)
    log_queue_size: int = Field(20_000, ge=1)
    batch_window_ms: float = Field(200.0, gt=0)
    batch_max_rows: int = Field(500, ge=1)
    log_retry_s: float = Field(60.0, ge=0)
    """How long a batch of log rows is retried while the store cannot be reached (a database
    restart, a lost connection) before its rows are counted as lost."""
    store_connections: int = Field(5, ge=1)
    """Connections to a PostgreSQL store this gateway process holds at most (replicas ×
    this must stay under the server's ``max_connections``); SQLite ignores it."""
    breaker_failures: int = Field(5, ge=1)
    """Consecutive candidate failures (errors, timeouts, invalid bodies, canary calls past the
    first-byte deadline) that open the breaker."""
    breaker_reset_s: float = Field(30.0, gt=0)
    """How long the breaker stays open before one trial call is let through."""
    shutdown_grace_s: float = Field(10.0, ge=0)
    """On shutdown, how long accepted shadow calls may still run before they are cancelled (and
    logged as cancelled)."""
    fingerprint_canary: FingerprintCanaryConfig | None = None
    """Look at an upstream now and then: is it still the model a fingerprint recorded?"""
    redact: bool = True
    """Redact personal data (e-mail, phone, card numbers) before logging. API keys and tokens
    are removed whatever this says."""

    @field_validator("baseline_url")
    @classmethod
    def _baseline(cls, v: str) -> str:
        return _check_url(v, "the baseline URL")

    @field_validator("candidate_url")
    @classmethod
    def _candidate(cls, v: str | None) -> str | None:
        return None if v is None else _check_url(v, "the candidate URL")

    @field_validator("user_headers")
    @classmethod
    def _lower(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.strip().lower() for h in v if h.strip())

    @model_validator(mode="after")
    def _needs_candidate(self) -> GatewayConfig:
        if self.mode != "off" and self.candidate_url is None:
            raise ValueError(f"mode {self.mode!r} needs a candidate URL (or use mode 'off')")
        fp = self.fingerprint_canary
        if (
            fp is not None
            and fp.upstream == "candidate"
            and (self.candidate_url is None or self.mode == "off")
        ):
            raise ValueError("the fingerprint canary's upstream 'candidate' needs a candidate URL")
        return self


def load_config(**values: Any) -> GatewayConfig:
    """Build a :class:`GatewayConfig`, turning validation errors into :class:`ConfigError`."""
    try:
        return GatewayConfig(**values)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "gateway config"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(
            f"Bad gateway setting {where}: {msg}.",
            hint="See `calipers gateway --help` and docs/gateway.md.",
        ) from None
