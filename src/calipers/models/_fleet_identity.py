"""What a fleet's endpoints serve, from their ``GET /models``, and the check that they agree."""

from __future__ import annotations

import json
from typing import Any

from calipers.errors import ConfigError

__all__ = ["agree", "describe", "served_model"]

_RICHER = ("root", "parent")  # vLLM: the weights behind a served name, a LoRA's base
_META = ("n_params", "n_vocab", "n_ctx_train", "n_embd", "size")  # llama.cpp's server


def served_model(body: Any, model: str) -> dict[str, str]:
    """What a ``GET /models`` answer says is served for ``model``: the id (the requested one
    when listed, else the only one listed), and what vLLM and llama.cpp add about the weights.
    A server listing several models, none of them ``model``, is described by the list."""
    data = body.get("data") if isinstance(body, dict) else None
    entries = [m for m in data or [] if isinstance(m, dict) and "id" in m]
    ids = sorted(str(m["id"]) for m in entries)
    chosen = next((m for m in entries if str(m["id"]) == model), None)
    if chosen is None and len(entries) == 1:
        chosen = entries[0]
    if chosen is None:
        return {"models": ", ".join(ids) or "(none listed)"}
    out = {"id": str(chosen["id"])}
    out.update({k: str(chosen[k]) for k in _RICHER if chosen.get(k) not in (None, "")})
    meta = chosen.get("meta")
    if isinstance(meta, dict):
        out.update({f"meta.{k}": str(meta[k]) for k in _META if k in meta})
    return out


def describe(served: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in served.items())


def agree(served: dict[str, dict[str, str]]) -> dict[str, str]:
    """The one model every reachable endpoint serves, or a ConfigError naming who differs."""
    kinds: dict[str, list[str]] = {}
    for url, what in served.items():
        kinds.setdefault(json.dumps(what, sort_keys=True), []).append(url)
    if len(kinds) == 1:
        return next(iter(served.values()))
    lines = "; ".join(
        f"{', '.join(urls)} serve{'s' if len(urls) == 1 else ''} {describe(json.loads(k))}"
        for k, urls in kinds.items()
    )
    raise ConfigError(
        f"The fleet's endpoints do not serve the same model: {lines}.",
        hint="Point every --base-url (or fleet file entry) at servers of one model; a fleet "
        "spreads one model's requests, it never mixes models.",
    )
