"""Who gets which arm: sticky canary assignment by a salted hash of the user key, and random
sampling of requests to mirror.

A user's arm depends only on ``(salt, key, fraction)``: the same user lands on the same arm on
every request, on every gateway replica, after every restart. Raising the fraction only adds
users to the canary (a user in at 5% is still in at 10%), because a user is in when their hash,
read as a number in [0, 1), is below the fraction.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any

__all__ = ["MirrorSampler", "hash_key", "in_canary", "key_position", "user_key"]


def user_key(headers: Mapping[str, str], body: Any, header_names: tuple[str, ...]) -> str | None:
    """The user/session key of a request: the first non-empty header of ``header_names``
    (lower-case), else a non-empty string ``user`` field of a JSON object body, else ``None``."""
    for name in header_names:
        value = headers.get(name)
        if value:
            return value
    if isinstance(body, dict):
        value = body.get("user")
        if isinstance(value, str) and value:
            return value
    return None


def _digest(salt: str, key: str) -> bytes:
    return hashlib.sha256(f"{salt}\x00{key}".encode()).digest()


def key_position(key: str, salt: str) -> float:
    """The key's place in [0, 1): the first 8 bytes of sha256(salt, key) over 2**64."""
    return int.from_bytes(_digest(salt, key)[:8], "big") / 2.0**64


def in_canary(key: str, salt: str, fraction: float) -> bool:
    """Whether this user is served by the candidate at this canary ``fraction``."""
    return key_position(key, salt) < fraction


def hash_key(key: str, salt: str) -> str:
    """What is stored instead of the key: 16 hex digits of the salted sha256 (a pseudonym,
    stable per salt, not reversible without guessing the key)."""
    return _digest(salt, key)[8:16].hex()


class MirrorSampler:
    """Chooses each request for mirroring with probability ``fraction``, independently."""

    def __init__(self, fraction: float, seed: int | None = None) -> None:
        self.fraction = fraction
        self._rng = random.Random(seed)

    def __call__(self) -> bool:
        if self.fraction >= 1.0:
            return True
        if self.fraction <= 0.0:
            return False
        return self._rng.random() < self.fraction
