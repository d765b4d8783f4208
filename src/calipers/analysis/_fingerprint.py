"""Model fingerprints: record a model's sampled completions of a probe set, and check later
whether the model still produces the same output distribution (docs/fingerprint.md).

Sampling calls the provider directly, never through the runner's response cache: every
completion is its own request with its own seed (derived from a base seed, the probe and the
sample's index), so a provider that honours seeds (llama.cpp, vLLM, OpenAI's ``seed``) gives
independent samples, and two requests are never one cached answer. A check draws a fresh base
seed, so it never replays the reference's draws.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from calipers._util.home import calipers_home
from calipers._util.seeding import derived_seed
from calipers.errors import CalipersError, ConfigError, DataError, ModelError
from calipers.models import ModelProvider, resolve_model
from calipers.tasks.fingerprint import DEFAULT_PROBE_SET, probe_set
from calipers.types import (
    ChatMessage,
    Estimate,
    Fingerprint,
    FingerprintProbe,
    FingerprintSettings,
    GenerateParams,
    ModelRequest,
)

__all__ = [
    "FingerprintCheck",
    "FingerprintSamples",
    "MovedProbe",
    "PowerRow",
    "check_fingerprint",
    "fingerprint_dir",
    "list_fingerprints",
    "load_fingerprint",
    "record_fingerprint",
    "sample_probes",
]

Progress = Callable[[int, int], None]  # (done, total) after each completion
Verdict = Literal["same", "changed", "inconclusive"]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
EFFECTS = (0.16, 0.5, 1.0)  # shares of traffic from another model that the power is shown for
TARGET_POWER = 0.8
MIN_SAMPLES = 2  # per probe and side: the unbiased MMD needs two


def fingerprint_dir() -> Path:
    """Where named fingerprints live: ``<calipers home>/fingerprints``."""
    return calipers_home() / "fingerprints"


def fingerprint_path(ref: str) -> Path:
    """The file of a reference given as a name (``<home>/fingerprints/NAME.json``) or a path
    (anything with a ``/`` or ending in ``.json``)."""
    if "/" in ref or ref.endswith(".json"):
        return Path(ref).expanduser()
    if not _NAME.match(ref):
        raise ConfigError(
            f"Fingerprint name {ref!r} is not a plain name.",
            hint="Use letters, digits, '.', '_' and '-' (e.g. smollm2-2026-12), or a path "
            "ending in .json.",
        )
    return fingerprint_dir() / f"{ref}.json"


def load_fingerprint(ref: str) -> Fingerprint:
    """The fingerprint ``ref`` names (a name under :func:`fingerprint_dir` or a path)."""
    path = fingerprint_path(ref)
    if not path.is_file():
        known = sorted(p.stem for p in fingerprint_dir().glob("*.json"))
        where = ", ".join(known) if known else "none yet"
        raise ConfigError(
            f"No fingerprint {ref!r} (looked for {path}).",
            hint=f"Recorded fingerprints: {where}. Record one with "
            "`calipers fingerprint record MODEL --name NAME`.",
        )
    try:
        return Fingerprint.load(path)
    except (OSError, ValueError) as e:
        raise DataError(
            f"Fingerprint file {path} cannot be read as a fingerprint ({str(e).splitlines()[0]}).",
            hint="It should be a file written by `calipers fingerprint record`.",
        ) from None


def list_fingerprints() -> list[tuple[str, Fingerprint | None]]:
    """Named fingerprints, by name; None for a file that does not load."""
    out: list[tuple[str, Fingerprint | None]] = []
    for path in sorted(fingerprint_dir().glob("*.json")):
        try:
            out.append((path.stem, Fingerprint.load(path)))
        except (OSError, ValueError):
            out.append((path.stem, None))
    return out


# -- sampling ---------------------------------------------------------------------------------


class FingerprintSamples(BaseModel):
    """Completions per probe id (successful ones, in sample order) and how many calls failed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    completions: dict[str, tuple[str, ...]]
    failed: int = 0
    first_error: str | None = None
    logprobs: dict[str, tuple[tuple[float, ...], ...]] | None = None  # when asked and given


def _request(
    probe: FingerprintProbe, settings: FingerprintSettings, seed: int, logprobs: bool = False
) -> ModelRequest:
    messages = [ChatMessage(role="user", content=probe.prompt)]
    if settings.system is not None:
        messages.insert(0, ChatMessage(role="system", content=settings.system))
    params = GenerateParams(
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        seed=seed,
        logprobs=True if logprobs else None,
    )
    return ModelRequest(messages=tuple(messages), params=params)


