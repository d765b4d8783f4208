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
from collections.abc import Callable, Sequence
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
    Fingerprint,
    FingerprintProbe,
    FingerprintSettings,
    GenerateParams,
    ModelRequest,
)

__all__ = [
    "FingerprintSamples",
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


def probe_request(
    probe: FingerprintProbe,
    settings: FingerprintSettings,
    seed: int | None,
    logprobs: bool = False,
) -> ModelRequest:
    """The request that samples ``probe`` as a fingerprint's ``settings`` say (its system
    prompt, temperature, top-p, max tokens); ``seed`` None leaves the draw to the backend.
    Record, check and the fingerprint canary all sample through it."""
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
        request = probe_request(probe, settings, seed_i, logprobs)
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
