"""Opening the store: where the file goes, SQLite settings, and clear errors for bad URLs."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from calipers.errors import StoreError
from calipers.store import Store, default_sqlite_path
from calipers.store._engine import BUSY_TIMEOUT_MS, resolve_url


def test_default_is_calipers_home(calipers_home: Path) -> None:
    with Store.open() as store:
        assert store.url == f"sqlite:///{calipers_home / 'calipers.db'}"
    assert (calipers_home / "calipers.db").is_file()


def test_without_home_it_is_dot_calipers_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CALIPERS_HOME")
    monkeypatch.chdir(tmp_path)
    assert default_sqlite_path() == tmp_path / ".calipers" / "calipers.db"
    with Store.open():
        pass
    assert (tmp_path / ".calipers" / "calipers.db").is_file()


def test_a_plain_path_is_a_sqlite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open("results.db") as store:
        assert store.url == f"sqlite:///{tmp_path / 'results.db'}"
        assert repr(store) == f"Store('sqlite:///{tmp_path / 'results.db'}')"


def test_sqlite_settings(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "s.db")) as store, store._engine.connect() as conn:
        names = ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
        found = [conn.exec_driver_sql(f"PRAGMA {name}").scalar() for name in names]
    assert found == ["wal", 1, BUSY_TIMEOUT_MS, 2]  # synchronous=2 is FULL


def test_postgres_urls_mean_psycopg_3() -> None:
    for given in ("postgresql://u:p@h/db", "postgres://u:p@h/db", "postgresql+psycopg://u:p@h/db"):
        assert resolve_url(given).drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:://nope", "Cannot understand the store URL 'sqlite:://nope'."),
        (
            "mysql://u:p@localhost/db",
            "calipers stores results in SQLite or PostgreSQL, not 'mysql'.",
        ),
    ],
)
def test_unusable_urls(url: str, message: str) -> None:
    with pytest.raises(StoreError) as err:
        Store.open(url)
    assert err.value.message == message
    assert err.value.hint and "postgresql+psycopg://" in err.value.hint


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"the folder .*no-such-dir does not exist"):
        Store.open(str(tmp_path / "no-such-dir" / "x.db"))


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError) as err:
        Store.open(str(junk))
    assert err.value.message == f"Cannot open the store sqlite:///{junk}: file is not a database."
    assert err.value.hint and "SQLite database" in err.value.hint


def test_missing_postgres_driver_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail
    with pytest.raises(StoreError) as err:
        Store.open("postgresql+psycopg://calipers:secret@127.0.0.1/x")
    assert err.value.message == (
        "The database driver for postgresql+psycopg://calipers:***@127.0.0.1/x is not "
        "installed (psycopg)."
    )
    assert err.value.hint == "pip install 'calipers[postgres]'"


def test_unreachable_server_is_one_sentence_without_the_password() -> None:
    pytest.importorskip("psycopg")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreError) as err:
        Store.open(f"postgresql://calipers:s3cret@127.0.0.1:{port}/calipers_test")
    msg = err.value.message
    assert msg.startswith(
        f"Cannot open the store postgresql+psycopg://calipers:***@127.0.0.1:{port}/"
    )
    assert "s3cret" not in str(err.value) and "\n" not in msg and msg.endswith(".")
    assert err.value.hint and "reachable" in err.value.hint
    assert isinstance(err.value.__cause__, sa.exc.OperationalError)
