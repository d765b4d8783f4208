"""The store and the reports hold every prompt and response; sandboxed programs run on the
same machine as another user (``nobody``). Both are created readable by their owner only,
so a sandboxed program cannot read them even where it can reach their folder."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import calipers
from calipers.sandbox import detect_isolation, run_python
from calipers.store import Store

REPO = Path(calipers.__file__).resolve().parents[2]
needs_user = pytest.mark.skipif(
    "unprivileged-user" not in detect_isolation().layers(False),
    reason="the sandbox does not run programs as another user",
)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder anyone may enter (0755) outside /tmp, which the sandbox replaces by its own."""
    d = Path(tempfile.mkdtemp(prefix=".calipers-test-private-", dir=REPO))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in sorted(d.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        d.rmdir()


def _reads(path: Path) -> str:
    r = run_python(f"print(len(open({str(path)!r}, 'rb').read()))\n", timeout_s=5)
    return "read" if r.passed else ("denied" if "PermissionError" in r.stderr else r.stderr)


def test_a_new_store_and_its_wal_are_private(open_folder: Path) -> None:
    db = open_folder / "results.db"
    with Store.open(str(db)):  # open, and migrated: the WAL and its index exist too
        files = sorted(p.name for p in open_folder.iterdir())
        assert files == ["results.db", "results.db-shm", "results.db-wal"]
        assert {p.name: mode(p) for p in open_folder.iterdir()} == {f: 0o600 for f in files}


def test_the_default_home_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIPERS_HOME", str(tmp_path / "home"))
    with Store.open():
        pass
    assert mode(tmp_path / "home") == 0o700 and mode(tmp_path / "home" / "calipers.db") == 0o600


@pytest.fixture
def reachable(open_folder: Path) -> Path:
    """``open_folder`` where a sandboxed program can read a public file in it, so that only
    file modes protect what is there. A checkout under /tmp (which the sandbox replaces) or
    under a folder others cannot enter cannot show it: skipped, saying why."""
    control = open_folder / "public.txt"
    control.write_text("x")
    control.chmod(0o644)
    got = _reads(control)
    if got != "read":
        pytest.skip(
            f"a sandboxed program cannot reach {open_folder} (a checkout under a "
            f"folder the sandbox masks or others cannot enter): {got.strip()[-120:]}"
        )
    return open_folder


@needs_user
def test_a_sandboxed_program_cannot_read_the_store(reachable: Path) -> None:
    db = reachable / "calipers.db"
    with Store.open(str(db)):
        pass
    assert _reads(db) == "denied"


@needs_user
def test_a_sandboxed_program_cannot_read_a_report(reachable: Path) -> None:
    from calipers.reports import write_report
    from tests.reports.test_reports import make_run, make_samples

    html, md = write_report(make_run(), make_samples(), reachable / "out")
    os.chmod(reachable / "out", 0o755)  # even in a folder anyone may enter
    assert (mode(html), mode(md)) == (0o600, 0o600)
    assert (_reads(html), _reads(md)) == ("denied", "denied")
