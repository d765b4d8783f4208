"""Import logs into a suite's pool, and build a versioned suite from the pool:
dedupe -> cluster -> stratified sample -> profile -> immutable version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calipers._util.clock import utc_now
from calipers._util.environment import calipers_version
from calipers._util.redact import Redactor
from calipers.errors import ConfigError, DataError
from calipers.suites._cluster import Backend, Clustering, cluster_texts
from calipers.suites._dedupe import DedupeResult, dedupe
from calipers.suites._import import DEFAULT_MAX_CHARS, LogFormat, OnLong, import_file
from calipers.suites._profile import compare_profiles
from calipers.suites._raw import FieldMapping
from calipers.suites._records import ImportReport, LogRecord
from calipers.suites._sample import stratified_sample
from calipers.suites._suite import (
    ClusterInfo,
    ClusterRef,
    Manifest,
    SizeRationale,
    SuiteItem,
    add_to_pool,
    check_name,
    json_safe,
    read_pool,
    save_version,
)

__all__ = ["BuildResult", "References", "build_suite", "import_logs", "too_small_note"]

References = Literal["accepted", "logged", "none"]


def import_logs(
    path: str | Path,
    name: str,
    *,
    fmt: LogFormat | None = None,
    mapping: FieldMapping | None = None,
    redactor: Redactor | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    on_long: OnLong = "truncate",
    replace: bool = False,
) -> ImportReport:
    """Import one log file into suite ``name``'s pool (redacted before it is written)."""
    check_name(name)
    records, report = import_file(
        path, fmt=fmt, mapping=mapping, redactor=redactor, max_chars=max_chars, on_long=on_long
    )
    report.imported_at = utc_now().isoformat()
    add_to_pool(name, records, report, replace=replace)
    return report


@dataclass(frozen=True)
class BuildResult:
    """``unchanged``: the items hash as the latest version's, which ``manifest`` then is (no
    new version); ``size`` is this build's size rationale either way."""

    manifest: Manifest
    items: list[SuiteItem]
    unchanged: bool
    size: SizeRationale


def too_small_note(delta: float, needed: int, available: int) -> str:
    return (
        f"too small for delta={delta:g}: needs {needed:,} items, the pool has "
        f"{available:,} distinct ones; a difference of {delta:.1%} cannot be detected "
        "reliably on it"
    )


def _reference(
    group: Sequence[LogRecord], policy: References
) -> tuple[str | None, Literal["logged-accepted", "logged"] | None]:
    if policy == "none":
        return None, None
    for r in group:
        if r.accepted and r.answer and r.answer.strip():
            return r.answer, "logged-accepted"
    if policy == "logged":
        for r in group:
            if r.answer and r.answer.strip() and r.accepted is not False:
                return r.answer, "logged"
    return None, None


def _size(size: SizeRationale | None, available: int) -> SizeRationale:
    if size is None:
        return SizeRationale(method="all", available=available, chosen=available)
    want = size.requested or available
    s = size.model_copy(update={"available": available, "chosen": min(want, available)})
    if size.method == "plan" and want > available:
        s = s.model_copy(
            update={
                "too_small": True,
                "notes": [*s.notes, too_small_note(size.delta or 0.0, want, available)],
            }
        )
    elif want > available:
        s = s.model_copy(
            update={
                "notes": [
                    *s.notes,
                    f"{want:,} items asked for, the pool has {available:,}: all taken",
                ]
            }
        )
    return s


def _clusters(
    records: list[LogRecord], d: DedupeResult, c: Clustering, chosen: set[int]
) -> tuple[list[int], list[ClusterInfo]]:
    """Cluster of every traffic record, and per-cluster counts."""
    traffic = [0] * len(records)
    for g, lab in zip(d.groups, c.labels, strict=True):
        for i in g:
            traffic[i] = lab
    info = []
    for k in range(c.k):
        info.append(
            ClusterInfo(
                id=k,
                name=c.names[k],
                traffic=traffic.count(k),
                unique=c.labels.count(k),
                in_suite=sum(1 for j in chosen if c.labels[j] == k),
            )
        )
    return traffic, info


