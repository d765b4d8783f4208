"""Versioned probe sets for model fingerprints (``calipers fingerprint``, docs/fingerprint.md).

A probe set never changes once released: a fingerprint names the set it was recorded on, and a
check samples the same prompts. ``fp-v1`` holds 40 short prompts chosen to move when the model
does: open continuations and free choices (weights, quantization, decoding), identity and
persona questions (the system prompt), small fixed-answer questions (quantization slips).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from calipers.errors import CalipersError
from calipers.types import FingerprintProbe

__all__ = ["DEFAULT_PROBE_SET", "PROBE_SETS", "probe_set"]

DEFAULT_PROBE_SET = "fp-v1"
PROBE_SETS = {"fp-v1": "probes_v1.jsonl"}


@cache
def probe_set(name: str = DEFAULT_PROBE_SET) -> tuple[FingerprintProbe, ...]:
    """The probes of the named set, in their fixed order."""
    if name not in PROBE_SETS:
        known = ", ".join(sorted(PROBE_SETS))
        raise CalipersError(f"no probe set {name!r}; known: {known}")
    text = resources.files(__name__).joinpath(PROBE_SETS[name]).read_text(encoding="utf-8")
    return tuple(FingerprintProbe(**json.loads(line)) for line in text.splitlines() if line)
