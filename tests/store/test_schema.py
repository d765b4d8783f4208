"""Migrations: a blank database migrates to exactly the pinned schema, once, atomically."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from calipers.errors import StoreError
from calipers.store import Store
from calipers.store._engine import create_engine, resolve_url
from calipers.store._migrations import MIGRATIONS, current_version, m001_initial, migrate
from calipers.store._schema import metadata, runs, samples
from tests.store.conftest import postgres_url, run_record, sample_record, wipe

DOCS = Path(__file__).parents[2] / "docs" / "store.md"

# The schema a blank SQLite database has after Store.open: change it only with a new migration.
EXPECTED: dict[str, dict[str, Any]] = {
    "fingerprint_looks": {
        "columns": [
            "id INTEGER NOT NULL",
            "canary TEXT NOT NULL",
            "reference_hash TEXT NOT NULL",
            "ts DATETIME NOT NULL",
            "status TEXT NOT NULL",
            "model TEXT NOT NULL",
            "completions TEXT NOT NULL",
            "statistic TEXT NULL",
            "design TEXT NOT NULL",
            "error TEXT NULL",
        ],
        "primary_key": "pk_fingerprint_looks (id)",
        "foreign_keys": [],
        "indexes": ["ix_fingerprint_looks_canary_ts (canary, ts)"],
        "unique": [],
    },
    "job_leases": {
        "columns": [
            "name TEXT NOT NULL",
            "holder TEXT NOT NULL",
            "acquired_at DATETIME NOT NULL",
            "expires_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_job_leases (name)",
        "foreign_keys": [],
        "indexes": [],
        "unique": [],
    },
    "online_scores": {
        "columns": [
            "id INTEGER NOT NULL",
            "pair_id TEXT NOT NULL",
            "role TEXT NOT NULL",
            "scorer TEXT NOT NULL",
            "value FLOAT NULL",
            "details TEXT NULL",
            "scored_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_online_scores (id)",
        "foreign_keys": [],
        "indexes": ["ix_online_scores_scorer (scorer)"],
        "unique": ["uq_online_scores_pair_id_role_scorer (pair_id, role, scorer)"],
    },
    "raters": {
        "columns": [
            "id INTEGER NOT NULL",
            "campaign_id INTEGER NOT NULL",
            "name TEXT NOT NULL",
            "pool TEXT NOT NULL",
            "token_hash TEXT NOT NULL",
            "role TEXT NOT NULL",
            "excluded BOOLEAN NOT NULL",
            "excluded_reason TEXT NULL",
            "excluded_at DATETIME NULL",
            "created_at DATETIME NOT NULL",
            "token_key TEXT NULL",
        ],
        "primary_key": "pk_raters (id)",
        "foreign_keys": [
            "fk_raters_campaign_id_review_campaigns (campaign_id) -> review_campaigns (id)",
        ],
        "indexes": ["UNIQUE uq_raters_token_key (token_key)"],
        "unique": [
            "uq_raters_campaign_id_name (campaign_id, name)",
            "uq_raters_token_hash (token_hash)",
        ],
    },
    "review_adjudications": {
        "columns": [
            "id INTEGER NOT NULL",
            "item_id INTEGER NOT NULL",
            "rater_id INTEGER NOT NULL",
            "answers TEXT NOT NULL",
            "note TEXT NULL",
            "created_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_review_adjudications (id)",
        "foreign_keys": [
            "fk_review_adjudications_item_id_review_items (item_id) -> review_items (id)",
            "fk_review_adjudications_rater_id_raters (rater_id) -> raters (id)",
        ],
        "indexes": ["ix_review_adjudications_item_id (item_id)"],
        "unique": [],
    },
    "review_sessions": {
        "columns": [
            "session_hash TEXT NOT NULL",
            "rater_id INTEGER NOT NULL",
            "csrf_token TEXT NOT NULL",
            "created_at DATETIME NOT NULL",
            "expires_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_review_sessions (session_hash)",
        "foreign_keys": ["fk_review_sessions_rater_id_raters (rater_id) -> raters (id)"],
        "indexes": [],
        "unique": [],
    },
    "review_assignments": {
        "columns": [
            "id INTEGER NOT NULL",
            "item_id INTEGER NOT NULL",
            "rater_id INTEGER NOT NULL",
            "slot INTEGER NULL",
            "is_repeat BOOLEAN NOT NULL",
            "swapped BOOLEAN NULL",
            "state TEXT NOT NULL",
            "leased_at DATETIME NOT NULL",
            "lease_expires_at DATETIME NOT NULL",
            "finished_at DATETIME NULL",
        ],
        "primary_key": "pk_review_assignments (id)",
        "foreign_keys": [
            "fk_review_assignments_item_id_review_items (item_id) -> review_items (id)",
            "fk_review_assignments_rater_id_raters (rater_id) -> raters (id)",
        ],
        "indexes": [
            "UNIQUE uq_review_assignments_item_rater (item_id, rater_id)",
            "UNIQUE uq_review_assignments_item_slot (item_id, slot)",
            "ix_review_assignments_rater_id_state (rater_id, state)",
        ],
        "unique": [],
    },
    "review_campaigns": {
        "columns": [
            "id INTEGER NOT NULL",
            "name TEXT NOT NULL",
            "kind TEXT NOT NULL",
            "questions TEXT NOT NULL",
            "k INTEGER NOT NULL",
            "repeat_fraction FLOAT NOT NULL",
            "seed INTEGER NOT NULL",
            "settings TEXT NOT NULL",
            "created_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_review_campaigns (id)",
        "foreign_keys": [],
        "indexes": [],
        "unique": [
            "uq_review_campaigns_name (name)",
        ],
    },
    "review_items": {
        "columns": [
            "id INTEGER NOT NULL",
            "campaign_id INTEGER NOT NULL",
            "item_key TEXT NOT NULL",
            "position INTEGER NOT NULL",
            "payload TEXT NOT NULL",
            "source TEXT NOT NULL",
            "gold TEXT NULL",
            "is_attention_check BOOLEAN NOT NULL",
        ],
        "primary_key": "pk_review_items (id)",
        "foreign_keys": [
            "fk_review_items_campaign_id_review_campaigns (campaign_id) -> review_campaigns (id)",
        ],
        "indexes": [
            "ix_review_items_campaign_id_position (campaign_id, position)",
        ],
        "unique": [
            "uq_review_items_campaign_id_item_key (campaign_id, item_key)",
        ],
    },
    "review_judgments": {
        "columns": [
            "id INTEGER NOT NULL",
            "assignment_id INTEGER NOT NULL",
            "answers TEXT NOT NULL",
            "seconds FLOAT NULL",
            "created_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_review_judgments (id)",
        "foreign_keys": [
            "fk_review_judgments_assignment_id_review_assignments (assignment_id) -> "
            "review_assignments (id)",
        ],
        "indexes": [],
        "unique": [
            "uq_review_judgments_assignment_id (assignment_id)",
        ],
    },
    "response_cache": {
        "columns": [
            "key TEXT NOT NULL",
            "value TEXT NOT NULL",
            "created_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_response_cache (key)",
        "foreign_keys": [],
        "indexes": [],
        "unique": [],
    },
    "runs": {
        "columns": [
            "id TEXT NOT NULL",
            "created_at DATETIME NOT NULL",
            "finished_at DATETIME NULL",
            "status TEXT NOT NULL",
            "model TEXT NOT NULL",
            "model_name TEXT NOT NULL",
            "tasks TEXT NOT NULL",
            "methodology TEXT NOT NULL",
            "methodology_hash TEXT NOT NULL",
            "config TEXT NOT NULL",
            "summary TEXT NULL",
            "error TEXT NULL",
            "calipers_version TEXT NOT NULL",
        ],
        "primary_key": "pk_runs (id)",
        "foreign_keys": [],
        "indexes": [
            "ix_runs_created_at (created_at)",
            "ix_runs_methodology_hash (methodology_hash)",
        ],
        "unique": [],
    },
    "samples": {
        "columns": [
            "id INTEGER NOT NULL",
            "run_id TEXT NOT NULL",
            "task TEXT NOT NULL",
            "sample_id TEXT NOT NULL",
            "epoch INTEGER NOT NULL DEFAULT 0",
            "position INTEGER NOT NULL",
            "category TEXT NULL",
            "cluster TEXT NULL",
            "prompt TEXT NOT NULL",
            "response TEXT NULL",
            "answer TEXT NULL",
            "target TEXT NULL",
            "scores TEXT NULL",
            "score_details TEXT NULL",
            "latency_s FLOAT NULL",
            "input_tokens INTEGER NULL",
            "output_tokens INTEGER NULL",
            "cost_usd FLOAT NULL",
            "cached BOOLEAN NOT NULL DEFAULT 0",
            "error TEXT NULL",
            "created_at DATETIME NOT NULL",
            "seed INTEGER NULL",
        ],
        "primary_key": "pk_samples (id)",
        "foreign_keys": ["fk_samples_run_id_runs (run_id) -> runs (id)"],
        "indexes": [],
        "unique": ["uq_samples_run_id_task_sample_id_epoch (run_id, task, sample_id, epoch)"],
    },
    "schema_version": {
        "columns": [
            "version INTEGER NOT NULL",
            "name TEXT NOT NULL",
            "applied_at DATETIME NOT NULL",
        ],
        "primary_key": "pk_schema_version (version)",
        "foreign_keys": [],
        "indexes": [],
        "unique": [],
    },
    "traffic": {
        "columns": [
            "id INTEGER NOT NULL",
            "ts DATETIME NOT NULL",
            "pair_id TEXT NOT NULL",
            "role TEXT NOT NULL",
            "served BOOLEAN NOT NULL",
            "mode TEXT NOT NULL",
            "user_key_hash TEXT NULL",
            "endpoint TEXT NOT NULL",
            "upstream TEXT NOT NULL",
            "model TEXT NULL",
            "stream BOOLEAN NOT NULL",
            "request TEXT NOT NULL",
            "response TEXT NULL",
            "finish_reason TEXT NULL",
            "status INTEGER NULL",
            "error TEXT NULL",
            "latency_ms FLOAT NULL",
            "ttft_ms FLOAT NULL",
            "input_tokens INTEGER NULL",
            "output_tokens INTEGER NULL",
        ],
        "primary_key": "pk_traffic (id)",
        "foreign_keys": [],
        "indexes": [
            "ix_traffic_ts (ts)",
            "ix_traffic_ts_mode_role_served_status_error_latency_ms_pair_id "
            "(ts, mode, role, served, status, error, latency_ms, pair_id)",
        ],
        "unique": ["uq_traffic_pair_id_role (pair_id, role)"],
    },
}


def describe(engine: sa.Engine, *, types: bool = True) -> dict[str, dict[str, Any]]:
    """What a migration decides about each table, in a form a test can compare as a whole."""
    insp = sa.inspect(engine)

    def cols(names: Sequence[str | None]) -> str:
        assert all(names), names  # no expression indexes: every indexed column has a name
        return ", ".join(n for n in names if n)

    def column(c: Any) -> str:
        parts = [c["name"]]
        if types:
            parts.append(c["type"].compile(dialect=engine.dialect))
        parts.append("NULL" if c["nullable"] else "NOT NULL")
        default = c.get("default")
        if types and default is not None and "nextval" not in default:
            parts.append(f"DEFAULT {default}")
        return " ".join(parts)

    out: dict[str, dict[str, Any]] = {}
    for table in sorted(insp.get_table_names()):
        pk = insp.get_pk_constraint(table)
        out[table] = {
            "columns": [column(c) for c in insp.get_columns(table)],
            "primary_key": f"{pk['name']} ({cols(pk['constrained_columns'])})",
            "foreign_keys": [
                f"{fk['name']} ({cols(fk['constrained_columns'])}) -> "
                f"{fk['referred_table']} ({cols(fk['referred_columns'])})"
                for fk in insp.get_foreign_keys(table)
            ],
            "indexes": sorted(
                f"{'UNIQUE ' if ix['unique'] else ''}{ix['name']} ({cols(ix['column_names'])})"
                for ix in insp.get_indexes(table)
                if not ix.get("duplicates_constraint")  # PostgreSQL lists a UNIQUE's index too
            ),
            "unique": sorted(
                f"{uq['name']} ({cols(uq['column_names'])})"
                for uq in insp.get_unique_constraints(table)
            ),
        }
    return out


def without_types(schema: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    def strip(col: str) -> str:
        name, *_rest = col.split(" ")
        return f"{name} {'NULL' if col.endswith(' NULL') else 'NOT NULL'}"

    return {
        table: info | {"columns": [strip(c) for c in info["columns"]]}
        for table, info in schema.items()
    }


def sqlite_schema_sql(engine: sa.Engine) -> str:
    """The CREATE statements of the database, tables first: what docs/store.md shows."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type DESC, name"
        )
        statements = [row[0] for row in rows]
    text = ";\n".join(statements) + ";"
    return "\n".join(line.rstrip().replace("\t", "    ") for line in text.splitlines())


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> sa.Engine:
    """A blank SQLite database, configured like the store's (WAL, foreign keys, BEGIN)."""
    return create_engine(resolve_url(str(tmp_path / "blank.db")))