def _fields(
    reports: list[ImportReport],
    n_traffic: int,
    d: DedupeResult,
    c: Clustering,
    threshold: float,
    info: list[ClusterInfo],
    seed: int,
    floor: int,
    size: SizeRationale,
    references: References,
    items: list[SuiteItem],
    profile: dict[str, Any],
) -> dict[str, Any]:
    """The manifest's fields other than name, version and hash."""
    n_ref = sum(i.reference is not None for i in items)
    return dict(
        created_at=utc_now().isoformat(),
        sources=[{"file": r.file, "sha256": r.sha256, "format": r.format} for r in reports],
        imports=[
            r.model_dump(
                mode="json",
                include={
                    "file",
                    "sha256",
                    "n_read",
                    "n_imported",
                    "skipped",
                    "n_truncated",
                    "redactions",
                    "n_redacted_records",
                },
            )
            for r in reports
        ],
        dedupe={
            "n_traffic": n_traffic,
            "n_exact": d.n_exact,
            "n_near": d.n_near,
            "n_unique": len(d.groups),
            "threshold": threshold,
            "method": "exact on normalised text; near: Jaccard of character 5-gram "
            "shingles, MinHash-LSH candidates (128 permutations, 32 bands) "
            "confirmed exactly",
        },
        clustering=json_safe(
            {
                "backend": c.backend,
                "k": c.k,
                "silhouette": c.silhouette,
                "silhouette_by_k": {str(k): v for k, v in c.tried.items()},
                "notes": c.notes,
            }
        ),
        clusters=info,
        seed=seed,
        floor=floor,
        size=size,
        references={
            "policy": references,
            "n_with_reference": n_ref,
            "n_without_reference": len(items) - n_ref,
        },
        profile=json_safe(profile),
        calipers_version=calipers_version(),
    )


def build_suite(
    name: str,
    *,
    size: SizeRationale | None = None,
    floor: int = 2,
    threshold: float = 0.8,
    clusters: int | None = None,
    backend: Backend = "auto",
    seed: int = 0,
    references: References = "accepted",
) -> BuildResult:
    """Build the next version of suite ``name`` from its pool (see the module docstring).
    ``size`` says how many items and why (None: every distinct record)."""
    records, reports = read_pool(name)
    if not records:
        raise DataError(
            f"Suite {name!r} has no imported records.",
            hint=f"Import logs first: calipers suite import FILE --name {name}",
        )
    if floor < 1:
        raise ConfigError(f"--floor must be at least 1, got {floor}.")
    d = dedupe([r.user_text for r in records], threshold=threshold)
    reps = d.representatives
    c = cluster_texts([records[i].user_text for i in reps], k=clusters, backend=backend, seed=seed)
    rationale = _size(size, len(reps))
    picked = stratified_sample(
        c.labels, [len(g) for g in d.groups], rationale.chosen, floor, np.random.default_rng(seed)
    )
    if len(picked) > rationale.chosen:
        rationale = rationale.model_copy(
            update={
                "notes": [
                    *rationale.notes,
                    f"{len(picked) - rationale.chosen} item(s) added to keep at "
                    f"least {floor} per cluster (or all of a smaller cluster)",
                ]
            }
        )
    traffic_labels, info = _clusters(records, d, c, set(picked))
    items = []
    for j in picked:
        group = [records[i] for i in d.groups[j]]
        rep = group[0]
        ref, ref_src = _reference(group, references)
        items.append(
            SuiteItem(
                id=rep.id,
                turns=rep.turns,
                reference=ref,
                reference_source=ref_src,
                source=rep.source,
                cluster=ClusterRef(id=c.labels[j], name=c.names[c.labels[j]]),
                duplicates=len(group),
                truncated=rep.truncated,
            )
        )
    suite_records = [records[d.groups[j][0]] for j in picked]
    profile = compare_profiles(
        records, suite_records, traffic_labels, [c.labels[j] for j in picked]
    )
    fields = _fields(
        reports,
        len(records),
        d,
        c,
        threshold,
        info,
        seed,
        floor,
        rationale,
        references,
        items,
        profile,
    )
    manifest, unchanged = save_version(name, items, fields)
    return BuildResult(manifest, items, unchanged, rationale)
