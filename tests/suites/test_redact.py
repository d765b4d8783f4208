"""Redaction: every built-in kind, Luhn-checked cards, no false positives on ordinary numbers,
user patterns, and counts that never carry the redacted values."""

from __future__ import annotations

from pathlib import Path

import pytest

from calipers.errors import ConfigError
from calipers.suites import RedactConfig, Redactor, luhn_ok
from tests.suites._logs import SECRETS


def _luhn_textbook(number: str) -> bool:
    """Second implementation: double every second digit from the right, add the digits of
    the products (12 -> 1 + 2), the total is a multiple of 10."""
    digits = [int(c) for c in number][::-1]
    total = sum(d if i % 2 == 0 else sum(divmod(2 * d, 10)) for i, d in enumerate(digits))
    return total % 10 == 0


@pytest.mark.parametrize(
    "number",
    [
        "4111111111111111",
        "5500000000000004",
        "378282246310005",
        "6011111111111117",
        "4111111111111112",
        "1234567890123456",
        "79927398713",
        "79927398710",
    ],
)
def test_luhn_agrees_with_textbook(number: str) -> None:
    assert luhn_ok(number) == _luhn_textbook(number)


def test_luhn_published_examples() -> None:
    # 79927398713 is the worked example of the Luhn algorithm (ISO/IEC 7812-1 annex).
    assert luhn_ok("79927398713") and not luhn_ok("79927398710")


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        (f"mail {SECRETS['EMAIL']} now", "mail [EMAIL] now", "EMAIL"),
        (f"call {SECRETS['PHONE']}", "call [PHONE]", "PHONE"),
        ("call (555) 123-4567 today", "call [PHONE] today", "PHONE"),
        ("ring 555-1234", "ring [PHONE]", "PHONE"),
        (f"card {SECRETS['CARD']} exp", "card [CARD] exp", "CARD"),
        ("amex 3782-822463-10005.", "amex [CARD].", "CARD"),
        (f"key {SECRETS['API_KEY']}", "key [API_KEY]", "API_KEY"),
        ("gh ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "gh [API_KEY]", "API_KEY"),
        (f"(api_key: {SECRETS['API_KEY']})", "(api_key: [API_KEY])", "API_KEY"),
        ("aws AKIAIOSFODNN7EXAMPLE x", "aws [API_KEY] x", "API_KEY"),
        ("Authorization: Bearer abcDEF123456789.xyz-_", "Authorization: Bearer [TOKEN]", "TOKEN"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz", "jwt [TOKEN]", "TOKEN"),
        ("api_key=9f86d081884c7d659a2f", "api_key=[SECRET]", "SECRET"),
        ("my password is hunter2hunter2", "my password is [SECRET]", "SECRET"),
    ],
)
def test_each_kind_is_replaced_and_counted(text: str, expected: str, kind: str) -> None:
    out, counts = Redactor.create().redact(text)
    assert out == expected
    assert counts == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890123456 shipped",  # 16 digits failing Luhn: an order number, not a card
        "I have 3 apples and 1000000 dollars; pi is 3.14159",
        "on 2024-01-15 at 10:30, version 1.2.3, host 10.0.0.1",
        "ticket 123456789012 and invoice 2024 0042",
        "the password reset link does not work",  # the word alone is not a secret
    ],
)
def test_ordinary_text_and_numbers_are_left_alone(text: str) -> None:
    out, counts = Redactor.create().redact(text)
    assert (out, counts) == (text, {})


def test_user_patterns_and_disabled_kinds() -> None:
    cfg = RedactConfig.load(None, {"ORDER_ID": r"ORD-\d{6}"})
    out, counts = Redactor.create(cfg).redact("ORD-123456 and ORD-654321 from a@b.io")
    assert out == "[ORDER_ID] and [ORDER_ID] from [EMAIL]"
    assert counts == {"ORDER_ID": 2, "EMAIL": 1}
    off = Redactor.create(RedactConfig(disable=["EMAIL"]))
    assert off.redact("a@b.io") == ("a@b.io", {})


def test_yaml_config(tmp_path: Path) -> None:
    f = tmp_path / "redact.yaml"
    f.write_text("patterns:\n  EMPLOYEE: 'EMP\\d{4}'\ndisable: [PHONE]\n")
    r = Redactor.create(RedactConfig.load(f))
    assert r.redact("EMP1234 at +44 20 7946 0958") == (
        "[EMPLOYEE] at +44 20 7946 0958",
        {"EMPLOYEE": 1},
    )


@pytest.mark.parametrize("extra", [{"lower": "x"}, {"BAD": "("}])
def test_bad_patterns_are_config_errors(extra: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        RedactConfig.load(None, extra)


def test_unknown_disabled_kind_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "redact.yaml"
    f.write_text("disable: [NOPE]\n")
    with pytest.raises(ConfigError, match="unknown kind"):
        RedactConfig.load(f)
