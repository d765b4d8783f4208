"""Persistence for runs, samples, the response cache, gateway traffic and its online scores
(layer 3).

SQLite by default (``$CALIPERS_HOME/calipers.db`` or ``./.calipers/calipers.db``), PostgreSQL
by URL. SQLAlchemy Core, schema migrations applied on open. See ``docs/store.md``.

    with Store.open() as store:
        run = store.get_run("latest")
        samples = store.get_samples(run.id)
"""

from calipers.store._engine import default_sqlite_path
from calipers.store._records import (
    NOT_SENT_BREAKER_OPEN,
    RUN_STATUSES,
    TRAFFIC_ROLES,
    OnlineScoreRecord,
    RunRecord,
    RunStatus,
    SampleKey,
    SampleRecord,
    TrafficRecord,
    TrafficRole,
)
from calipers.store._store import Store

__all__ = [
    "NOT_SENT_BREAKER_OPEN",
    "RUN_STATUSES",
    "TRAFFIC_ROLES",
    "OnlineScoreRecord",
    "RunRecord",
    "RunStatus",
    "SampleKey",
    "SampleRecord",
    "Store",
    "TrafficRecord",
    "TrafficRole",
    "default_sqlite_path",
]
