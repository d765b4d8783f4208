"""Suites built from production logs: import (redacted), dedupe, cluster by intent, sample
stratified by cluster, version, and run as a task (``calipers run -t suite:NAME``).

See ``docs/suites.md``.
"""

from calipers._util.redact import RedactConfig, Redactor, luhn_ok
from calipers.suites._build import BuildResult, References, build_suite, import_logs
from calipers.suites._cluster import Backend, Clustering, cluster_texts
from calipers.suites._dedupe import DedupeResult, MinHasher, dedupe, estimate_jaccard, jaccard
from calipers.suites._import import (
    DEFAULT_MAX_CHARS,
    FORMATS,
    LogFormat,
    detect_format,
    import_file,
    register_parser,
)
from calipers.suites._rag_traces import (
    RAG_KEY,
    rag_items_from_otel,
    rag_items_from_traffic,
    rag_records_from_otel,
    rag_records_from_traffic,
    write_rag_jsonl,
)
from calipers.suites._raw import FieldMapping
from calipers.suites._records import ImportReport, LogRecord, Skip, Source, Turn
from calipers.suites._sample import allocate, stratified_sample
from calipers.suites._suite import (
    Manifest,
    SizeRationale,
    SuiteItem,
    content_hash,
    list_suites,
    load_suite,
    read_pool,
    suites_home,
    versions,
)
from calipers.suites._task import PREFIX, parse_suite_ref, suite_task

__all__ = [
    "DEFAULT_MAX_CHARS",
    "FORMATS",
    "PREFIX",
    "RAG_KEY",
    "Backend",
    "BuildResult",
    "Clustering",
    "DedupeResult",
    "FieldMapping",
    "ImportReport",
    "LogFormat",
    "LogRecord",
    "Manifest",
    "MinHasher",
    "RedactConfig",
    "Redactor",
    "References",
    "SizeRationale",
    "Skip",
    "Source",
    "SuiteItem",
    "Turn",
    "allocate",
    "build_suite",
    "cluster_texts",
    "content_hash",
    "dedupe",
    "detect_format",
    "estimate_jaccard",
    "import_file",
    "import_logs",
    "jaccard",
    "list_suites",
    "load_suite",
    "luhn_ok",
    "parse_suite_ref",
    "rag_items_from_otel",
    "rag_items_from_traffic",
    "rag_records_from_otel",
    "rag_records_from_traffic",
    "read_pool",
    "register_parser",
    "stratified_sample",
    "suite_task",
    "suites_home",
    "versions",
    "write_rag_jsonl",
]
