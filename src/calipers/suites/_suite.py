"""Suites are files: versioned, immutable, content-hashed.

Layout under ``$CALIPERS_HOME/suites`` (``./.calipers/suites`` without ``CALIPERS_HOME``)::

    <name>/pool/<sha16>.jsonl        redacted records of one imported file
    <name>/pool/<sha16>.report.json  what that import did (counts, skips, redactions)
    <name>/v<N>/items.jsonl          the suite's items
    <name>/v<N>/manifest.json        hash, sources, dedupe/cluster statistics, size rationale

A version is written to a temporary folder and renamed into place, never changed afterwards;
building the same content again gives the same hash and no new version.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calipers._util.hashing import canonical_json, text_hash
from calipers._util.home import calipers_home, make_folder
from calipers.errors import ConfigError, DataError
from calipers.suites._records import ImportReport, LogRecord, Source, Turn

__all__ = [
    "ClusterInfo",
    "ClusterRef",
    "Manifest",
    "SizeRationale",
    "SuiteItem",
    "add_to_pool",
    "check_name",
    "content_hash",
    "json_safe",
    "list_suites",
    "load_suite",
    "read_pool",
    "save_version",
    "suite_dir",
    "suites_home",
    "versions",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class ClusterRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    name: str


class SuiteItem(BaseModel):
    """One suite item: the conversation up to its query, an optional reference (where it came
    from), the log record it came from, its cluster, and how many traffic records it stands
    for (itself and its exact and near duplicates)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    turns: tuple[Turn, ...] = Field(min_length=1)
    reference: str | None = None
    reference_source: Literal["logged-accepted", "logged", "annotation"] | None = None
    source: Source
    cluster: ClusterRef
    duplicates: int = Field(1, ge=1)
    truncated: bool = False

    @property
    def query(self) -> str:
        return self.turns[-1].content


class ClusterInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    name: str
    traffic: int  # records, duplicates included
    unique: int  # after dedupe
    in_suite: int


