"""Redaction against a corpus of real-world formats from several countries: phones, IBANs,
e-mails and cards (with Luhn), and look-alikes that must stay (dates, order numbers, versions,
prices). Each positive must vanish whole: nothing of it may be left in the output."""

from __future__ import annotations

import re

import pytest

from calipers._util.pii import iban_valid
from calipers._util.redact import Redactor, fragment_redactor

PHONES = [
    ("GB", "+44 7700 900111"),
    ("GB", "07700 900111"),
    ("GB", "+44 (0)20 7946 0958"),
    ("GB", "020 7946 0958"),
    ("US", "+1 415-555-2671"),
    ("US", "(415) 555-2671"),
    ("US", "415.555.2671"),
    ("DE", "+49 30 12345678"),
    ("DE", "030 12345678"),
    ("DE", "+49 (0)171 1234567"),
    ("FR", "+33 1 23 45 67 89"),
    ("FR", "01 23 45 67 89"),
    ("FR", "06 12 34 56 78"),
    ("IN", "+91 98765 43210"),
    ("IN", "98765 43210"),
    ("BR", "+55 11 91234-5678"),
    ("BR", "(11) 91234-5678"),
    ("JP", "+81 3-1234-5678"),
    ("JP", "03-1234-5678"),
    ("JP", "090-1234-5678"),
    ("ES", "+34 612 34 56 78"),
    ("IT", "+39 06 6982 1234"),
    ("NL", "+31 20 123 4567"),
    ("AU", "+61 2 9876 5432"),
]
# Published example IBANs (national banks' and the ECBS registry's), grouped as printed.
IBANS = [
    "GB82 WEST 1234 5698 7654 32",
    "DE89 3704 0044 0532 0130 00",
    "FR14 2004 1010 0505 0001 3M02 606",
    "ES91 2100 0418 4502 0005 1332",
    "IT60 X054 2811 1010 0000 0123 456",
    "NL91 ABNA 0417 1643 00",
    "BE68 5390 0754 7034",
    "CH93 0076 2011 6238 5295 7",
    "AT61 1904 3002 3457 3201",
    "DE89370400440532013000",
]
EMAILS = [
    "jane.doe@example.co.uk",
    "j.müller+test@beispiel.de".replace("ü", "u"),
    "taro_yamada@example.jp",
    "joao.silva@exemplo.com.br",
]
CARDS = ["4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005", "6011111111111117"]
KEEP = [
    "2024-01-15",
    "15/01/2024",
    "01.02.2023",
    "12:30:45",
    "order 20240115001",
    "ORD-4815162342",
    "invoice #123456",
    "order #48151623",
    "version 1.2.3.4",
    "ISBN 978-3-16-148410-0",
    "3.14159265",
    "total 1234567 units",
    "id 00012345",
    "2023-12-31T23:59:59Z",
    "between 2019 and 2024-05",
    "price 1,234,567.89",
    "4111 1111 1111 1112",  # fails Luhn: not a card
]


def _mod97(iban: str) -> int:
    """Second implementation: ISO 7064 mod 97-10 piece by piece (9 digits at a time)."""
    s = iban.replace(" ", "")
    s = s[4:] + s[:4]
    digits = "".join(str(ord(c) - 55) if c.isalpha() else c for c in s.upper())
    rest = 0
    for i in range(0, len(digits), 7):
        rest = int(str(rest) + digits[i : i + 7]) % 97
    return rest


def _left(original: str, out: str) -> list[str]:
    """Runs of 3+ digits or letters of the original that survive in the output."""
    return [t for t in re.findall(r"[A-Za-z0-9]{3,}", original) if t in out]


@pytest.mark.parametrize(("country", "phone"), PHONES)
def test_phones_of_many_countries_go_whole(country: str, phone: str) -> None:
    text, counts = Redactor.create().redact(f"Call me at {phone} tomorrow.")
    assert text == "Call me at [PHONE] tomorrow." and counts == {"PHONE": 1}, country


@pytest.mark.parametrize("iban", IBANS)
def test_ibans_go_whole_spaces_and_all(iban: str) -> None:
    assert _mod97(iban) == 1 and iban_valid(iban)
    text, counts = Redactor.create().redact(f"Pay to {iban}, thanks.")
    assert text == "Pay to [IBAN], thanks." and counts == {"IBAN": 1}, _left(iban, text)


@pytest.mark.parametrize("value", EMAILS + CARDS)
def test_emails_and_cards(value: str) -> None:
    text, _ = Redactor.create().redact(f"use {value} please")
    assert text in ("use [EMAIL] please", "use [CARD] please")


@pytest.mark.parametrize("text", KEEP)
def test_look_alikes_stay(text: str) -> None:
    out, counts = Redactor.create().redact(f"see {text} here")
    assert out == f"see {text} here" and counts == {}


def test_a_wrong_check_digit_is_not_an_iban() -> None:
    bad = "GB82 WEST 1234 5698 7654 33"
    assert _mod97(bad) != 1 and not iban_valid(bad)
    assert "[IBAN]" not in Redactor.create().redact(f"pay {bad}")[0]


def test_a_mixed_message_keeps_its_words() -> None:
    msg = (
        "Hi, I'm Jane (jane.doe@example.co.uk, +44 7700 900111). Refund order 20240115001 "
        "of 2024-01-15 to DE89 3704 0044 0532 0130 00 or my card 4111 1111 1111 1111."
    )
    out, counts = Redactor.create().redact(msg)
    assert out == (
        "Hi, I'm Jane ([EMAIL], [PHONE]). Refund order 20240115001 of 2024-01-15 "
        "to [IBAN] or my card [CARD]."
    )
    assert counts == {"EMAIL": 1, "PHONE": 1, "IBAN": 1, "CARD": 1}


def test_any_piece_of_a_held_key_is_removed() -> None:
    key = "c9QxV2mLr8TzP4kWn7YbH3sDf6GjA1eU"
    strip = fragment_redactor([key])
    piece = key[5:23]  # 18 characters
    assert strip(f"your key ...{piece}... ok") == "your key ...[API_KEY]... ok"
    assert strip(f"{key[:8]} and {key[-8:]}") == "[API_KEY] and [API_KEY]"
    assert strip(f"short {key[:7]} stays") == f"short {key[:7]} stays"  # under 8: kept
    assert strip("no key here at all") == "no key here at all"
