"""Checking a model against its fingerprint: sample it again as the reference was sampled, test
the two sets of completions (``stats.equality_tests``), say which probes moved and how much
power the check had, and give the verdict same / changed / inconclusive (docs/fingerprint.md).
Recording, loading and sampling are in ``._fingerprint``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from calipers.analysis._fingerprint import (
    EFFECTS,
    MIN_SAMPLES,
    TARGET_POWER,
    Progress,
    Verdict,
    _check_samples,
    _identity,
    _seed,
    not_sampling,
    sample_probes,
)
from calipers.errors import CalipersError, ConfigError, DataError
from calipers.models import ModelProvider, resolve_model
from calipers.tasks.fingerprint import probe_set
from calipers.types import Estimate, Fingerprint, FingerprintSettings

__all__ = ["FingerprintCheck", "MovedProbe", "PowerRow", "check_fingerprint"]


class MovedProbe(BaseModel):
    """A probe whose completions moved: both tests' parts for it (Holm-adjusted over probes)
    and each side's most frequent completion (its first 100 characters)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    probe: str
    prompt: str
    p_adjusted: float  # the MMD part's p-value, Holm-adjusted over the probes
    mmd: float
    rank: float
    reference_example: str
    candidate_example: str


class PowerRow(BaseModel):
    """How often a check of ``samples_per_probe`` per side notices ``epsilon`` of the traffic
    coming from a model that answers every probe with unrelated text (bootstrap from the
    reference's completions: :func:`calipers.stats.resample_check`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epsilon: float
    samples_per_probe: int
    power: Estimate


class FingerprintCheck(BaseModel):
    """The result of checking a model against a recorded fingerprint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Verdict
    exit_code: int
    summary: str
    model: str
    reference_model: str
    reference_recorded_at: str
    probe_set: str
    settings: FingerprintSettings
    samples_per_probe: int  # candidate completions per probe asked for
    failed: int
    seed: int
    alpha: float
    p_value: float  # the decision's: Holm over the two tests
    mmd_statistic: float
    mmd_p_value: float
    rank_statistic: float
    rank_p_value: float
    permutations: int
    probes_tested: int
    moved: tuple[MovedProbe, ...]
    effect: float  # the share of traffic "same" must have had the power to notice
    power: tuple[PowerRow, ...]
    needs_per_probe: int | None  # inconclusive: about this many samples per probe would do
    identity_changed: bool | None  # None: an identity is unknown on a side
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _mode(texts: Sequence[str]) -> str:
    return Counter(t[:100] for t in texts).most_common(1)[0][0]


def _power_rows(
    reference: Mapping[str, Sequence[str]],
    n: int,
    effects: Sequence[float],
    *,
    rng: Any,
    alpha: float,
    repetitions: int,
    permutations: int,
) -> list[PowerRow]:
    from calipers.stats import equality_power, resample_check, unrelated_pools

    other = unrelated_pools(reference)
    rows = []
    for eps in effects:

        def draw(r: Any, eps: float = eps) -> Any:
            return resample_check(reference, n, r, other=other, epsilon=eps, replace=True)

        est = equality_power(
            draw, rng=rng, repetitions=repetitions, permutations=permutations, alpha=alpha
        )
        rows.append(PowerRow(epsilon=eps, samples_per_probe=n, power=est))
    return rows


def _needs(
    reference: Mapping[str, Sequence[str]],
    n: int,
    effect: float,
    *,
    rng: Any,
    alpha: float,
    repetitions: int,
    permutations: int,
) -> tuple[int | None, list[PowerRow]]:
    """The smallest budget of 2n, 3n, 4n per probe whose power to notice ``effect`` reaches
    :data:`TARGET_POWER` (None: not even 4n), and the rows computed on the way."""
    tried = []
    for k in (2, 3, 4):
        (row,) = _power_rows(
            reference,
            k * n,
            [effect],
            rng=rng,
            alpha=alpha,
            repetitions=repetitions,
            permutations=permutations,
        )
        tried.append(row)
        if row.power.value >= TARGET_POWER:
            return k * n, tried
    return None, tried


