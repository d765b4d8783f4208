"""Persistence for runs, samples, the response cache, gateway traffic and its online scores,
the fingerprint canary's looks, and human review campaigns with their assignment engine (layer 3).

SQLite by default (``$CALIPERS_HOME/calipers.db`` or ``./.calipers/calipers.db``), PostgreSQL
by URL. SQLAlchemy Core, schema migrations applied on open. See ``docs/store.md``.

    with Store.open() as store:
        run = store.get_run("latest")
        samples = store.get_samples(run.id)
"""

from calipers.store._columns import DoneKeys, SampleColumns
from calipers.store._engine import default_sqlite_path
from calipers.store._fingerprint import FingerprintLookRecord, LookStatus
from calipers.store._lease import JobLease, JobLeaseLostError
from calipers.store._rag import (
    MAX_RAG_CHARS,
    MAX_RAG_PASSAGES,
    RAG_FIELD,
    RagContext,
    RagFieldError,
    TrafficPassage,
    rag_of,
    read_rag,
)
from calipers.store._records import (
    ASSIGNMENT_STATES,
    NOT_SENT_BREAKER_OPEN,
    RATER_ROLES,
    REVIEW_KINDS,
    RUN_STATUSES,
    TRAFFIC_ROLES,
    AdjudicationRecord,
    AssignmentState,
    ImportedJudgment,
    JudgmentRecord,
    LeaseRecord,
    OnlineScoreRecord,
    RaterRecord,
    RaterRole,
    ReviewCampaignRecord,
    ReviewItemRecord,
    ReviewKind,
    ReviewSessionRecord,
    RunRecord,
    RunStatus,
    SampleKey,
    SampleRecord,
    TrafficRecord,
    TrafficRole,
)
from calipers.store._review import (
    LeaseClosedError,
    LeaseExpiredError,
    LeaseNotYoursError,
    RaterExcludedError,
    ReviewNotFoundError,
)
from calipers.store._store import Store
from calipers.store._traffic_stats import TrafficCounts

__all__ = [
    "ASSIGNMENT_STATES",
    "MAX_RAG_CHARS",
    "MAX_RAG_PASSAGES",
    "NOT_SENT_BREAKER_OPEN",
    "RAG_FIELD",
    "RATER_ROLES",
    "REVIEW_KINDS",
    "RUN_STATUSES",
    "TRAFFIC_ROLES",
    "AdjudicationRecord",
    "AssignmentState",
    "DoneKeys",
    "FingerprintLookRecord",
    "ImportedJudgment",
    "JobLease",
    "JobLeaseLostError",
    "JudgmentRecord",
    "LeaseClosedError",
    "LeaseExpiredError",
    "LeaseNotYoursError",
    "LeaseRecord",
    "LookStatus",
    "OnlineScoreRecord",
    "RagContext",
    "RagFieldError",
    "RaterExcludedError",
    "RaterRecord",
    "RaterRole",
    "ReviewCampaignRecord",
    "ReviewItemRecord",
    "ReviewKind",
    "ReviewNotFoundError",
    "ReviewSessionRecord",
    "RunRecord",
    "RunStatus",
    "SampleColumns",
    "SampleKey",
    "SampleRecord",
    "Store",
    "TrafficCounts",
    "TrafficPassage",
    "TrafficRecord",
    "TrafficRole",
    "default_sqlite_path",
    "rag_of",
    "read_rag",
]
