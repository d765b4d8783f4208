"""The store fixtures: every API test runs on SQLite and, when a server is given, PostgreSQL.

Set ``CALIPERS_TEST_POSTGRES_URL`` (``eval "$(bash .ci/start_postgres.sh)"`` does) to run the
PostgreSQL half; each test then starts from an empty database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from calipers.store import RunRecord, SampleRecord, Store
from calipers.store._schema import metadata, schema_version

PG_ENV = "CALIPERS_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The test server's URL, or skip the test saying how to get one."""
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f'PostgreSQL: set {PG_ENV} (eval "$(bash .ci/start_postgres.sh)")')
    pytest.importorskip("psycopg", reason="PostgreSQL: pip install 'calipers[postgres]'")
    return url


def wipe(url: str) -> None:
    """Drop every table, so a test starts from a blank database."""
    engine = sa.create_engine(url)
    try:
        md = sa.MetaData()
        md.reflect(engine)
        md.drop_all(engine)
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def postgres_engine() -> Iterator[sa.Engine]:
    """An engine on the test server, whose database is wiped once per test session."""
    url = postgres_url()
    wipe(url)
    engine = sa.create_engine(url)
    yield engine
    engine.dispose()


def empty_tables(engine: sa.Engine) -> None:
    """Delete every row but keep the migrated schema: much faster than dropping it."""
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            if table is not schema_version and sa.inspect(conn).has_table(table.name):
                conn.execute(table.delete())


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'calipers.db'}"
    engine: sa.Engine = request.getfixturevalue("postgres_engine")
    empty_tables(engine)
    return engine.url.render_as_string(hide_password=False)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    if store_url.startswith("sqlite:///"):
        Path(store_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    with Store.open(store_url) as s:
        yield s


def run_record(run_id: str = "20240101-000000-aaaaaa", **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "id": run_id,
        "model": "fake:oracle",
        "model_name": "oracle",
        "tasks": ["capitals"],
        "methodology": {"seed": 0, "template": "Q: {input}\nA:"},
        "methodology_hash": "m" * 16,
        "config": {"tasks": ["capitals"], "limit": None},
    }
    return RunRecord(**(values | fields))


def sample_record(run_id: str, i: int, **fields: Any) -> SampleRecord:
    values: dict[str, Any] = {
        "run_id": run_id,
        "task": "capitals",
        "sample_id": f"s{i:03d}",
        "position": i,
        "prompt": {"prompt": f"Q: {i}?\nA:", "params": {"max_tokens": 8}},
        "response": f"answer {i}",
        "answer": f"{i}",
        "target": f"{i}",
        "scores": {"exact_match": 1.0},
    }
    return SampleRecord(**(values | fields))
