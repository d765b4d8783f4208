"""The fingerprint canary: look at a model now and then, and ask after every look whether it
is still the model a recorded :class:`~calipers.types.Fingerprint` describes.

A look samples the reference's probes (all, or ``probes_per_look`` of them drawn at random)
with the reference's settings (system prompt, temperature, top_p, max_tokens) through a
*sampler*: the gateway's upstream (``gateway``'s ``fingerprint_canary``) or any model spec
(``calipers monitor fingerprint``). Every look is stored (:class:`~calipers.store.
FingerprintLookRecord`): an ok look with its completions and statistic; a look where any
probe failed (upstream down, timeout, an error answer) as ``failed`` with the error, never
as data (which probes fail can depend on what they would have answered). The verdict is
:func:`calipers.stats.canary_verdict` over the ok looks against the same reference, computed
when asked. See ``docs/fingerprint-canary.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calipers._util.hashing import json_hash
from calipers.stats import (
    CanaryLook,
    CanaryReference,
    CanaryVerdict,
    canary_look,
    canary_reference,
    canary_verdict,
)
from calipers.store import FingerprintLookRecord, Store
from calipers.types import Fingerprint, FingerprintProbe, FingerprintSettings

__all__ = [
    "CanaryDesign",
    "FingerprintCanaryStatus",
    "Sampler",
    "fingerprint_canaries",
    "fingerprint_canary_status",
    "fingerprint_hash",
    "take_fingerprint_look",
]

Sampler = Callable[[FingerprintProbe, FingerprintSettings], Awaitable[str]]
"""One completion of a probe, sampled with the reference's settings; raises when it cannot."""


class CanaryDesign(BaseModel):
    """How the canary tests: the chance of ever raising a false alarm (``alpha``), the looks
    before anything is concluded, the look count where the sequence is narrowest, and how
    many probes a look sends (None: all)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    min_looks: int = Field(3, ge=2)
    n_target: int = Field(24, ge=1)
    probes_per_look: int | None = Field(None, ge=1)
    length: int = Field(100, ge=1)
    """Characters of each completion the string kernel compares."""


def fingerprint_hash(fp: Fingerprint) -> str:
    """The reference's identity: looks against another reference are never pooled."""
    return json_hash(fp.model_dump(mode="json"))


def _probes(fp: Fingerprint, design: CanaryDesign, seed: int) -> list[FingerprintProbe]:
    """All probes, or ``probes_per_look`` drawn at random (independently of any answer)."""
    usable = [p for p in fp.probes if len(fp.completions.get(p.id, ())) >= 4]
    n = design.probes_per_look
    if n is None or n >= len(usable):
        return usable
    pick = np.random.default_rng(seed).choice(len(usable), size=n, replace=False)
    return [usable[int(i)] for i in sorted(pick)]


def _reference(fp: Fingerprint, design: CanaryDesign) -> CanaryReference:
    kept = {p.id: fp.completions[p.id] for p in fp.probes if len(fp.completions.get(p.id, ())) >= 4}
    if not kept:
        raise ValueError(
            "the reference has no probe with at least 4 completions: record it with more "
            "samples per probe"
        )
    return canary_reference(kept, length=design.length)


async def take_fingerprint_look(
    fp: Fingerprint,
    sample: Sampler,
    store: Store,
    *,
    model: str,
    canary: str = "fingerprint",
    design: CanaryDesign | None = None,
    concurrency: int = 8,
    lease: tuple[str, str] | None = None,
) -> FingerprintLookRecord:
    """Take one look now and store it (ok or failed); return the stored record. With
    ``lease=(name, holder)`` it is stored only while ``holder`` holds that job lease, else
    :class:`~calipers.store.JobLeaseLostError` (gateway replicas sharing one canary)."""
    d = design or CanaryDesign()
    ref = _reference(fp, d)
    ref_hash = fingerprint_hash(fp)
    done = await asyncio.to_thread(store.get_fingerprint_looks, canary=canary,
                                   reference_hash=ref_hash)  # fmt: skip
    probes = _probes(fp, d, int(ref_hash[:8], 16) + len(done))
    gate = asyncio.Semaphore(concurrency)

    async def one(probe: FingerprintProbe) -> str:
        async with gate:
            return await sample(probe, fp.settings)

    answers = await asyncio.gather(*(one(p) for p in probes), return_exceptions=True)
    completions = {p.id: [a] for p, a in zip(probes, answers, strict=True) if isinstance(a, str)}
    failed = [(p, a) for p, a in zip(probes, answers, strict=True) if not isinstance(a, str)]
    design_dict = {**d.model_dump(), "calibration": ref.summary()}
    if failed:
        probe, err = failed[0]
        more = f" (and {len(failed) - 1} more probes)" if len(failed) > 1 else ""
        record = FingerprintLookRecord(
            canary=canary, reference_hash=ref_hash, status="failed", model=model,
            completions=completions, design=design_dict,
            error=f"probe {probe.id}: {type(err).__name__}: {err}{more}",
        )  # fmt: skip
    else:
        look = canary_look(ref, completions)
        record = FingerprintLookRecord(
            canary=canary, reference_hash=ref_hash, status="ok", model=model,
            completions=completions, design=design_dict, statistic=look.to_dict(),
        )  # fmt: skip
    row_id = await asyncio.to_thread(store.add_fingerprint_look, record, lease=lease)
    return record.model_copy(update={"id": row_id})


