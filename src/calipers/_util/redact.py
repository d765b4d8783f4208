"""Redaction before anything is stored: e-mail addresses, phone numbers, card numbers, API
keys and tokens, plus patterns the user adds. Shared by suites (imported logs) and the
gateway (live traffic), so both redact the same way.

Each match is replaced by its kind in brackets (``[EMAIL]``, ``[PHONE]``, ...); only counts
per kind leave this module, never the matched text. Order matters: keys and tokens first (a
key can contain digit runs), then e-mail, IBANs (whole, spaces included: before the digit
rules, which would take pieces of one), cards (digit runs that pass the Luhn check, so an
ordinary long number is left alone), then phones: libphonenumber's rules for the formats of
many countries (:mod:`calipers._util.pii`), then a pattern for what is left (an
international prefix, or digit groups with separators; dates and plain digit runs are not
phones).

:func:`fragment_redactor` removes what no pattern can know: any piece (8 characters or
more) of a secret the caller holds, such as the key a request was sent with.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from calipers._util.pii import _DATE, iban_spans, phone_spans  # one date rule for both
from calipers._util.yamlloc import load_yaml
from calipers.errors import ConfigError

__all__ = [
    "BUILTIN_KINDS",
    "FRAGMENT_MIN",
    "RedactConfig",
    "Redactor",
    "fragment_redactor",
    "luhn_ok",
]

_KEY_WORDS = r"api[_-]?key|apikey|secret|token|password|passwd|pwd|access[_-]?key|auth"
_KEYS: list[tuple[str, str]] = [
    ("API_KEY", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),  # OpenAI / Anthropic style
    ("API_KEY", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("API_KEY", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    ("API_KEY", r"\bAIza[0-9A-Za-z_\-]{35}"),  # Google
    ("API_KEY", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack
    ("TOKEN", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
]
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=\-]{16,})")
_NEAR_KEY = re.compile(
    rf"(?i)\b((?:{_KEY_WORDS})\b[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?)(?!\[)([^\s\"',;]{{8,}})"
)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")
_CARD = re.compile(r"(?<![\w\-])\d(?:[ \-]?\d){12,18}(?![\w\-])")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.\-]?)?(?:\(\d{1,4}\)[\s.\-]?)?\d{2,4}(?:[\s.\-]\d{2,4}){1,4}"
    r"(?![\w\-])|(?<![\w+])\+\d{8,15}\b"
)

BUILTIN_KINDS = ("API_KEY", "TOKEN", "SECRET", "EMAIL", "IBAN", "CARD", "PHONE")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number passes (and 90% of random numbers fail)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _is_phone(match: str) -> bool:
    digits = re.sub(r"\D", "", match)
    if _DATE.match(match.strip()) or not 7 <= len(digits) <= 15:
        return False
    if match.startswith("+") or "(" in match:
        return len(digits) >= 8
    if len(digits) == 7:  # 555-1234
        return re.fullmatch(r"\d{3}[\-.]\d{4}", match) is not None
    groups = re.split(r"[\s.\-]+", match)
    return len(digits) >= 9 and all(len(g) >= 2 for g in groups) and len(groups) <= 5


class RedactConfig(BaseModel):
    """User additions: ``patterns`` maps a KIND (upper-case word) to a Python regex, replaced
    by ``[KIND]``; ``disable`` turns built-in kinds off. YAML form::

        patterns: {ORDER_ID: "ORD-\\\\d{6}", EMPLOYEE: "EMP\\\\d+"}
        disable: [PHONE]
    """

    model_config = ConfigDict(extra="forbid")

    patterns: dict[str, str] = Field(default_factory=dict)
    disable: list[str] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _check(cls, v: dict[str, str]) -> dict[str, str]:
        for kind, rx in v.items():
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", kind):
                raise ValueError(f"kind {kind!r} must be an upper-case word like ORDER_ID")
            try:
                re.compile(rx)
            except re.error as e:
                raise ValueError(f"pattern for {kind} does not compile: {e}") from None
        return v

    @field_validator("disable")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [k for k in v if k not in BUILTIN_KINDS]
        if bad:
            raise ValueError(f"unknown kind(s) {bad}; built-in kinds: {list(BUILTIN_KINDS)}")
        return v

    @classmethod
    def load(cls, path: str | Path | None, extra: dict[str, str] | None = None) -> RedactConfig:
        """From a YAML file (optional), with ``extra`` patterns (``--redact-pattern``) added."""
        raw: object = {}
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as e:
                raise ConfigError(f"Cannot read redaction config {path}: {e.strerror}.") from None
            raw = load_yaml(text, path) or {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: expected a mapping with `patterns:` and `disable:`.")
        raw = {**raw, "patterns": {**raw.get("patterns", {}), **(extra or {})}}
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            raise ConfigError(
                f"Bad redaction config{f' {path}' if path else ''}: {err['msg']}.",
                hint="Patterns are KIND=REGEX with an upper-case KIND, e.g. ORDER_ID=ORD-\\d{6}.",
            ) from None


Rule = Callable[[str, dict[str, int]], str]


@dataclass(frozen=True)
class Redactor:
    """Applies the rules in order; ``redact`` returns the new text and counts per kind."""

    rules: tuple[tuple[str, Rule], ...]

    @classmethod
    def create(cls, config: RedactConfig | None = None) -> Redactor:
        config = config or RedactConfig()
        off = set(config.disable)
        rules: list[tuple[str, Rule]] = []
        for kind, rx in config.patterns.items():  # user patterns first: they are specific
            rules.append((kind, _simple(kind, re.compile(rx))))
        for kind, rx in _KEYS:
            rules.append((kind, _simple(kind, re.compile(rx))))
        rules.append(("TOKEN", _keep_prefix("TOKEN", _BEARER)))
        rules.append(("SECRET", _keep_prefix("SECRET", _NEAR_KEY)))
        rules.append(("EMAIL", _simple("EMAIL", _EMAIL)))
        rules.append(("IBAN", _found("IBAN", iban_spans)))
        rules.append(("CARD", _checked("CARD", _CARD, _is_card)))
        rules.append(("PHONE", _found("PHONE", phone_spans)))
        rules.append(("PHONE", _checked("PHONE", _PHONE, _is_phone)))
        return cls(tuple((k, r) for k, r in rules if k not in off))

    def redact(self, text: str) -> tuple[str, dict[str, int]]:
        counts: dict[str, int] = {}
        for _kind, rule in self.rules:
            text = rule(text, counts)
        return text, counts


def _bump(counts: dict[str, int], kind: str) -> None:
    counts[kind] = counts.get(kind, 0) + 1


def _simple(kind: str, rx: re.Pattern[str]) -> Rule:
    def rule(text: str, counts: dict[str, int]) -> str:
        def sub(_m: re.Match[str]) -> str:
            _bump(counts, kind)
            return f"[{kind}]"

        return rx.sub(sub, text)

    return rule


def _keep_prefix(kind: str, rx: re.Pattern[str]) -> Rule:
    """Replace group 2 and keep group 1 (``Bearer ``, ``api_key=``) so the text still reads."""

    def rule(text: str, counts: dict[str, int]) -> str:
        def sub(m: re.Match[str]) -> str:
            _bump(counts, kind)
            return f"{m.group(1)}[{kind}]"

        return rx.sub(sub, text)

    return rule


def _checked(kind: str, rx: re.Pattern[str], ok: Callable[[str], bool]) -> Rule:
    def rule(text: str, counts: dict[str, int]) -> str:
        def sub(m: re.Match[str]) -> str:
            if not ok(m.group(0)):
                return m.group(0)
            _bump(counts, kind)
            return f"[{kind}]"

        return rx.sub(sub, text)

    return rule


def _found(kind: str, spans: Callable[[str], Iterable[tuple[int, int]]]) -> Rule:
    """Replace the ``(start, end)`` spans a finder returns (in order, not overlapping)."""

    def rule(text: str, counts: dict[str, int]) -> str:
        out, last = [], 0
        for start, end in spans(text):
            out += [text[last:start], f"[{kind}]"]
            last = end
            _bump(counts, kind)
        return "".join(out) + text[last:] if out else text

    return rule


FRAGMENT_MIN = 8
"""The shortest piece of a secret :func:`fragment_redactor` removes. Shorter pieces of a
random key are too likely to occur in ordinary text by chance; a piece of 8 random
characters almost never does (and is already most of what a brute-force search needs)."""


def fragment_redactor(secrets: Iterable[str], min_len: int = FRAGMENT_MIN) -> Callable[[str], str]:
    """A ``text -> text`` function replacing every run of ``min_len`` or more characters
    that occurs in one of ``secrets`` by ``[API_KEY]``: a key a model echoes back in part is
    still removed. Secrets shorter than ``min_len`` are ignored (nothing to match safely)."""
    keys = tuple(k for k in {s.strip() for s in secrets} if len(k) >= min_len)
    grams = {k[i : i + min_len] for k in keys for i in range(len(k) - min_len + 1)}
    if not grams:
        return lambda text: text

    def redact(text: str) -> str:
        out, last, i = [], 0, 0
        while i <= len(text) - min_len:
            if text[i : i + min_len] not in grams:
                i += 1
                continue
            end = i + min_len  # grow while the run still occurs in some key
            while end < len(text) and any(text[i : end + 1] in k for k in keys):
                end += 1
            out += [text[last:i], "[API_KEY]"]
            last = i = end
        return "".join(out) + text[last:] if out else text

    return redact
