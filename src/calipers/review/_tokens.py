"""Invite tokens: each person's link carries ``KEY.SECRET``; the store keeps ``KEY`` (to find
the person) and an argon2 hash of the whole token, never the token itself."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

__all__ = ["IssuedToken", "check_token", "issue_token", "token_key"]

_SHAPE = re.compile(r"^([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{32,})$")
_HASHER = PasswordHasher()  # argon2id with the library's (RFC 9106 low-memory) parameters


@dataclass(frozen=True)
class IssuedToken:
    """A new token: give ``text`` to the person once; store ``key`` and ``hash``."""

    text: str
    key: str
    hash: str

    def __repr__(self) -> str:  # never in a log or a traceback
        return f"IssuedToken(key={self.key!r}, text=<hidden>)"


def issue_token() -> IssuedToken:
    key = secrets.token_urlsafe(9)  # 12 characters, public: finds the rater
    text = f"{key}.{secrets.token_urlsafe(32)}"  # 256 random bits behind it
    return IssuedToken(text=text, key=key, hash=_HASHER.hash(text))


def token_key(text: str) -> str | None:
    """The public part of a token, or ``None`` if ``text`` is not shaped like one."""
    m = _SHAPE.match(text)
    return m.group(1) if m else None


def check_token(text: str, token_hash: str) -> bool:
    """Whether ``text`` is the token hashed as ``token_hash`` (constant time in argon2)."""
    try:
        return _HASHER.verify(token_hash, text)
    except (VerificationError, InvalidHashError):
        return False
