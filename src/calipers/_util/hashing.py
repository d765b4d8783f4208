"""Stable content hashes for texts, JSON-able values and files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "file_sha256", "json_hash", "text_hash"]


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def text_hash(text: str, *, length: int = 16) -> str:
    """Hex sha256 of ``text`` (UTF-8), truncated to ``length`` characters."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def json_hash(value: Any, *, length: int = 16) -> str:
    """Hash of the canonical JSON of ``value``."""
    return text_hash(canonical_json(value), length=length)


def file_sha256(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """Full hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
