"""Closing the loop: flagged traffic becomes suite material or review work, with one command.

``to_suite``: the flagged requests are written as a JSON Lines log (one record per request:
its conversation up to the user's message, the served answer, the request id) under
``$CALIPERS_HOME/monitor/exports/`` and imported into the suite's pool with
:func:`calipers.suites.import_logs`, exactly as ``calipers suite import`` would (redaction runs
again; the gateway already redacted). ``calipers suite build NAME`` then makes the next version,
and ``calipers run -t suite:NAME`` evaluates it; ``build=True`` builds it right away.

``to_review``: one JSON object per line with the request id, the prompt, both arms' answers,
why it was flagged and its cluster, appended to a review queue file.

Nothing is lost: a request already in the suite's pool (same request id) or already in the
review file is skipped and counted, and every import skip comes back with its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from calipers._util.clock import utc_now
from calipers._util.home import make_folder
from calipers.monitor._novelty import Novelty, NoveltyItem
from calipers.monitor._traffic import messages_of
from calipers.store import TrafficRecord

if TYPE_CHECKING:
    from calipers.suites import Backend

__all__ = ["ExportResult", "export_to_review", "export_to_suite"]


@dataclass(frozen=True)
class ExportResult:
    kind: Literal["suite", "review"]
    target: str
    flagged: int
    exported: int
    skipped: dict[str, int] = field(default_factory=dict)
    path: str | None = None
    version: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "flagged": self.flagged,
            "exported": self.exported,
            "skipped": self.skipped,
            "path": self.path,
            "version": self.version,
            "notes": self.notes,
        }


def _cluster_names(novelty: Novelty) -> dict[int, str]:
    return {c.id: c.name for c in novelty.clusters}


def _conversation(item: NoveltyItem) -> list[dict[str, str]]:
    msgs = messages_of(item.exchange.request)
    if msgs is None:
        return [{"role": "user", "content": item.exchange.prompt}]
    last_user = max((i for i, (role, _t) in enumerate(msgs) if role == "user"), default=-1)
    keep = msgs[: last_user + 1] if last_user >= 0 else (*msgs, ("user", item.exchange.prompt))
    return [{"role": r, "content": t} for r, t in keep]


def export_to_suite(
    novelty: Novelty, name: str, *, build: bool = False, seed: int = 0, backend: Backend = "auto"
) -> ExportResult:
    """Import the flagged requests into suite ``name``'s pool (created if new); ``build``
    then builds the next version (every distinct pool record, clustered with ``backend``)."""
    from calipers.suites import FieldMapping, build_suite, import_logs, list_suites, read_pool

    have = {n for n, _v, _p in list_suites()}
    known = {r.source.record_id for r in read_pool(name)[0]} if name in have else set()
    skipped: dict[str, int] = {}
    rows = []
    for it in novelty.outliers:
        if it.exchange.pair_id in known:
            skipped["already in the suite's pool"] = (
                skipped.get("already in the suite's pool", 0) + 1
            )
            continue
        served = it.exchange.served
        rows.append(
            {
                "id": it.exchange.pair_id,
                "conversation": _conversation(it),
                "output": served.response if served is not None else None,
                "flagged": it.reason,
            }
        )
    if not rows:
        return ExportResult(
            "suite", name, len(novelty.outliers), 0, skipped, notes=["nothing new to export"]
        )
    from calipers.suites import suites_home

    folder = suites_home().parent / "monitor" / "exports"
    make_folder(folder, "the monitor's export folder", private=True)
    path = folder / f"{name}-{utc_now():%Y%m%dT%H%M%S%f}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    report = import_logs(
        path,
        name,
        fmt="jsonl",
        mapping=FieldMapping(id="id", conversation="conversation", output="output"),
    )
    for reason, n in report.skipped.items():
        skipped[reason] = skipped.get(reason, 0) + n
    version, notes = (
        None,
        [
            f"imported into the pool of suite {name!r}; "
            f"`calipers suite build {name}` makes the next version"
        ],
    )
    if build:
        result = build_suite(name, seed=seed, backend=backend)
        version = result.manifest.version
        notes = [f"built suite {name} v{version}" + (" (unchanged)" if result.unchanged else "")]
    return ExportResult(
        "suite", name, len(novelty.outliers), report.n_imported, skipped, str(path), version, notes
    )


def _arm(rec: TrafficRecord | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {
        "model": rec.model,
        "response": rec.response,
        "status": rec.status,
        "error": rec.error,
        "latency_ms": rec.latency_ms,
        "served": rec.served,
    }


def _review_row(item: NoveltyItem, cluster_name: str | None) -> dict[str, Any]:
    ex = item.exchange
    return {
        "pair_id": ex.pair_id,
        "ts": ex.ts.isoformat(),
        "mode": ex.mode,
        "prompt": ex.prompt,
        "messages": _conversation(item),
        "baseline": _arm(ex.baseline),
        "candidate": _arm(ex.candidate),
        "why": item.reason,
        "similarity": item.similarity,
        "p_value": item.p_value,
        "cluster": None if item.cluster is None else {"id": item.cluster, "name": cluster_name},
        "flagged_at": utc_now().isoformat(timespec="seconds"),
    }


def _existing_ids(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    ids = set()
    for line in path.read_text("utf-8").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("pair_id"), str):
            ids.add(obj["pair_id"])
    return ids


def export_to_review(novelty: Novelty, path: str | Path) -> ExportResult:
    """Append the flagged requests to the review queue ``path`` (JSON Lines)."""
    p = Path(path)
    known = _existing_ids(p)
    names = _cluster_names(novelty)
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for it in novelty.outliers:
        if it.exchange.pair_id in known:
            skipped["already in the review queue"] = (
                skipped.get("already in the review queue", 0) + 1
            )
            continue
        rows.append(_review_row(it, None if it.cluster is None else names.get(it.cluster)))
    if rows:
        make_folder(p.parent, f"the folder of {p.name}")
        with p.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return ExportResult("review", str(p), len(novelty.outliers), len(rows), skipped, str(p))