def test_blank_sqlite_migrates_to_the_pinned_schema(sqlite_engine: sa.Engine) -> None:
    assert migrate(sqlite_engine) == len(MIGRATIONS) == 9
    assert describe(sqlite_engine) == EXPECTED
    with sqlite_engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT version, name FROM schema_version").all()
    assert [tuple(r) for r in rows] == [
        (1, "m001_initial"),
        (2, "m002_traffic"),
        (3, "m003_online_scores"),
        (4, "m004_sample_seed"),
        (5, "m005_review"),
        (6, "m006_review_sessions"),
        (7, "m007_fingerprint_looks"),
        (8, "m008_job_leases"),
        (9, "m009_monitor_indexes"),
    ]


# The partial unique indexes that make an over-assignment or a second look impossible.
PARTIAL_INDEXES = {
    "uq_review_assignments_item_slot": "state IN ('leased', 'answered')",
    "uq_review_assignments_item_rater": (
        "NOT is_repeat AND state IN ('leased', 'answered', 'skipped')"
    ),
}


def test_review_indexes_are_partial_on_sqlite(sqlite_engine: sa.Engine) -> None:
    migrate(sqlite_engine)
    with sqlite_engine.connect() as conn:
        for name, where in PARTIAL_INDEXES.items():
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
            ).scalar_one()
            assert sql.startswith("CREATE UNIQUE INDEX") and sql.endswith(f"WHERE {where}")


