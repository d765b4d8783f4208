"""The embedded SmolLM2 through llama.cpp: every sample's own seed gives its own completion,
and a seed replays its completion (so a fingerprint's draws are samples, not one cached
answer repeated)."""

from __future__ import annotations

import asyncio

import pytest

from calipers.analysis import sample_probes
from calipers.models import resolve_model
from calipers.tasks.fingerprint import probe_set
from calipers.types import FingerprintSettings

pytestmark = pytest.mark.slow


def test_smollm2_samples_differ_by_seed_and_replay_by_seed() -> None:
    model = resolve_model("smollm2")
    probes = [p for p in probe_set() if p.id in ("continue-story", "random-number")]
    settings = FingerprintSettings(temperature=1.0, max_tokens=16, samples_per_probe=4)
    first = asyncio.run(sample_probes(model, probes, settings, seed=11))
    again = asyncio.run(sample_probes(model, probes, settings, seed=11))
    other = asyncio.run(sample_probes(model, probes, settings, seed=11, stream="check"))
    asyncio.run(model.aclose())
    assert first.failed == 0 and first.completions == again.completions
    for p in probes:
        assert len(set(first.completions[p.id])) >= 3, first.completions[p.id]
    assert first.completions != other.completions
