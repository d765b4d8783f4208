"""Where the store lives and how to connect to it: URL resolution, engine set-up, transactions.

SQLite gets WAL (a CLI can read while a run writes), foreign keys, a busy timeout (a second
writer waits instead of failing) and ``synchronous=FULL`` (a committed sample survives a
crash of the process and of the machine). SQLAlchemy, not the ``sqlite3`` module, emits
``BEGIN``, so DDL is transactional and writers can take the write lock up front
(``BEGIN IMMEDIATE``) rather than fail on a lock upgrade.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from calipers._util.home import calipers_home, folder_problem, make_folder
from calipers._util.private import private_file
from calipers.errors import StoreError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "create_engine",
    "default_sqlite_path",
    "display_url",
    "read_transaction",
    "resolve_url",
    "write_transaction",
]

BUSY_TIMEOUT_MS = 30_000
_IMMEDIATE = "calipers_sqlite_immediate"
# One SQLite writer at a time per engine, queued on a lock: threads of one process (a web
# server's pool) then wait their turn instead of polling SQLite's busy handler, whose growing
# sleeps (up to 100 ms each) made the slowest requests wait seconds under 20 writers. Other
# processes still meet the busy timeout.
_WRITERS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()
_WRITERS_GUARD = threading.Lock()


def _writer_lock(engine: Engine) -> threading.Lock | None:
    if engine.dialect.name != "sqlite":
        return None
    with _WRITERS_GUARD:
        lock = _WRITERS.get(engine)
        if lock is None:
            lock = _WRITERS[engine] = threading.Lock()
        return lock


_URL_HINT = (
    "Use a file path, sqlite:///path/to/calipers.db, or "
    "postgresql+psycopg://user:password@host:5432/dbname."
)


def default_sqlite_path() -> Path:
    """``$CALIPERS_HOME/calipers.db``, else ``./.calipers/calipers.db``."""
    return calipers_home() / "calipers.db"


def display_url(url: sa.URL) -> str:
    """The URL with any password masked, safe to print or log."""
    return url.render_as_string(hide_password=True)


def resolve_url(url: str | None) -> sa.URL:
    """Turn what the user gave (nothing, a path, or a URL) into a SQLAlchemy URL.

    ``postgresql://`` and ``postgres://`` mean psycopg 3, the driver calipers ships an extra for.
    """
    if url is None:
        path = default_sqlite_path()
        # 0700: sandboxed programs run as another user
        make_folder(path.parent, "the store's folder", private=True)
        return sa.URL.create("sqlite", database=str(path))
    if "://" not in url:
        return sa.URL.create("sqlite", database=str(Path(url).expanduser().absolute()))
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError as e:
        raise StoreError(f"Cannot understand the store URL {url!r}.", hint=_URL_HINT) from e
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise StoreError(
            f"calipers stores results in SQLite or PostgreSQL, not {backend!r}.", hint=_URL_HINT
        )
    return parsed


def create_engine(url: sa.URL, *, max_connections: int | None = None) -> Engine:
    """An engine for ``url``, checked by connecting once. Raises :class:`StoreError`.

    On PostgreSQL a process holds at most ``max_connections`` connections to the server
    (``None``: SQLAlchemy's default pool, 5 kept open plus up to 10 more while busy); a
    thread that finds them all in use waits for one. SQLite ignores it."""
    shown = display_url(url)
    sqlite = url.get_backend_name() == "sqlite"
    if sqlite and url.database not in (None, "", ":memory:"):
        path = Path(url.database)
        folder = path.parent
        if path.is_dir():
            raise StoreError(
                f"Cannot open the store {shown}: {path} is a folder, not a database file.",
                hint="Give a file path, e.g. DIR/calipers.db.",
            )
        problem = folder_problem(folder)
        if problem is None and not folder.is_dir():
            problem = f"the folder {folder} does not exist"
        if problem is not None:
            raise StoreError(
                f"Cannot open the store {shown}: {problem}.",
                hint="Give a path in a folder that exists and you can write, or leave --store "
                "unset to use the default.",
            )
        _create_private(Path(url.database), shown)
    kwargs: dict[str, Any] = (
        {} if sqlite else {"pool_pre_ping": True, "connect_args": {"connect_timeout": 10}}
    )
    if max_connections is not None and not sqlite:
        kwargs |= {"pool_size": max_connections, "max_overflow": 0}
    try:
        engine = sa.create_engine(url, **kwargs)
    except ImportError as e:
        raise StoreError(
            f"The database driver for {shown} is not installed ({e.name or e}).",
            hint="pip install 'calipers[postgres]'",
        ) from e
    except sa.exc.ArgumentError as e:
        raise StoreError(f"Cannot use the store URL {shown}: {e}", hint=_URL_HINT) from e
    if sqlite:
        _configure_sqlite(engine)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.DBAPIError as e:
        engine.dispose()
        hint = (
            "Check that the file is a SQLite database, or choose another path."
            if sqlite
            else "Check that the server is running and reachable, the database exists, and "
            "the user and password are right."
        )
        raise StoreError(f"Cannot open the store {shown}: {_reason(e)}.", hint=hint) from e
    return engine


def _create_private(path: Path, shown: str) -> None:
    """A new SQLite file is created ``0600`` (not world-readable, as SQLite would): it holds
    every prompt and response, and sandboxed programs run on this machine."""
    try:
        private_file(path)
    except OSError as e:
        raise StoreError(
            f"Cannot create the store {shown}: {e.strerror}.",
            hint="Check the folder's permissions, or choose another path.",
        ) from e


def _reason(e: sa.exc.DBAPIError) -> str:
    text = str(e.orig).strip() or type(e.orig).__name__
    return text.splitlines()[0].rstrip(".")


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN (see _on_begin)
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enable_wal(cursor)
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL (a setting stored in the file, so usually already done).

    The switch needs the file to itself and SQLite does not wait for that (the busy timeout
    does not apply), so when several processes open a new store at once, it is retried.
    """
    for attempt in range(100):
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] in ("wal", "memory"):
                return
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or attempt == 99:
                raise
            time.sleep(0.02)


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that sees one consistent snapshot; rolled back at the end."""
    with _translated(engine), engine.connect() as conn, conn.begin() as tx:
        yield conn
        tx.rollback()


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that commits at the end, or rolls back on error. On SQLite it takes the
    write lock at once, waiting up to the busy timeout for another writer to finish."""
    lock = _writer_lock(engine)
    with _translated(engine), lock or nullcontext(), engine.connect() as conn:
        conn.execution_options(**{_IMMEDIATE: True})
        with conn.begin():
            yield conn


@contextmanager
def _translated(engine: Engine) -> Iterator[None]:
    """Turn a lost connection, a server that cannot be reached or a lock held too long into
    a :class:`StoreError` (what a caller may retry later)."""
    try:
        yield
    except sa.exc.DBAPIError as e:
        # OperationalError: the server is down or refused; a cut connection (the server
        # restarted, or an administrator ended the session) can surface as another class.
        if not (isinstance(e, sa.exc.OperationalError) or e.connection_invalidated):
            raise
        raise StoreError(
            f"The store {display_url(engine.url)} cannot be used right now: {_reason(e)}.",
            hint="Another process may be holding it, or the database server is down; retry.",
        ) from e