@dataclass(frozen=True)
class FingerprintCanaryStatus:
    """Where one canary stands: its verdict over the ok looks, and the failed looks."""

    canary: str
    reference_hash: str
    model: str
    verdict: CanaryVerdict
    n_failed: int
    first: datetime | None
    last: datetime | None
    last_error: str | None
    changed_ts: datetime | None = None

    @property
    def alarm(self) -> bool:
        return self.verdict.state == "changed"

    def headline(self) -> str:
        """One line: same so far / changed since look k / not enough looks."""
        v = self.verdict
        failed = f"; {self.n_failed} failed look(s) not counted" if self.n_failed else ""
        if v.state == "changed":
            how = "less" if v.direction == "lower" else "more"
            when = f" ({self.changed_ts:%Y-%m-%d %H:%M})" if self.changed_ts else ""
            return (
                f"CHANGED since look {v.changed_at}{when}: {self.model}'s answers are {how} "
                f"like the reference's than its own are ({v.looks} looks{failed})"
            )
        if v.state == "same":
            return f"same so far ({v.looks} looks, false-alarm rate <= {v.alpha:g}{failed})"
        return f"not enough looks yet ({v.looks} of {v.min_looks}{failed})"

    def to_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t is not None else None

        return {
            "canary": self.canary,
            "reference_hash": self.reference_hash,
            "model": self.model,
            "state": self.verdict.state,
            "alarm": self.alarm,
            "headline": self.headline(),
            "n_failed": self.n_failed,
            "first_look": iso(self.first),
            "last_look": iso(self.last),
            "changed_at_time": iso(self.changed_ts),
            "last_error": self.last_error,
            "verdict": self.verdict.to_dict(),
        }


def _status(
    canary: str, ref_hash: str, looks: Sequence[FingerprintLookRecord]
) -> FingerprintCanaryStatus:
    ok = [r for r in looks if r.status == "ok" and r.statistic is not None]
    failed = [r for r in looks if r.status == "failed"]
    design = CanaryDesign.model_validate(
        {k: v for k, v in looks[0].design.items() if k != "calibration"}
    )  # the first look's design holds: alpha is chosen before looking, not after
    ref = CanaryReference.from_summary(looks[0].design["calibration"])
    stats = [CanaryLook(float(r.statistic["value"]), float(r.statistic["null_variance"]),
                        int(r.statistic["n_probes"])) for r in ok if r.statistic]  # fmt: skip
    verdict = canary_verdict(ref, stats, alpha=design.alpha, min_looks=design.min_looks,
                             n_target=design.n_target)  # fmt: skip
    changed = ok[verdict.changed_at - 1].ts if verdict.changed_at is not None else None
    return FingerprintCanaryStatus(
        canary, ref_hash, looks[-1].model, verdict, len(failed), looks[0].ts, looks[-1].ts,
        failed[-1].error if failed else None, changed,
    )  # fmt: skip


def fingerprint_canary_status(
    store: Store, canary: str = "fingerprint", reference: Fingerprint | None = None
) -> FingerprintCanaryStatus | None:
    """The status of ``canary`` (against ``reference``, else its latest reference), or None
    when it has no look yet."""
    ref_hash = fingerprint_hash(reference) if reference is not None else None
    looks = store.get_fingerprint_looks(canary=canary, reference_hash=ref_hash)
    if not looks:
        return None
    latest = looks[-1].reference_hash
    return _status(canary, latest, [r for r in looks if r.reference_hash == latest])


def fingerprint_canaries(store: Store) -> list[FingerprintCanaryStatus]:
    """Every canary with a look, each against its latest reference."""
    latest: dict[str, str] = {}
    for canary, ref_hash in store.fingerprint_canaries():
        latest[canary] = ref_hash
    out = []
    for canary, ref_hash in latest.items():
        looks = store.get_fingerprint_looks(canary=canary, reference_hash=ref_hash)
        out.append(_status(canary, ref_hash, looks))
    return out
