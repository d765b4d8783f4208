"""Where the tests find the benchmark data, and what happens when it is missing.

The data is read from ``$CALIPERS_DATA`` (read here, at import, before the isolation fixture
clears it for the test itself), else ``../shared/data`` beside the repository. It is never a
machine path written into a test.

A test that needs a file says so with ``@needs_data("gsm8k/test.jsonl")`` (or as a module's
``pytestmark``). Without the file the test is skipped on a developer's machine, but under CI
(``CI=true``) it fails: a CI run that silently skipped the benchmark tests would be green for the
wrong reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["DATA", "REPO", "in_ci", "missing", "needs_data", "require"]

REPO = Path(__file__).resolve().parents[1]


def _data_root() -> Path:
    for var in ("CALIPERS_DATA", "CALIPERS_TEST_DATA"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser().resolve()
    return REPO.parent / "shared" / "data"


DATA = _data_root()


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def missing(*paths: str) -> list[str]:
    """The given paths (relative to DATA) that are not there."""
    return [p for p in paths if not (DATA / p).exists()]


def needs_data(*paths: str) -> pytest.MarkDecorator:
    """Mark a test (or a module, as ``pytestmark``) as reading these files under DATA; the
    check itself runs in ``tests/conftest.py`` before each test."""
    return pytest.mark.needs_data(*paths)


def require(*paths: str) -> None:
    """Skip the calling test without these files (fail under CI)."""
    absent = missing(*paths)
    if not absent:
        return
    why = (
        f"benchmark data not found: {', '.join(absent)} under {DATA} "
        "(set CALIPERS_DATA to the folder that holds it)"
    )
    if in_ci():
        pytest.fail(f"{why}; CI must run the tests that read it", pytrace=False)
    pytest.skip(why)
