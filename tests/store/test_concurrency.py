"""Several Store objects on one database at once: a CLI reading while a run writes, two
writers, and several processes opening (and so migrating) a new store together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa

from calipers.store import Store
from calipers.store._migrations import MIGRATIONS
from tests.store.conftest import run_record, sample_record, wipe

T = TypeVar("T")


def together(n: int, fn: Callable[[int], T]) -> list[T]:
    """Run ``fn(0) ... fn(n - 1)`` in threads that start at the same moment."""
    barrier = threading.Barrier(n)

    def start(i: int) -> T:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(start, range(n)))


def test_a_reader_sees_whole_batches_while_a_writer_writes(store_url: str, store: Store) -> None:
    store.create_run(run_record("r1"))
    batches, size = 30, 5

    def work(i: int) -> list[int]:
        with Store.open(store_url) as mine:
            if i == 0:
                for b in range(batches):
                    recs = [sample_record("r1", b * size + k) for k in range(size)]
                    assert mine.add_samples(recs) == size
                return []
            seen: list[int] = []
            while not seen or seen[-1] < batches * size:
                seen.append(len(mine.get_samples("r1")))
            return seen

    _, seen = together(2, work)
    assert all(n % size == 0 for n in seen)
    assert seen == sorted(seen)
    assert len(store.get_samples("r1")) == batches * size


def test_two_writers_never_duplicate_a_sample(store_url: str, store: Store) -> None:
    store.create_run(run_record("r1"))

    def write_all(_: int) -> int:
        with Store.open(store_url) as mine:
            return sum(
                mine.add_samples([sample_record("r1", b * 4 + k) for k in range(4)])
                for b in range(15)
            )

    written = together(2, write_all)
    assert sum(written) == 60  # each sample was written by exactly one of them
    got = store.get_samples("r1")
    assert [s.position for s in got] == list(range(60))


def test_many_first_opens_migrate_once(tmp_path: Path) -> None:
    for attempt in range(5):  # the race is in the first milliseconds: try it a few times
        path = str(tmp_path / f"fresh{attempt}.db")
        for s in together(6, lambda _: Store.open(path)):  # noqa: B023 (used at once)
            s.close()
        engine = sa.create_engine(f"sqlite:///{path}")
        with engine.connect() as conn:
            applied = conn.execute(sa.text("SELECT count(*) FROM schema_version")).scalar()
            assert applied == len(MIGRATIONS)
            assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
        engine.dispose()


def test_many_first_opens_migrate_once_on_postgres() -> None:
    from tests.store.conftest import postgres_url

    url = postgres_url()
    wipe(url)
    for s in together(6, lambda _: Store.open(url)):
        s.close()
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        applied = conn.execute(sa.text("SELECT count(*) FROM schema_version")).scalar()
        assert applied == len(MIGRATIONS)
    engine.dispose()
