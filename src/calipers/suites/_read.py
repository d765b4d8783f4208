"""Reading log files line by line, whatever their encoding.

Each line is decoded on its own as UTF-8; a line that is not valid UTF-8 is decoded as cp1252
(Windows) and, failing that, latin-1 (which decodes any byte), and counted, so a file of mixed
encodings imports with a note instead of failing or turning characters into garbage silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from calipers.errors import DataError
from calipers.suites._records import ImportReport

__all__ = ["decode_line", "read_lines"]


def decode_line(raw: bytes) -> tuple[str, bool]:
    """The text of one line and whether a fallback encoding was needed."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), True
    except UnicodeDecodeError:
        return raw.decode("latin-1"), True


def read_lines(path: Path, report: ImportReport) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` for every line (without its line break), BOM removed."""
    try:
        f = path.open("rb")
    except OSError as e:
        raise DataError(f"Cannot read log file {path}: {e.strerror or e}.") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            text, fallback = decode_line(raw.rstrip(b"\r\n"))
            if fallback:
                report.decoded_with_fallback(lineno)
            yield lineno, text
