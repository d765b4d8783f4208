"""Finding phone numbers and IBANs in free text, for :mod:`calipers._util.redact`.

Phones use Google's libphonenumber rules (the ``phonenumbers`` package): every run of digits
that could be a phone number is offered to its matcher, at leniency ``VALID`` (a number
assigned in that country's numbering plan) for each of :data:`PHONE_REGIONS` in turn, so
national formats of those countries are found (``07700 900111``, ``030 12345678``,
``(11) 91234-5678``, ``03-1234-5678``); a number written with ``+`` and a country code only
has to be a possible length for its country (``+44 7700 900111``, in a range reserved for
fiction, is not "valid" but is certainly a phone number), and so does a national number
written with its trunk ``0`` and separators. Dates, and digits glued to an identifier
(``ORD-4815162342``), are not phones.

IBANs: two letters, two check digits and up to 30 letters or digits, in groups or not, whose
ISO 13616 mod-97 check holds and whose length is the one registered for the country (when
the country is in :data:`IBAN_LENGTHS`). The whole IBAN, spaces included, is one match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["IBAN_LENGTHS", "PHONE_REGIONS", "iban_spans", "iban_valid", "phone_spans"]

PHONE_REGIONS = ("GB", "US", "DE", "FR", "IN", "BR", "JP", "ES", "IT", "NL", "AU")
"""Whose national formats are recognised (in this order); any country's with ``+``."""

_CANDIDATE = re.compile(r"[+(]?\d[\d \t().\-/]{5,22}\d\)?")
_DATE = re.compile(r"^\d{4}[\-./]\d{1,2}[\-./]\d{1,2}$|^\d{1,2}[\-./]\d{1,2}[\-./]\d{2,4}$")
_SEPARATOR = re.compile(r"[\s\-./]")


def _matches(window: str, digits: str) -> list[tuple[int, int]]:
    import phonenumbers as pn

    if digits.startswith("+"):
        found = pn.PhoneNumberMatcher(window, "ZZ", leniency=pn.Leniency.POSSIBLE)
        return [(m.start, m.end) for m in found]
    for region in PHONE_REGIONS:
        spans = [
            (m.start, m.end)
            for m in pn.PhoneNumberMatcher(window, region, leniency=pn.Leniency.VALID)
        ]
        if spans:
            return spans
    if digits.startswith(("0", "(0")) and _SEPARATOR.search(digits):
        for region in PHONE_REGIONS:
            matcher = pn.PhoneNumberMatcher(window, region, leniency=pn.Leniency.POSSIBLE)
            spans = [(m.start, m.end) for m in matcher if m.raw_string.startswith(("0", "(0"))]
            if spans:
                return spans
    return []


def _glued(text: str, start: int) -> bool:
    """Digits that continue an identifier: ``ORD-4815162342``, ``#48151623``, ``A12345678``."""
    before = text[max(0, start - 2) : start]
    if not before:
        return False
    return before[-1].isalnum() or (before[-1] in "-#_" and before[0].isalnum())


def phone_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each phone number in ``text``, in order, not overlapping."""
    last = 0
    for cand in _CANDIDATE.finditer(text):
        digits = cand.group(0)
        if sum(ch.isdigit() for ch in digits) < 7 or _DATE.match(digits.strip()):
            continue
        lo = max(0, cand.start() - 1)
        window = text[lo : cand.end() + 1]
        for a, b in _matches(window, digits):
            start, end = lo + a, lo + b
            if start < last or _DATE.match(text[start:end]) or _glued(text, start):
                continue
            last = end
            yield start, end


IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
"""The registered IBAN length per country (ISO 13616 registry)."""

_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ \-]?[A-Za-z0-9])")
_IBAN_CHAR = re.compile(r"[ \-]?([A-Za-z0-9])")


def iban_valid(iban: str) -> bool:
    """The ISO 13616 check: the first four characters moved to the end, letters as 10-35,
    the number mod 97 is 1 (and the registered length, where known)."""
    s = re.sub(r"[ \-]", "", iban).upper()
    if not 15 <= len(s) <= 34 or not s.isalnum() or IBAN_LENGTHS.get(s[:2], len(s)) != len(s):
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def iban_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each IBAN in ``text`` (separators inside included)."""
    pos = 0
    while (m := _IBAN_START.search(text, pos)) is not None:
        ends = [m.end()]  # ends[k]: the end after k + 4 characters
        while len(ends) < 31 and (c := _IBAN_CHAR.match(text, ends[-1])) is not None:
            ends.append(c.end())
        want = IBAN_LENGTHS.get(m.group(0)[:2].upper())
        lengths = [want] if want is not None else range(len(ends) + 3, 14, -1)
        found = None
        for n in lengths:
            end = ends[n - 4] if 0 <= n - 4 < len(ends) else None
            if end is None or (end < len(text) and text[end].isalnum()):
                continue
            if iban_valid(text[m.start() : end]):
                found = end
                break
        if found is None:
            pos = m.end()
            continue
        yield m.start(), found
        pos = found