def test_a_version_1_store_gains_the_traffic_table_and_keeps_its_data(tmp_path: Path) -> None:
    path = str(tmp_path / "v1.db")
    engine = create_engine(resolve_url(path))
    try:
        migrate(engine, [m001_initial])  # what an older calipers left behind
        with engine.begin() as conn:
            conn.execute(runs.insert().values(**run_record("r1").model_dump()))
        assert not sa.inspect(engine).has_table("traffic")
        with Store.open(path) as store:
            assert [r.id for r in store.list_runs()] == ["r1"]
            assert store.get_traffic() == []
        assert describe(engine) == EXPECTED
    finally:
        engine.dispose()


def test_a_version_3_store_reads_its_seeds_and_its_sample_rows_gain_them(tmp_path: Path) -> None:
    path = str(tmp_path / "v3.db")
    engine = create_engine(resolve_url(path))
    try:
        migrate(engine, MIGRATIONS[:3])  # what calipers left behind before samples.seed
        with engine.begin() as conn:
            for rid, config in (("r7", {"tasks": ["capitals"], "seed": 7}), ("r_none", {})):
                conn.execute(runs.insert().values(**run_record(rid, config=config).model_dump()))
                for i in range(2):  # the version-3 columns only: there was no seed
                    row = sample_record(rid, i).model_dump(exclude={"id", "seed"})
                    conn.execute(samples.insert().values(**row))
        with Store.open(path) as store:
            assert store.get_run("r7").seed == 7
            assert [s.seed for s in store.get_samples("r7")] == [7, 7]
            assert store.get_run("r_none").seed is None  # recorded no seed: none is made up
            assert [s.seed for s in store.get_samples("r_none")] == [None, None]
            store.add_samples([sample_record("r7", 2, seed=7)])
            assert [s.seed for s in store.get_samples("r7")] == [7, 7, 7]
        assert describe(engine) == EXPECTED
    finally:
        engine.dispose()


