"""Import one log file: detect its format, parse, check, cap, redact, and account for every
record (imported, or skipped with a reason and where). Plugins add log formats through entry
point group ``calipers.suite_parsers`` (:func:`register_parser`), where the built-ins are
declared too."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from calipers._util.hashing import file_sha256, text_hash
from calipers._util.redact import Redactor
from calipers._util.registry import Plugins, Registry
from calipers.errors import ConfigError, DataError
from calipers.suites._raw import BadRecord, FieldMapping, Raw
from calipers.suites._records import ImportReport, LogRecord, Skip, Source, Turn

__all__ = [
    "DEFAULT_MAX_CHARS",
    "FORMATS",
    "LogFormat",
    "Parser",
    "detect_format",
    "import_file",
    "register",
    "register_parser",
]

LogFormat = Literal["jsonl", "csv", "openai", "otel"]
FORMATS: tuple[LogFormat, ...] = ("jsonl", "csv", "openai", "otel")
DEFAULT_MAX_CHARS = 32_000
OnLong = Literal["truncate", "skip"]

# ``parse(path, report, mapping)``: every record of the file, or a Skip saying why not.
Parser = Callable[[Path, ImportReport, FieldMapping], Iterator[Raw | Skip]]
_parsers: Registry[Parser] = Registry(
    "log format", Plugins("calipers.suite_parsers"), hint=f"Use one of {', '.join(FORMATS)}."
)


def register_parser(name: str, parse: Parser) -> None:
    _parsers.add(name, parse)


def register() -> None:
    """The built-ins (named by calipers' own entry points)."""
    from calipers.suites._formats import parse_csv, parse_jsonl, parse_openai
    from calipers.suites._otel import parse_otel

    for name, parse in zip(
        FORMATS, (parse_jsonl, parse_csv, parse_openai, parse_otel), strict=True
    ):
        register_parser(name, parse)


def detect_format(path: Path) -> LogFormat:
    """By extension, then by the first record: ``resourceSpans`` is OTel, ``messages`` (at the
    top, or under ``request``/``body``) is an OpenAI chat log, anything else JSON Lines."""
    if path.suffix.lower() in {".csv", ".tsv"}:
        return "csv"
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16).decode("utf-8", errors="replace")
    except OSError as e:
        raise DataError(f"Cannot read log file {path}: {e.strerror or e}.") from None
    if '"resourceSpans"' in head or '"resource_spans"' in head:
        return "otel"
    for line in head.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, list) and obj:
            obj = obj[0]
        if isinstance(obj, dict):
            inner = obj.get("request", obj.get("body", obj))
            if (
                isinstance(inner, dict)
                and isinstance(inner.get("messages"), list)
                and ("response" in obj or "request" in obj or "body" in obj)
            ):
                return "openai"
            return "jsonl"
    return "jsonl"


def _turns(raw: Raw) -> tuple[list[Turn], str | None, bool]:
    """Turns up to the last user message (the query), the logged answer to it, and whether
    turns after the query other than one answer were left out (tool calls, retries)."""
    msgs = [(r, c) for r, c in raw.messages if c.strip() or r == "user"]
    last_user = max((i for i, (r, _c) in enumerate(msgs) if r == "user"), default=None)
    if last_user is None:
        raise BadRecord("no user message")
    if not msgs[last_user][1].strip():
        raise BadRecord("empty user message")
    answer, after = raw.answer, msgs[last_user + 1 :]
    if after and answer is None:
        answer = next((c for r, c in reversed(after) if r == "assistant"), None)
    dropped = len(after) > 1 or any(r != "assistant" for r, _c in after)
    turns = [Turn.model_validate({"role": r, "content": c}) for r, c in msgs[: last_user + 1]]
    return turns, answer, dropped


def _cap(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[:limit], True


def _record(
    raw: Raw,
    sha: str,
    file: str,
    report: ImportReport,
    redactor: Redactor,
    max_chars: int,
    on_long: OnLong,
) -> tuple[LogRecord, bool]:
    turns, answer, dropped = _turns(raw)
    texts: list[str | None] = [*(t.content for t in turns), answer]
    if on_long == "skip" and any(t is not None and len(t) > max_chars for t in texts):
        raise BadRecord(f"message longer than {max_chars:,} characters")
    capped = [_cap(t, max_chars) for t in texts]
    counts: dict[str, int] = {}

    def clean(text: str | None) -> str | None:
        if text is None:
            return None
        out, c = redactor.redact(text)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        return out

    new_turns = tuple(
        Turn(role=t.role, content=clean(c) or "")
        for t, (c, _x) in zip(turns, capped[:-1], strict=True)
    )
    record_id = clean(raw.record_id)
    truncated = any(x for _c, x in capped)
    if truncated:
        report.truncated(raw.where)
    report.redacted(counts, raw.where)
    return LogRecord(
        id="r" + text_hash(f"{sha}\x00{raw.where}", length=12),
        turns=new_turns,
        answer=clean(capped[-1][0]),
        accepted=raw.accepted,
        truncated=truncated,
        source=Source(file=file, sha256=sha, line=raw.line, where=raw.where, record_id=record_id),
    ), dropped


def import_file(
    path: str | Path,
    *,
    fmt: LogFormat | str | None = None,
    mapping: FieldMapping | None = None,
    redactor: Redactor | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    on_long: OnLong = "truncate",
) -> tuple[list[LogRecord], ImportReport]:
    """Parse and redact one log file. Every record read is either returned or counted in the
    report's ``skipped`` with its reason and location; the original text of a redacted value
    is not kept anywhere."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"Log file {p} does not exist.")
    if max_chars < 1:
        raise ConfigError(f"--max-chars must be positive, got {max_chars}.")
    fmt = fmt or detect_format(p)
    parse = _parsers.get(fmt)
    sha = file_sha256(p)
    report = ImportReport(file=str(p), sha256=sha, format=fmt)
    redactor = redactor or Redactor.create()
    records: list[LogRecord] = []
    n_dropped = 0
    for item in parse(p, report, mapping or FieldMapping()):
        report.n_read += 1
        if isinstance(item, Skip):
            report.skip(item.reason, item.where)
            continue
        try:
            rec, dropped = _record(item, sha, str(p), report, redactor, max_chars, on_long)
        except BadRecord as e:
            report.skip(str(e), item.where)
            continue
        records.append(rec)
        n_dropped += dropped
    report.n_imported = len(records)
    if n_dropped:
        report.notes.append(
            f"{n_dropped} record(s) had turns after the last user message "
            "(tool calls, several replies): the last assistant reply was kept "
            "as the logged answer, the other turns were left out."
        )
    if report.n_fallback_decoded:
        report.notes.append(
            f"{report.n_fallback_decoded} line(s) were not UTF-8 and were "
            "decoded as cp1252 (or latin-1)."
        )
    return records, report