class SizeRationale(BaseModel):
    """Why the suite has the size it has. ``too_small`` flags a pool that cannot reach the
    size ``calipers plan`` asked for; the build says so before any model is called."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["all", "size", "plan"]
    requested: int | None = None
    delta: float | None = None
    baseline_acc: float | None = None
    correlation: float | None = None
    alpha: float | None = None
    power: float | None = None
    available: int
    chosen: int
    too_small: bool = False
    notes: list[str] = Field(default_factory=list)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    version: int
    content_hash: str
    created_at: str
    n_items: int
    sources: list[dict[str, str]]
    imports: list[dict[str, Any]]
    dedupe: dict[str, Any]
    clustering: dict[str, Any]
    clusters: list[ClusterInfo]
    seed: int
    floor: int
    size: SizeRationale
    references: dict[str, Any]
    profile: dict[str, Any]
    calipers_version: str


def suites_home() -> Path:
    return calipers_home() / "suites"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"Bad suite name {name!r}.",
            hint="Use letters, digits, '_', '-' and '.', up to 64 characters.",
        )
    return name


def suite_dir(name: str) -> Path:
    return suites_home() / check_name(name)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _jsonl(rows: list[BaseModel]) -> str:
    return "".join(r.model_dump_json() + "\n" for r in rows)


def add_to_pool(
    name: str, records: list[LogRecord], report: ImportReport, *, replace: bool = False
) -> Path:
    """Store an import's redacted records and its report; the same file (by sha256) is
    imported once unless ``replace``."""
    pool = suite_dir(name) / "pool"
    make_folder(pool, f"the pool of suite {name!r}", private=True)
    stem = report.sha256[:16]
    target = pool / f"{stem}.jsonl"
    if target.exists() and not replace:
        raise ConfigError(
            f"{report.file} (sha256 {stem}...) is already in suite {name!r}.",
            hint="Use --replace to import it again with the options given now.",
        )
    _atomic_write(target, _jsonl(list(records)))
    _atomic_write(pool / f"{stem}.report.json", report.model_dump_json(indent=2))
    return target


def read_pool(name: str) -> tuple[list[LogRecord], list[ImportReport]]:
    """Every imported record, in import order, with the import reports."""
    pool = suite_dir(name) / "pool"
    reports = (
        [
            ImportReport.model_validate_json(p.read_text(encoding="utf-8"))
            for p in sorted(pool.glob("*.report.json"))
        ]
        if pool.is_dir()
        else []
    )
    reports.sort(key=lambda r: (r.imported_at or "", r.sha256))
    records: list[LogRecord] = []
    for r in reports:
        path = pool / f"{r.sha256[:16]}.jsonl"
        records.extend(
            LogRecord.model_validate_json(line)
            for line in path.read_text(encoding="utf-8").splitlines()
            if line
        )
    return records, reports


def versions(name: str) -> list[int]:
    d = suite_dir(name)
    if not d.is_dir():
        return []
    return sorted(
        int(p.name[1:]) for p in d.iterdir() if p.is_dir() and re.fullmatch(r"v\d+", p.name)
    )


def content_hash(items: list[SuiteItem]) -> str:
    """sha256 of the canonical JSON of the items, in id order. The path a log was imported
    from is left out (its sha256 identifies it), so moving a file changes nothing."""
    rows = [
        i.model_dump(mode="json", exclude={"source": {"file"}})
        for i in sorted(items, key=lambda i: i.id)
    ]
    return text_hash(canonical_json(rows), length=64)


def load_suite(name: str, version: int | None = None) -> tuple[Manifest, list[SuiteItem]]:
    have = versions(name)
    if not have:
        known = ", ".join(s for s, _v, _p in list_suites()) or "(none)"
        raise DataError(
            f"No built suite {name!r} in {suites_home()}.",
            hint=f"Build it with `calipers suite build {name}`. Suites: {known}.",
        )
    v = have[-1] if version is None else version
    if v not in have:
        raise DataError(
            f"Suite {name!r} has no version v{v}.",
            hint=f"Versions: {', '.join(f'v{x}' for x in have)}.",
        )
    folder = suite_dir(name) / f"v{v}"
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_text("utf-8"))
    items = [
        SuiteItem.model_validate_json(line)
        for line in (folder / "items.jsonl").read_text("utf-8").splitlines()
        if line
    ]
    if content_hash(items) != manifest.content_hash:
        raise DataError(
            f"Suite {name} v{v} was changed after it was built: its items no "
            "longer match the manifest's content hash.",
            hint="Versions are immutable; build a new one with `calipers suite build`.",
        )
    return manifest, items


def json_safe(value: Any) -> Any:
    """NaN and infinities (JSON has neither) as ``null``, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def save_version(
    name: str, items: list[SuiteItem], fields: dict[str, Any]
) -> tuple[Manifest, bool]:
    """Write a new version, or return the latest one unchanged if its items hash the same."""
    digest = content_hash(items)
    have = versions(name)
    if have:
        latest, _items = load_suite(name, have[-1])
        if latest.content_hash == digest:
            return latest, True
    v = (have[-1] if have else 0) + 1
    manifest = Manifest(name=name, version=v, content_hash=digest, n_items=len(items), **fields)
    d = suite_dir(name)
    tmp = make_folder(d, f"the folder of suite {name!r}", private=True) / f".v{v}.tmp-{os.getpid()}"
    tmp.mkdir()
    try:
        (tmp / "items.jsonl").write_text(_jsonl(list(items)), encoding="utf-8")
        doc = json_safe(manifest.model_dump(mode="json"))
        (tmp / "manifest.json").write_text(
            json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        os.rename(tmp, d / f"v{v}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest, False


def list_suites() -> list[tuple[str, list[int], int]]:
    """``(name, versions, records in the pool)`` for every suite folder."""
    home = suites_home()
    if not home.is_dir():
        return []
    out = []
    for d in sorted(p for p in home.iterdir() if p.is_dir() and _NAME.match(p.name)):
        n_pool = (
            sum(
                1
                for f in (d / "pool").glob("*.jsonl")
                for line in f.read_text("utf-8").splitlines()
                if line
            )
            if (d / "pool").is_dir()
            else 0
        )
        out.append((d.name, versions(d.name), n_pool))
    return out
