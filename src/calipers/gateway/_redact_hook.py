"""Redaction of what the gateway logs, with the redactor suites use (``calipers._util.redact``).

Two strengths: :func:`make_redactor` with ``personal=True`` removes personal data (e-mail,
phone, IBAN and card numbers) and secrets; with ``personal=False`` only secrets (API keys, bearer
tokens, ``password=...``). Secrets are always removed: the gateway never stores a key.

The rules are the ones suites apply to imported production logs (``calipers._util.redact``
``Redactor``); if that cannot be imported, a minimal built-in set below stands in (same
placeholders, fewer patterns).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

__all__ = ["SECRET_FIELDS", "make_redactor", "redact_json", "request_secrets", "with_secrets"]

Redact = Callable[[str], str]
_SHORTEST = 6
_CACHED_UP_TO = 2000

SECRET_FIELDS = frozenset(
    {"api_key", "apikey", "api-key", "authorization", "password", "secret", "access_token"}
)
"""Body fields whose value is replaced by ``[SECRET]`` whatever it looks like."""

_FALLBACK_SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("API_KEY", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}")),
    ("API_KEY", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("TOKEN", re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}")),
    ("SECRET", re.compile(r"(?i)(\b(?:api_key|apikey|token|secret|password)=)[^\s\"',;]{8,}")),
)
_FALLBACK_PERSONAL: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("EMAIL", re.compile(r"\b[\w.%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")),
    ("PHONE", re.compile(r"(?<![\w+])\+\d[\d\s.\-]{7,16}\d(?!\w)")),
)


def _fallback(personal: bool) -> Redact:
    rules = _FALLBACK_SECRETS + (_FALLBACK_PERSONAL if personal else ())

    def redact(text: str) -> str:
        for kind, rx in rules:  # a rule's group 1, if any, is a prefix that stays
            text = rx.sub(rf"\1[{kind}]" if rx.groups else f"[{kind}]", text)
        return text

    return redact


def make_redactor(*, personal: bool = True) -> Redact:
    """A ``text -> text`` function removing secrets, and personal data when ``personal``.

    Strings shorter than 6 characters are returned as they are (no rule can match one: the
    shortest, an e-mail address, needs 6). Results for strings up to 2,000 characters are
    cached (4,096 of them): system prompts and conversation histories repeat from request to
    request, and redaction is most of the cost of a log row.
    """
    try:
        from calipers._util.redact import RedactConfig, Redactor
    except ImportError:
        rules = _fallback(personal)
    else:
        off = [] if personal else ["EMAIL", "IBAN", "CARD", "PHONE"]
        redactor = Redactor.create(RedactConfig(disable=off))

        def rules(text: str) -> str:
            return redactor.redact(text)[0]

    cached = functools.lru_cache(maxsize=4096)(rules)

    def redact(text: str) -> str:
        if len(text) < _SHORTEST:
            return text
        return cached(text) if len(text) <= _CACHED_UP_TO else rules(text)

    return redact


def redact_json(value: Any, redact: Redact) -> Any:
    """``value`` with every string redacted and every :data:`SECRET_FIELDS` value replaced."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {
            k: "[SECRET]" if str(k).lower() in SECRET_FIELDS else redact_json(v, redact)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_json(v, redact) for v in value]
    return value


_KEY_HEADERS = (b"authorization", b"x-api-key", b"api-key", b"proxy-authorization")


def request_secrets(headers: list[tuple[bytes, bytes]], *keys: str | None) -> tuple[str, ...]:
    """The keys a request carried (``Authorization`` without its scheme, ``X-Api-Key``,
    ``Api-Key``) and the gateway's own upstream ``keys``: what :func:`with_secrets` removes
    pieces of."""
    out = [k for k in keys if k]
    for name, value in headers:
        if name in _KEY_HEADERS:
            text = value.decode("latin-1").strip()
            scheme, _, rest = text.partition(" ")
            out.append(rest.strip() if rest and scheme.isalpha() else text)
    return tuple(out)


def with_secrets(redact: Redact, secrets: tuple[str, ...]) -> Redact:
    """``redact`` after removing every piece of 8 characters or more of ``secrets``
    (``calipers._util.redact.fragment_redactor``): a key the model echoes in part is not
    stored."""
    if not secrets:
        return redact
    from calipers._util.redact import fragment_redactor

    strip = fragment_redactor(secrets)
    return lambda text: redact(strip(text))
