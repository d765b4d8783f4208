"""Schema migrations: a plain list of functions, applied in order, each exactly once.

``MIGRATIONS[i]`` takes the schema from version ``i`` to ``i + 1``; the ``schema_version``
table records which ones ran. To change the schema, append a function; never edit one that
has shipped, because databases in the wild were built by it. A migration declares the tables
it touches as they are at that point in history (not by importing ``_schema``, which moves on),
and uses only portable SQLAlchemy constructs, so one list serves SQLite and PostgreSQL.

All pending migrations run in one transaction, under a lock (SQLite: ``BEGIN IMMEDIATE``;
PostgreSQL: an advisory lock), so two processes opening a fresh store at once cannot both
migrate it, and a failed migration leaves the store as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from calipers._util.clock import utc_now
from calipers.errors import StoreError
from calipers.store._engine import write_transaction
from calipers.store._schema import NAMING_CONVENTION, schema_version
from calipers.store._types import JSONText, UTCDateTime

__all__ = ["MIGRATIONS", "Migration", "current_version", "migrate"]

Migration = Callable[[Connection], None]

# Any constant works; this is "cali" in ASCII. Only calipers takes this advisory lock.
_PG_LOCK_KEY = 0x63616C69


def m001_initial(conn: Connection) -> None:
    """Runs, their samples, and the response cache."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table(
        "runs",
        md,
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("model_name", sa.Text, nullable=False),
        sa.Column("tasks", JSONText, nullable=False),
        sa.Column("methodology", JSONText, nullable=False),
        sa.Column("methodology_hash", sa.Text, nullable=False),
        sa.Column("config", JSONText, nullable=False),
        sa.Column("summary", JSONText, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("calipers_version", sa.Text, nullable=False),
        sa.Index(None, "created_at"),
        sa.Index(None, "methodology_hash"),
    )
    sa.Table(
        "samples",
        md,
        sa.Column("id", big_int_id, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Text, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("task", sa.Text, nullable=False),
        sa.Column("sample_id", sa.Text, nullable=False),
        sa.Column("epoch", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("category", sa.Text, nullable=True),
        sa.Column("cluster", sa.Text, nullable=True),
        sa.Column("prompt", JSONText, nullable=False),
        sa.Column("response", sa.Text, nullable=True),
        sa.Column("answer", sa.Text, nullable=True),
        sa.Column("target", sa.Text, nullable=True),
        sa.Column("scores", JSONText, nullable=True),
        sa.Column("score_details", JSONText, nullable=True),
        sa.Column("latency_s", sa.Float, nullable=True),
        sa.Column("input_tokens", sa.Integer, nullable=True),
        sa.Column("output_tokens", sa.Integer, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("cached", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("run_id", "task", "sample_id", "epoch"),
    )
    sa.Table(
        "response_cache",
        md,
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", JSONText, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn, checkfirst=False)


def m002_traffic(conn: Connection) -> None:
    """The gateway's log: one row per upstream call (baseline or candidate) of a request."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table(
        "traffic",
        md,
        sa.Column("id", big_int_id, primary_key=True, autoincrement=True),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.Column("pair_id", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("served", sa.Boolean, nullable=False),
        sa.Column("mode", sa.Text, nullable=False),
        sa.Column("user_key_hash", sa.Text, nullable=True),
        sa.Column("endpoint", sa.Text, nullable=False),
        sa.Column("upstream", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=True),
        sa.Column("stream", sa.Boolean, nullable=False),
        sa.Column("request", JSONText, nullable=False),
        sa.Column("response", sa.Text, nullable=True),
        sa.Column("finish_reason", sa.Text, nullable=True),
        sa.Column("status", sa.Integer, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("latency_ms", sa.Float, nullable=True),
        sa.Column("ttft_ms", sa.Float, nullable=True),
        sa.Column("input_tokens", sa.Integer, nullable=True),
        sa.Column("output_tokens", sa.Integer, nullable=True),
        sa.UniqueConstraint("pair_id", "role"),
        sa.Index(None, "ts"),
    )
    md.create_all(conn, checkfirst=False)


def m003_online_scores(conn: Connection) -> None:
    """Scores of logged traffic given after the fact: one row per (request, arm, scorer)."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table(
        "online_scores",
        md,
        sa.Column("id", big_int_id, primary_key=True, autoincrement=True),
        sa.Column("pair_id", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("scorer", sa.Text, nullable=False),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("details", JSONText, nullable=True),
        sa.Column("scored_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("pair_id", "role", "scorer"),
        sa.Index(None, "scorer"),
    )
    md.create_all(conn, checkfirst=False)


def m004_sample_seed(conn: Connection) -> None:
    """``samples.seed``: the seed each sample's item was made with (the run's items stream).
    Rows already stored take their run's seed (``config["seed"]``: before the streams were
    derived apart, the items drew from it); rows of a run that recorded none stay NULL."""
    conn.execute(sa.text("ALTER TABLE samples ADD COLUMN seed INTEGER"))
    md = sa.MetaData()
    runs = sa.Table("runs", md, sa.Column("id", sa.Text), sa.Column("config", JSONText))
    samples = sa.Table("samples", md, sa.Column("run_id", sa.Text), sa.Column("seed", sa.Integer))
    seeds = [
        {"rid": rid, "run_seed": config["seed"]}
        for rid, config in conn.execute(sa.select(runs.c.id, runs.c.config))
        if isinstance(config, dict) and type(config.get("seed")) is int
    ]
    if seeds:
        conn.execute(
            samples.update()
            .where(samples.c.run_id == sa.bindparam("rid"))
            .values(seed=sa.bindparam("run_seed")),
            seeds,
        )


def m005_review(conn: Connection) -> None:
    """Human review: campaigns, their items, raters, assignments (leases) and judgments."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    active = "state IN ('leased', 'answered')"
    first_look = "NOT is_repeat AND state IN ('leased', 'answered', 'skipped')"

    def key(name: str) -> sa.Column[int]:
        return sa.Column(name, big_int_id, primary_key=True, autoincrement=True)

    def ref(name: str, target: str) -> sa.Column[int]:
        return sa.Column(name, big_int_id, sa.ForeignKey(target), nullable=False)

    sa.Table(
        "review_campaigns",
        md,
        key("id"),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("questions", JSONText, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("repeat_fraction", sa.Float, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("settings", JSONText, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("name"),
    )
    sa.Table(
        "review_items",
        md,
        key("id"),
        ref("campaign_id", "review_campaigns.id"),
        sa.Column("item_key", sa.Text, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("payload", JSONText, nullable=False),
        sa.Column("source", JSONText, nullable=False),
        sa.Column("gold", JSONText, nullable=True),
        sa.Column("is_attention_check", sa.Boolean, nullable=False),
        sa.UniqueConstraint("campaign_id", "item_key"),
        sa.Index(None, "campaign_id", "position"),
    )
    sa.Table(
        "raters",
        md,
        key("id"),
        ref("campaign_id", "review_campaigns.id"),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("pool", sa.Text, nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("excluded", sa.Boolean, nullable=False),
        sa.Column("excluded_reason", sa.Text, nullable=True),
        sa.Column("excluded_at", UTCDateTime, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("campaign_id", "name"),
        sa.UniqueConstraint("token_hash"),
    )
    sa.Table(
        "review_assignments",
        md,
        key("id"),
        ref("item_id", "review_items.id"),
        ref("rater_id", "raters.id"),
        sa.Column("slot", sa.Integer, nullable=True),
        sa.Column("is_repeat", sa.Boolean, nullable=False),
        sa.Column("swapped", sa.Boolean, nullable=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("leased_at", UTCDateTime, nullable=False),
        sa.Column("lease_expires_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
        sa.Index(None, "rater_id", "state"),
        sa.Index(
            "uq_review_assignments_item_slot",
            "item_id",
            "slot",
            unique=True,
            sqlite_where=sa.text(active),
            postgresql_where=sa.text(active),
        ),
        sa.Index(
            "uq_review_assignments_item_rater",
            "item_id",
            "rater_id",
            unique=True,
            sqlite_where=sa.text(first_look),
            postgresql_where=sa.text(first_look),
        ),
    )
    sa.Table(
        "review_judgments",
        md,
        key("id"),
        ref("assignment_id", "review_assignments.id"),
        sa.Column("answers", JSONText, nullable=False),
        sa.Column("seconds", sa.Float, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("assignment_id"),
    )
    md.create_all(conn, checkfirst=False)


def m006_review_sessions(conn: Connection) -> None:
    """Review, second step: a public lookup key for each invite token (the token itself is
    stored only as an argon2 hash, which cannot be searched), adjudications, and the web
    sessions of raters (kept in the store, so a restarted server keeps everyone signed in)."""
    conn.execute(sa.text("ALTER TABLE raters ADD COLUMN token_key TEXT"))
    conn.execute(sa.text("CREATE UNIQUE INDEX uq_raters_token_key ON raters (token_key)"))
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table("review_items", md, sa.Column("id", big_int_id, primary_key=True))
    sa.Table("raters", md, sa.Column("id", big_int_id, primary_key=True))
    sa.Table(
        "review_adjudications",
        md,
        sa.Column("id", big_int_id, primary_key=True, autoincrement=True),
        sa.Column("item_id", big_int_id, sa.ForeignKey("review_items.id"), nullable=False),
        sa.Column("rater_id", big_int_id, sa.ForeignKey("raters.id"), nullable=False),
        sa.Column("answers", JSONText, nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Index(None, "item_id"),
    )
    sa.Table(
        "review_sessions",
        md,
        sa.Column("session_hash", sa.Text, primary_key=True),
        sa.Column("rater_id", big_int_id, sa.ForeignKey("raters.id"), nullable=False),
        sa.Column("csrf_token", sa.Text, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn, tables=[md.tables["review_adjudications"], md.tables["review_sessions"]])


def m007_fingerprint_looks(conn: Connection) -> None:
    """The fingerprint canary's looks: one row per look at a model (its completions, its
    statistic, or why it failed)."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    big_int_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    sa.Table(
        "fingerprint_looks",
        md,
        sa.Column("id", big_int_id, primary_key=True, autoincrement=True),
        sa.Column("canary", sa.Text, nullable=False),
        sa.Column("reference_hash", sa.Text, nullable=False),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("completions", JSONText, nullable=False),
        sa.Column("statistic", JSONText, nullable=True),
        sa.Column("design", JSONText, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Index(None, "canary", "ts"),
    )
    md.create_all(conn, checkfirst=False)


def m008_job_leases(conn: Connection) -> None:
    """Leases: which of several processes (gateway replicas on one database) does a job that
    must be done once, such as the fingerprint canary's looks."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    sa.Table(
        "job_leases",
        md,
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("acquired_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
    )
    md.create_all(conn, checkfirst=False)


# The monitor's reads (``calipers.store._traffic_stats``): by window of ``ts``, the columns it
# counts and the latencies it reads, so a window is read from the index alone.
MONITOR_INDEX_COLUMNS = ("ts", "mode", "role", "served", "status", "error", "latency_ms", "pair_id")


def m009_monitor_indexes(conn: Connection) -> None:
    """Monitor indexes: a covering index of ``traffic`` by ``ts`` with the columns the
    monitor's window counts and latencies read, so a window is read from the index alone."""
    md = sa.MetaData(naming_convention=NAMING_CONVENTION)
    table = sa.Table(
        "traffic",
        md,
        *(sa.Column(c, sa.Text) for c in MONITOR_INDEX_COLUMNS),
    )
    sa.Index(None, *(table.c[c] for c in MONITOR_INDEX_COLUMNS)).create(conn)


MIGRATIONS: list[Migration] = [
    m001_initial,
    m002_traffic,
    m003_online_scores,
    m004_sample_seed,
    m005_review,
    m006_review_sessions,
    m007_fingerprint_looks,
    m008_job_leases,
    m009_monitor_indexes,
]


def current_version(conn: Connection) -> int:
    """The schema version of the database behind ``conn`` (0 for a blank one)."""
    if not sa.inspect(conn).has_table(schema_version.name):
        return 0
    return int(conn.scalar(sa.select(sa.func.max(schema_version.c.version))) or 0)


def migrate(engine: Engine, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database up to ``len(migrations)``; return that version.

    Cheap when there is nothing to do: one read, no lock. Raises :class:`StoreError` when the
    database is newer than this calipers or a migration fails (then nothing is changed).
    """
    target = len(migrations)
    with engine.connect() as conn:
        found = current_version(conn)
        conn.rollback()
    _check_not_newer(engine, found, target)
    if found == target:
        return target
    with write_transaction(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_LOCK_KEY)))
        schema_version.create(conn, checkfirst=True)
        found = current_version(conn)  # another process may have migrated meanwhile
        _check_not_newer(engine, found, target)
        for number in range(found + 1, target + 1):
            step = migrations[number - 1]
            try:
                step(conn)
            except sa.exc.SQLAlchemyError as e:
                raise StoreError(
                    f"Migration {number} ({step.__name__}) of the store failed: {e.args[0]}",
                    hint="The store was left unchanged; please report this with the message.",
                ) from e
            conn.execute(
                schema_version.insert().values(
                    version=number, name=step.__name__, applied_at=utc_now()
                )
            )
    return target


def _check_not_newer(engine: Engine, found: int, target: int) -> None:
    if found > target:
        shown = engine.url.render_as_string(hide_password=True)
        raise StoreError(
            f"The store at {shown} has schema version {found}, newer than this calipers "
            f"understands ({target}).",
            hint="Upgrade calipers (pip install -U calipers) or use another store.",
        )
