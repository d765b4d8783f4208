"""A model's fingerprint: sampled completions of a versioned probe set, kept as a reference.

``calipers fingerprint record`` samples every probe of a probe set several times at a fixed
temperature and stores the completions (and per-token log-probabilities where the API gives
them) as a :class:`Fingerprint`; ``calipers fingerprint check`` and the gateway's fingerprint
canary sample the model again and test whether the output distribution is still the same
(docs/fingerprint.md). A fingerprint is a JSON file: ``save``/``load`` round-trip it exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Fingerprint", "FingerprintProbe", "FingerprintSettings"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FingerprintProbe(_Frozen):
    """One prompt of a probe set. ``sensitive_to`` says what it was chosen to expose
    (``weights``, ``quantization``, ``system_prompt``, ``decoding``)."""

    id: str
    prompt: str
    sensitive_to: tuple[str, ...] = ()


class FingerprintSettings(_Frozen):
    """How the completions were sampled; a check samples the same way. ``system`` is the
    system prompt the reference was recorded with (None: none was sent)."""

    temperature: float = Field(gt=0)
    max_tokens: int = Field(gt=0)
    top_p: float = 1.0
    system: str | None = None
    samples_per_probe: int = Field(gt=0)


class Fingerprint(_Frozen):
    """Completions per probe id, in the order they were sampled. ``logprobs`` holds, per probe,
    one list of per-token log-probabilities per completion, or is None when the API gave none.
    ``model`` is the spec as given; ``identity`` the provider's identity dump, when known."""

    format: Literal[1] = 1
    probe_set: str
    model: str
    identity: dict[str, Any] | None = None
    settings: FingerprintSettings
    recorded_at: str
    probes: tuple[FingerprintProbe, ...]
    completions: dict[str, tuple[str, ...]]
    logprobs: dict[str, tuple[tuple[float, ...], ...]] | None = None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.model_dump_json(indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Fingerprint:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))