def test_query_tables_match_the_migrated_schema(tmp_path: Path) -> None:
    built = create_engine(resolve_url(str(tmp_path / "from_metadata.db")))
    metadata.create_all(built)
    assert describe(built) == EXPECTED


def test_postgres_gets_the_same_schema() -> None:
    url = postgres_url()
    wipe(url)
    Store.open(url).close()
    engine = sa.create_engine(url)
    try:
        found = describe(engine)
        assert without_types(found) == without_types(EXPECTED)
        samples = found["samples"]["columns"]
        assert "id BIGINT NOT NULL" in samples
        assert "created_at TIMESTAMP WITH TIME ZONE NOT NULL" in samples
        assert "cached BOOLEAN NOT NULL DEFAULT false" in samples
        assert "ts TIMESTAMP WITH TIME ZONE NOT NULL" in found["traffic"]["columns"]
        assert "id BIGINT NOT NULL" in found["traffic"]["columns"]
        indexes = {ix["name"]: ix for ix in sa.inspect(engine).get_indexes("review_assignments")}
        for name in PARTIAL_INDEXES:  # PostgreSQL rewrites the predicate; its parts stay
            where = indexes[name]["dialect_options"]["postgresql_where"]
            assert "leased" in where and "answered" in where
        assert (
            "is_repeat"
            in indexes["uq_review_assignments_item_rater"]["dialect_options"]["postgresql_where"]
        )
    finally:
        engine.dispose()
        wipe(url)


