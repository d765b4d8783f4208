"""What an importer produces: conversations (after redaction) and an account of what it read.

A :class:`LogRecord` is one production request: its turns up to and including the user turn
that is the query, the logged answer to that query (if any), whether the user accepted it, and
where it came from. An :class:`ImportReport` accounts for every record read: imported, or
skipped with a reason and a location, so that nothing is dropped silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_LISTED", "ImportReport", "LogRecord", "Skip", "Source", "Turn"]

MAX_LISTED = 50  # locations listed per reason; the counts are always complete

Role = Literal["system", "user", "assistant", "tool"]


class Turn(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


class Source(BaseModel):
    """The log record an item came from: file, its sha256, line, and the record's own id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    sha256: str
    line: int | None = None
    where: str | None = None  # e.g. "span 3 of trace 4bf9..." where a line says too little
    record_id: str | None = None


class LogRecord(BaseModel):
    """One production request, redacted. ``turns`` ends with the user turn that is the query;
    ``answer`` is the logged reply to it; ``accepted`` whether the user accepted that reply
    (``None``: the log does not say)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    turns: tuple[Turn, ...] = Field(min_length=1)
    answer: str | None = None
    accepted: bool | None = None
    source: Source
    truncated: bool = False

    @property
    def query(self) -> str:
        return self.turns[-1].content

    @property
    def user_text(self) -> str:
        """The user turns joined: what dedupe and clustering look at."""
        return "\n".join(t.content for t in self.turns if t.role == "user")

    @property
    def n_user_turns(self) -> int:
        return sum(t.role == "user" for t in self.turns)


class Skip(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    where: str  # "line 12", "span 3"


class ImportReport(BaseModel):
    """Everything an import did to one file. ``n_read == n_imported + sum(skipped.values())``;
    ``skips``, ``truncated_at`` and ``fallback_lines`` list the first :data:`MAX_LISTED`
    locations; the counts are complete. Redaction counts never include the redacted values."""

    model_config = ConfigDict(extra="forbid")

    file: str
    sha256: str
    format: str
    imported_at: str | None = None
    n_read: int = 0
    n_imported: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    skips: list[Skip] = Field(default_factory=list)
    n_truncated: int = 0
    truncated_at: list[str] = Field(default_factory=list)
    n_fallback_decoded: int = 0
    fallback_lines: list[int] = Field(default_factory=list)
    redactions: dict[str, int] = Field(default_factory=dict)
    n_redacted_records: int = 0
    redacted_at: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if sum(1 for s in self.skips if s.reason == reason) < MAX_LISTED:
            self.skips.append(Skip(reason=reason, where=where))

    def truncated(self, where: str) -> None:
        self.n_truncated += 1
        if len(self.truncated_at) < MAX_LISTED:
            self.truncated_at.append(where)

    def decoded_with_fallback(self, line: int) -> None:
        self.n_fallback_decoded += 1
        if len(self.fallback_lines) < MAX_LISTED:
            self.fallback_lines.append(line)

    def redacted(self, counts: dict[str, int], where: str) -> None:
        if not counts:
            return
        for k, v in counts.items():
            self.redactions[k] = self.redactions.get(k, 0) + v
        self.n_redacted_records += 1
        if len(self.redacted_at) < MAX_LISTED:
            self.redacted_at.append(where)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())