async def check_fingerprint(
    reference: Fingerprint,
    model: str,
    *,
    samples: int | None = None,
    alpha: float = 0.05,
    effect: float = EFFECTS[0],
    permutations: int = 2000,
    power_repetitions: int = 100,
    seed: int | None = None,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
) -> FingerprintCheck:
    """Sample ``model`` as ``reference`` was sampled (its probes and settings; ``samples`` per
    probe, default the reference's) and test whether the output distribution is the same.

    Verdict: "changed" when the two tests (Holm) reject at ``alpha``; else "same" when a check
    of this size had at least 80% power to notice ``effect`` of the traffic coming from a model
    with unrelated answers, else "inconclusive" with about how many samples per probe would
    reach that power (tried up to four times the budget)."""
    from calipers.errors import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS
    from calipers.stats import equality_tests

    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"--alpha {alpha:g} must be between 0 and 1.")
    if not 0.0 < effect <= 1.0:
        raise ConfigError(f"--effect {effect:g} must be a share in (0, 1].")
    _check_reference(reference)
    n = samples or reference.settings.samples_per_probe
    if n < MIN_SAMPLES:
        raise ConfigError(f"--samples {n}: a check needs at least {MIN_SAMPLES} per probe.")
    settings = reference.settings.model_copy(update={"samples_per_probe": n})
    provider = provider or resolve_model(model)
    base_seed = _seed(seed)
    drawn = await sample_probes(
        provider, reference.probes, settings, seed=base_seed, stream="check", progress=progress
    )
    _check_samples(drawn, f"Checking {model}")
    import numpy as np

    from calipers._util.seeding import derived_rng

    rng = derived_rng(base_seed, "fingerprint-check")
    ref = {k: list(v) for k, v in reference.completions.items()}
    result = equality_tests(ref, drawn.completions, rng=rng, permutations=permutations, alpha=alpha)
    if np.isnan(result.p_value):
        raise DataError("No probe has two completions on both sides; nothing can be tested.")
    per_probe = min(len(v) for v in drawn.completions.values())
    power_kw: dict[str, Any] = {
        "rng": rng,
        "alpha": alpha,
        "repetitions": power_repetitions,
        "permutations": 200,
    }
    power = _power_rows(ref, per_probe, sorted({effect, *EFFECTS}), **power_kw)
    at_effect = next(r for r in power if r.epsilon == effect).power.value
    needs: int | None = None
    if result.changed:
        verdict: Verdict = "changed"
    elif at_effect >= TARGET_POWER:
        verdict = "same"
    else:
        verdict = "inconclusive"
        needs, tried = _needs(ref, per_probe, effect, **power_kw)
        power += tried
    prompts = {p.id: p.prompt for p in reference.probes}
    moved = []
    by_name = {p.probe: p for p in result.rank.probes}
    for name in result.moved:
        m = next(p for p in result.mmd.probes if p.probe == name)
        r = by_name[name]
        moved.append(
            MovedProbe(
                probe=name,
                prompt=prompts.get(name, ""),
                p_adjusted=m.p_adjusted,
                mmd=m.statistic,
                rank=r.statistic,
                reference_example=_mode(ref[name]),
                candidate_example=_mode(drawn.completions[name]),
            )
        )
    identity = _identity(provider)
    same_identity = None
    if identity is not None and reference.identity is not None:
        same_identity = identity == reference.identity
    notes = []
    if not_sampling(reference):
        notes.append(
            "Every probe of the reference gave one completion every time: the model did not "
            "sample, so the check can only tell identical answers from different ones."
        )
    if drawn.failed:
        notes.append(f"{drawn.failed} calls failed and were left out ({drawn.first_error}).")
    summary = _summary(verdict, result.p_value, alpha, len(moved), effect, at_effect, needs, n)
    return FingerprintCheck(
        verdict=verdict,
        exit_code={"same": EXIT_PASS, "changed": EXIT_FAIL, "inconclusive": EXIT_INCONCLUSIVE}[
            verdict
        ],
        summary=summary,
        model=model,
        reference_model=reference.model,
        reference_recorded_at=reference.recorded_at,
        probe_set=reference.probe_set,
        settings=settings,
        samples_per_probe=n,
        failed=drawn.failed,
        seed=base_seed,
        alpha=alpha,
        p_value=result.p_value,
        mmd_statistic=result.mmd.statistic,
        mmd_p_value=result.mmd.p_value,
        rank_statistic=result.rank.statistic,
        rank_p_value=result.rank.p_value,
        permutations=permutations,
        probes_tested=result.mmd.n_probes,
        moved=tuple(moved),
        effect=effect,
        power=tuple(power),
        needs_per_probe=needs,
        identity_changed=None if same_identity is None else not same_identity,
        notes=tuple(notes),
    )


def _summary(
    verdict: Verdict,
    p: float,
    alpha: float,
    moved: int,
    effect: float,
    power: float,
    needs: int | None,
    n: int,
) -> str:
    share = f"{100 * effect:.0f}% of traffic from a model with unrelated answers"
    if verdict == "changed":
        return (
            f"CHANGED: the output distribution differs from the reference (p = {p:.2g} <= "
            f"{alpha:g}); {moved} probes moved."
        )
    if verdict == "same":
        return (
            f"SAME: no change found (p = {p:.2g}); this check had {100 * power:.0f}% power to "
            f"notice {share}."
        )
    more = (
        f"about {needs - n} more samples per probe"
        if needs
        else f"more than {3 * n} more samples per probe"
    )
    return (
        f"INCONCLUSIVE (needs {more}): no change found (p = {p:.2g}), but this check had only "
        f"{100 * power:.0f}% power to notice {share} (--effect sets the share to rule out)."
    )


def _check_reference(reference: Fingerprint) -> None:
    try:
        current = probe_set(reference.probe_set)
    except CalipersError:
        raise ConfigError(
            f"The reference was recorded on probe set {reference.probe_set!r}, which this "
            "calipers does not have.",
            hint="Check with the calipers version that recorded it, or record a new reference.",
        ) from None
    if tuple(current) != tuple(reference.probes):
        raise ConfigError(
            f"The reference's probes are not those of {reference.probe_set!r} as this calipers "
            "has them (the file was edited, or the set changed).",
            hint="Record a new reference with `calipers fingerprint record`.",
        )
