"""A calipers home, store path or output folder that cannot be a folder: one sentence that
names the path and what is in the way, exit 2, never an internal error."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import ConfigError


def invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, " ".join(res.stderr.split())  # unwrap the console's line breaks


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    p = tmp_path / "afile"
    p.write_text("not a folder", encoding="utf-8")
    return p


@pytest.mark.parametrize("below", ["", "sub"])
def test_calipers_home_that_is_or_is_under_a_file(
    a_file: Path, below: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = a_file / below if below else a_file
    monkeypatch.setenv("CALIPERS_HOME", str(home))
    code, err = invoke("runs")
    assert code == 2
    assert err.startswith(
        f"Error: Cannot use {home} as the store's folder: {a_file} is a file, not a folder."
    )
    assert f"CALIPERS_HOME={home}: point it at a folder" in err
    assert "Internal error" not in err


def test_calipers_home_without_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    monkeypatch.setenv("CALIPERS_HOME", str(locked / "home"))
    real = os.access  # tests may run as root, who may write anywhere: fake the refusal
    monkeypatch.setattr(
        "calipers._util.home.os.access",
        lambda p, mode: False if Path(p) == locked else real(p, mode),
    )
    code, err = invoke("runs")
    assert code == 2
    assert err.startswith(
        f"Error: Cannot use {locked / 'home'} as the store's folder: there is "
        f"no permission to create folders in {locked}."
    )


def test_mkdir_failures_become_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers._util.home import make_folder

    target = tmp_path / "out"

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(ConfigError) as info:
        make_folder(target, "the report folder")
    assert info.value.message == (
        f"Cannot use {target} as the report folder: the file system is read-only."
    )
    assert info.value.hint == "Choose another path."


def test_store_path_under_a_file(a_file: Path) -> None:
    code, err = invoke("--store", str(a_file / "x.db"), "runs")
    assert code == 2
    assert err.startswith(
        f"Error: Cannot open the store sqlite:///{a_file / 'x.db'}: {a_file} "
        "is a file, not a folder."
    )


def test_store_path_that_is_a_folder(tmp_path: Path) -> None:
    code, err = invoke("--store", str(tmp_path), "runs")
    assert code == 2
    assert f"{tmp_path} is a folder, not a database file." in err


def test_suite_import_with_home_a_file(
    a_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"id": "1", "question": "hi", "answer": "hello"}\n', encoding="utf-8")
    monkeypatch.setenv("CALIPERS_HOME", str(a_file))
    code, err = invoke("suite", "import", str(log), "--name", "prod")
    assert code == 2
    assert err.startswith(
        f"Error: Cannot use {a_file / 'suites' / 'prod' / 'pool'} as the pool "
        f"of suite 'prod': {a_file} is a file, not a folder."
    )


def test_report_out_under_a_file(a_file: Path, tmp_path: Path) -> None:
    assert (
        invoke("run", "-m", "fake:echo", "-t", "dyn_arithmetic", "-n", "2", "--no-report")[0] == 0
    )
    code, err = invoke("report", "latest", "--out", str(a_file / "reports"))
    assert code == 2
    assert err.startswith(
        f"Error: Cannot use {a_file / 'reports'} as the report folder: "
        f"{a_file} is a file, not a folder."
    )


def test_home_is_absolute_and_expands_the_user(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from calipers._util.home import calipers_home

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CALIPERS_HOME", "~/cal")
    assert calipers_home() == tmp_path / "cal"
    monkeypatch.delenv("CALIPERS_HOME")
    assert calipers_home() == Path.cwd() / ".calipers"


def test_a_private_folder_makes_its_missing_parents_private_too(tmp_path: Path) -> None:
    """mkdir(parents=True, mode=0o700) gives only the last folder that mode: a calipers home
    first created as the parent of its reports or caches must not be world-readable."""
    import stat

    from calipers._util.home import make_folder

    home = tmp_path / "new-home"
    make_folder(home / "cache" / "templates", "the template cache", private=True)
    modes = {p: stat.S_IMODE((home / p).stat().st_mode) for p in (".", "cache", "cache/templates")}
    assert modes == {".": 0o700, "cache": 0o700, "cache/templates": 0o700}