def test_docs_show_the_migrated_schema(sqlite_engine: sa.Engine) -> None:
    migrate(sqlite_engine)
    expected = sqlite_schema_sql(sqlite_engine)
    match = re.search(r"<!-- schema -->\n```sql\n(.*?)\n```", DOCS.read_text(), re.DOTALL)
    assert match, f"{DOCS} has no schema block"
    # SQLAlchemy 2.0.0 writes server defaults as DEFAULT (0), later releases as DEFAULT 0:
    # the same schema, so the text is compared with that spelling made one.
    assert _defaults(match.group(1)) == _defaults(expected), (
        f"update the schema block in {DOCS} to:\n{expected}"
    )


def _defaults(sql: str) -> str:
    return re.sub(r"DEFAULT \(([^()]*)\)", r"DEFAULT \1", sql)


def test_reopening_migrates_nothing_and_keeps_data(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with Store.open(path) as store:
        store.create_run(run_record("r1"))
    for _ in range(2):
        with Store.open(path) as store:
            assert [r.id for r in store.list_runs()] == ["r1"]
    engine = create_engine(resolve_url(path))
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM schema_version").scalar() == 9


def add_note(conn: Connection) -> None:
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN note TEXT"))


def test_only_pending_migrations_run(sqlite_engine: sa.Engine) -> None:
    assert migrate(sqlite_engine, [m001_initial]) == 1
    assert migrate(sqlite_engine, [m001_initial, add_note]) == 2
    assert migrate(sqlite_engine, [m001_initial, add_note]) == 2  # would fail if re-run
    with sqlite_engine.connect() as conn:
        assert current_version(conn) == 2
        names = conn.exec_driver_sql("SELECT name FROM schema_version ORDER BY version")
        assert [n for (n,) in names] == ["m001_initial", "add_note"]
    assert "note" in {c["name"] for c in sa.inspect(sqlite_engine).get_columns("runs")}


def broken(conn: Connection) -> None:
    conn.execute(sa.text("CREATE TABLE half_done (x INTEGER)"))
    conn.execute(sa.text("ALTER TABLE no_such_table ADD COLUMN y INTEGER"))


def test_a_failing_migration_changes_nothing(store_url: str) -> None:
    if store_url.startswith("sqlite:///"):
        Path(store_url.removeprefix("sqlite:///")).parent.mkdir(parents=True)
    engine = create_engine(resolve_url(store_url))
    try:
        migrate(engine)
        broken_no = len(MIGRATIONS) + 1
        with pytest.raises(
            StoreError, match=rf"Migration {broken_no} \(broken\) of the store failed"
        ):
            migrate(engine, [*MIGRATIONS, broken])
        assert not sa.inspect(engine).has_table("half_done")
        with engine.connect() as conn:
            assert current_version(conn) == len(MIGRATIONS)
    finally:
        engine.dispose()


def test_a_store_from_a_newer_calipers_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    Store.open(path).close()
    engine = create_engine(resolve_url(path))
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO schema_version VALUES (99, 'future', '2030-01-01 00:00:00.000000')"
        )
    with pytest.raises(StoreError, match="schema version 99, newer than this calipers") as err:
        Store.open(path)
    assert err.value.hint and "pip install -U calipers" in err.value.hint