async def sample_probes(
    provider: ModelProvider,
    probes: Sequence[FingerprintProbe],
    settings: FingerprintSettings,
    *,
    seed: int,
    stream: str = "sample",
    concurrency: int | None = None,
    progress: Progress | None = None,
    logprobs: bool = False,
) -> FingerprintSamples:
    """``settings.samples_per_probe`` completions of every probe, each request with its own
    seed ``derived_seed(seed, stream, probe id, index)`` (record and check name different
    streams, so one ``--seed`` never replays the reference's draws). A failed call (after the
    provider's own retries) is counted, not retried here and not stored."""
    n = settings.samples_per_probe
    jobs = [(p, i) for p in probes for i in range(n)]
    gate = asyncio.Semaphore(concurrency or provider.default_concurrency or 1)
    done = 0
    out: dict[str, list[tuple[int, str]]] = {p.id: [] for p in probes}
    token_lp: dict[str, list[tuple[int, tuple[float, ...]]]] = {p.id: [] for p in probes}
    errors: list[str] = []

    async def one(probe: FingerprintProbe, i: int) -> None:
        nonlocal done
        seed_i = derived_seed(str(seed), stream, probe.id, str(i)) >> 1
        request = _request(probe, settings, seed_i, logprobs)
        async with gate:
            try:
                response = await provider.generate(request)
                out[probe.id].append((i, response.text))
                if response.token_logprobs:
                    token_lp[probe.id].append((i, response.token_logprobs))
            except ModelError as e:
                errors.append(e.message)
        done += 1
        if progress is not None:
            progress(done, len(jobs))

    await asyncio.gather(*(one(p, i) for p, i in jobs))
    completions = {k: tuple(t for _, t in sorted(v)) for k, v in out.items()}
    given = all(len(token_lp[k]) == len(out[k]) for k in out)  # every completion has them
    return FingerprintSamples(
        completions=completions,
        failed=len(errors),
        first_error=errors[0] if errors else None,
        logprobs=(
            {k: tuple(lp for _, lp in sorted(v)) for k, v in token_lp.items()}
            if logprobs and given
            else None
        ),
    )


def _check_samples(samples: FingerprintSamples, what: str) -> None:
    short = [k for k, v in samples.completions.items() if len(v) < MIN_SAMPLES]
    if short:
        cause = f" First error: {samples.first_error}" if samples.first_error else ""
        raise ModelError(
            f"{what}: {len(short)} probes got fewer than {MIN_SAMPLES} completions "
            f"({samples.failed} calls failed).{cause}",
            hint="Check that the model answers (try `calipers run -m MODEL --limit 1`), then "
            "record again.",
        )


def _settings(
    temperature: float, max_tokens: int, samples: int, system: str | None, top_p: float
) -> FingerprintSettings:
    if temperature <= 0:
        raise ConfigError(
            f"A fingerprint needs sampled completions, not temperature {temperature:g}.",
            hint="At temperature 0 a model gives one answer per probe and there is no "
            "distribution to compare; use the default (--temperature 1) or another value "
            "above 0.",
        )
    if samples < MIN_SAMPLES:
        raise ConfigError(
            f"--samples {samples}: a fingerprint needs at least {MIN_SAMPLES} per probe.",
            hint="10 per probe is the model equality testing paper's budget; 20 or more "
            "detects smaller changes.",
        )
    if max_tokens < 1:
        raise ConfigError(f"--max-tokens {max_tokens} must be positive.")
    return FingerprintSettings(
        temperature=temperature,
        max_tokens=max_tokens,
        top_p=top_p,
        system=system,
        samples_per_probe=samples,
    )


def _identity(provider: ModelProvider) -> dict[str, Any] | None:
    try:
        return provider.identity().model_dump(mode="json")
    except CalipersError:
        return None


async def record_fingerprint(
    model: str,
    *,
    samples: int = 10,
    temperature: float = 1.0,
    max_tokens: int = 32,
    system: str | None = None,
    top_p: float = 1.0,
    probe_set_name: str = DEFAULT_PROBE_SET,
    seed: int | None = None,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
    logprobs: bool = False,
) -> tuple[Fingerprint, FingerprintSamples]:
    """Sample ``model`` on the probe set and return the fingerprint (not saved: the caller
    saves it) with the sampling's failure count. ``logprobs``: ask for each generated token's
    log-probability (the openai provider; a server that gives none records None)."""
    settings = _settings(temperature, max_tokens, samples, system, top_p)
    probes = probe_set(probe_set_name)
    provider = provider or resolve_model(model)
    drawn = await sample_probes(
        provider,
        probes,
        settings,
        seed=_seed(seed),
        stream="record",
        progress=progress,
        logprobs=logprobs,
    )
    _check_samples(drawn, f"Recording {model}")
    fingerprint = Fingerprint(
        probe_set=probe_set_name,
        model=model,
        identity=_identity(provider),
        settings=settings,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        probes=probes,
        completions=drawn.completions,
        logprobs=drawn.logprobs,
    )
    return fingerprint, drawn


def _seed(seed: int | None) -> int:
    return secrets.randbits(31) if seed is None else seed


def not_sampling(fingerprint: Fingerprint) -> bool:
    """Every probe answered with one completion every time: the model ignores temperature
    (or is deterministic), so a check can only tell identical from different."""
    return all(len(set(v)) == 1 for v in fingerprint.completions.values())


# -- checking ---------------------------------------------------------------------------------


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
