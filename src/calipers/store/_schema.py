"""The current tables, as the store's queries see them.

These definitions describe the schema that :data:`~calipers.store._migrations.MIGRATIONS`
produce; they never create anything themselves (migrations do). ``tests/store`` checks that
the migrated database and these tables agree, so a migration cannot be forgotten.
"""

from __future__ import annotations

import sqlalchemy as sa

from calipers.store._types import JSONText, UTCDateTime

__all__ = [
    "ACTIVE_STATES",
    "NAMING_CONVENTION",
    "SAMPLE_KEY_COLUMNS",
    "fingerprint_looks",
    "job_leases",
    "metadata",
    "online_scores",
    "raters",
    "response_cache",
    "review_adjudications",
    "review_assignments",
    "review_campaigns",
    "review_items",
    "review_judgments",
    "review_sessions",
    "runs",
    "samples",
    "schema_version",
    "traffic",
]

NAMING_CONVENTION = {
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
}
"""Constraint names are explicit, so they are the same on SQLite and PostgreSQL. Frozen: the
first migration created constraints with these names."""

SAMPLE_KEY_COLUMNS = ("run_id", "task", "sample_id", "epoch")

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

# BIGINT on PostgreSQL; on SQLite only INTEGER makes the key an alias of the rowid.
_BigIntId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("applied_at", UTCDateTime, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
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

samples = sa.Table(
    "samples",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
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
    sa.Column("seed", sa.Integer, nullable=True),  # migration 4: last, as ALTER TABLE adds it
    # Its index also serves every lookup by run_id (the leading column).
    sa.UniqueConstraint(*SAMPLE_KEY_COLUMNS),
)

response_cache = sa.Table(
    "response_cache",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", JSONText, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

traffic = sa.Table(
    "traffic",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
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
    # One row per arm of a request: a retried write cannot duplicate it.
    sa.UniqueConstraint("pair_id", "role"),
    sa.Index(None, "ts"),
    # migration 9 (monitor indexes): a window's counts and latencies from the index alone
    sa.Index(None, "ts", "mode", "role", "served", "status", "error", "latency_ms", "pair_id"),
)

online_scores = sa.Table(
    "online_scores",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("pair_id", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("scorer", sa.Text, nullable=False),
    # NULL is NaN ("could not be scored"): SQLite cannot store a NaN REAL.
    sa.Column("value", sa.Float, nullable=True),
    sa.Column("details", JSONText, nullable=True),
    sa.Column("scored_at", UTCDateTime, nullable=False),
    # One score per arm and scorer: an hourly look never scores (or pays for) it twice.
    sa.UniqueConstraint("pair_id", "role", "scorer"),
    sa.Index(None, "scorer"),
)

# -- human review (migration 5) ------------------------------------------------------------------

ACTIVE_STATES = ("leased", "answered")
"""Assignment states that hold their slot (and the rater's one look at the item)."""

review_campaigns = sa.Table(
    "review_campaigns",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
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

review_items = sa.Table(
    "review_items",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("campaign_id", _BigIntId, sa.ForeignKey("review_campaigns.id"), nullable=False),
    sa.Column("item_key", sa.Text, nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("payload", JSONText, nullable=False),
    sa.Column("source", JSONText, nullable=False),
    sa.Column("gold", JSONText, nullable=True),
    sa.Column("is_attention_check", sa.Boolean, nullable=False),
    sa.UniqueConstraint("campaign_id", "item_key"),
    sa.Index(None, "campaign_id", "position"),
)

raters = sa.Table(
    "raters",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("campaign_id", _BigIntId, sa.ForeignKey("review_campaigns.id"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("pool", sa.Text, nullable=False),
    sa.Column("token_hash", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("excluded", sa.Boolean, nullable=False),
    sa.Column("excluded_reason", sa.Text, nullable=True),
    sa.Column("excluded_at", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("token_key", sa.Text, nullable=True),  # migration 6: last, as ALTER TABLE adds it
    sa.UniqueConstraint("campaign_id", "name"),
    sa.UniqueConstraint("token_hash"),
    sa.Index("uq_raters_token_key", "token_key", unique=True),
)

review_assignments = sa.Table(
    "review_assignments",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("item_id", _BigIntId, sa.ForeignKey("review_items.id"), nullable=False),
    sa.Column("rater_id", _BigIntId, sa.ForeignKey("raters.id"), nullable=False),
    # 1..k for a judgment that counts toward k; NULL for a repeat or a control item.
    sa.Column("slot", sa.Integer, nullable=True),
    sa.Column("is_repeat", sa.Boolean, nullable=False),
    sa.Column("swapped", sa.Boolean, nullable=True),  # pairwise: True shows b left, a right
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("leased_at", UTCDateTime, nullable=False),
    sa.Column("lease_expires_at", UTCDateTime, nullable=False),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Index(None, "rater_id", "state"),
    # The database itself refuses an over-assignment or a second look, whatever the query did.
    sa.Index(
        "uq_review_assignments_item_slot",
        "item_id",
        "slot",
        unique=True,
        sqlite_where=sa.text("state IN ('leased', 'answered')"),
        postgresql_where=sa.text("state IN ('leased', 'answered')"),
    ),
    sa.Index(
        "uq_review_assignments_item_rater",
        "item_id",
        "rater_id",
        unique=True,
        sqlite_where=sa.text("NOT is_repeat AND state IN ('leased', 'answered', 'skipped')"),
        postgresql_where=sa.text("NOT is_repeat AND state IN ('leased', 'answered', 'skipped')"),
    ),
)

review_judgments = sa.Table(
    "review_judgments",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("assignment_id", _BigIntId, sa.ForeignKey("review_assignments.id"), nullable=False),
    sa.Column("answers", JSONText, nullable=False),
    sa.Column("seconds", sa.Float, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("assignment_id"),
)

review_adjudications = sa.Table(
    "review_adjudications",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("item_id", _BigIntId, sa.ForeignKey("review_items.id"), nullable=False),
    sa.Column("rater_id", _BigIntId, sa.ForeignKey("raters.id"), nullable=False),
    sa.Column("answers", JSONText, nullable=False),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Index(None, "item_id"),
)
"""An adjudicator's decision on an item whose raters disagreed; the latest per item holds."""

review_sessions = sa.Table(
    "review_sessions",
    metadata,
    sa.Column("session_hash", sa.Text, primary_key=True),  # sha256 of the cookie's random id
    sa.Column("rater_id", _BigIntId, sa.ForeignKey("raters.id"), nullable=False),
    sa.Column("csrf_token", sa.Text, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)

fingerprint_looks = sa.Table(
    "fingerprint_looks",
    metadata,
    sa.Column("id", _BigIntId, primary_key=True, autoincrement=True),
    sa.Column("canary", sa.Text, nullable=False),
    sa.Column("reference_hash", sa.Text, nullable=False),
    sa.Column("ts", UTCDateTime, nullable=False),
    sa.Column("status", sa.Text, nullable=False),  # ok | failed
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("completions", JSONText, nullable=False),
    sa.Column("statistic", JSONText, nullable=True),
    sa.Column("design", JSONText, nullable=False),
    sa.Column("error", sa.Text, nullable=True),
    sa.Index(None, "canary", "ts"),
)
"""One look of a fingerprint canary (``docs/fingerprint-canary.md``): what the model answered
(probe id -> completions; partial for a failed look), the look's statistic (ok looks only),
the test's design (alpha, the reference's calibration half), and why a look failed."""

job_leases = sa.Table(
    "job_leases",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),
    sa.Column("acquired_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)
"""Who among several processes does a job (a gateway replica running the fingerprint canary),
until when unless renewed (``calipers.store._lease``)."""
