"""Where a campaign's items come from: a run, two runs on the same items, a built suite, the
gateway's traffic (all of it, or what the monitor finds uncovered) or a JSONL/CSV file.

Every source gives :class:`~calipers.store.ReviewItemRecord`\\ s whose ``payload`` holds only
what raters may see (single: ``prompt``, ``response``, ``reference`` when there is one;
pairwise: ``prompt``, ``a``, ``b``) and whose ``source`` says where each came from (run ids,
sample ids, model identities): the owner's, never sent to raters. Rows that cannot become an
item (no response, an error, a sample only one run has) are counted by reason, never dropped
silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from calipers.errors import ConfigError, DataError
from calipers.store import ReviewItemRecord, ReviewKind, SampleRecord, Store

__all__ = [
    "FILE_FIELDS",
    "SourceItems",
    "items_from_file",
    "items_from_run",
    "items_from_runs",
    "items_from_suite",
    "items_from_traffic",
]

FILE_FIELDS = ("prompt", "response", "reference", "a", "b")
"""What ``--field NAME=COLUMN`` can map in a file source."""


@dataclass
class SourceItems:
    """A source's items in source order, what it is (``source``, e.g. ``run:ab12``), and the
    rows that gave no item, counted by reason."""

    source: str
    items: list[ReviewItemRecord]
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _sample_key(s: SampleRecord) -> str:
    return f"{s.task}/{s.sample_id}" + (f"/{s.epoch}" if s.epoch else "")


def _usable(s: SampleRecord, out: SourceItems) -> bool:
    if s.error is not None:
        out.skip("the model call or scorer failed")
        return False
    if s.response is None:
        out.skip("no response")
        return False
    return True


def _run_samples(store: Store, run_id: str) -> tuple[Any, list[SampleRecord]]:
    """The run (a :class:`RunNotFoundError` names an unknown id) and its samples in order."""
    run = store.get_run(run_id)
    samples = sorted(store.get_samples(run.id), key=lambda s: (s.task, s.position, s.epoch))
    return run, samples


def _model(run: Any) -> dict[str, str]:
    return {"model": run.model, "model_name": run.model_name}


def _prompt(s: SampleRecord) -> str:
    """The prompt as a rater reads it: a lone user message is just its text (the "user:"
    label of a transcript says nothing there); anything else as reports show it."""
    from calipers.reports import prompt_text

    p = s.prompt
    msgs = p.get("messages") if isinstance(p, dict) else None
    lone = msgs[0] if isinstance(msgs, list) and len(msgs) == 1 else None
    user = isinstance(lone, dict) and lone.get("role") == "user"
    if user and isinstance(lone, dict) and isinstance(lone.get("content"), str):
        return str(lone["content"])
    return prompt_text(s)


def items_from_run(store: Store, run_id: str) -> SourceItems:
    """One single item per answered sample of the run."""
    run, samples = _run_samples(store, run_id)
    out = SourceItems(f"run:{run.id}", [])
    for s in samples:
        if not _usable(s, out):
            continue
        payload: dict[str, Any] = {"prompt": _prompt(s), "response": s.response}
        if s.target is not None:
            payload["reference"] = s.target
        source = {"run_id": run.id, "sample_id": s.sample_id, "task": s.task, "epoch": s.epoch}
        out.items.append(
            ReviewItemRecord(item_key=_sample_key(s), payload=payload, source=source | _model(run))
        )
    return out


def items_from_runs(store: Store, run_a: str, run_b: str) -> SourceItems:
    """One pairwise item per sample both runs answered (same task, sample id and epoch): the
    answer of ``run_a`` is ``a``, that of ``run_b`` is ``b``."""
    ra, sa_ = _run_samples(store, run_a)
    rb, sb = _run_samples(store, run_b)
    if ra.id == rb.id:
        raise ConfigError("A pairwise campaign needs two different runs.")
    out = SourceItems(f"runs:{ra.id},{rb.id}", [])
    by_key = {_sample_key(s): s for s in sb}
    shared = 0
    for s in sa_:
        other = by_key.pop(_sample_key(s), None)
        if other is None:
            out.skip("only in the first run")
            continue
        shared += 1
        if not (_usable(s, out) and _usable(other, out)):
            continue
        out.items.append(
            ReviewItemRecord(
                item_key=_sample_key(s),
                payload={"prompt": _prompt(s), "a": s.response, "b": other.response},
                source={
                    "task": s.task,
                    "sample_id": s.sample_id,
                    "epoch": s.epoch,
                    "a": {"run_id": ra.id} | _model(ra),
                    "b": {"run_id": rb.id} | _model(rb),
                },
            )
        )
    if by_key:
        out.skipped["only in the second run"] = len(by_key)
    if shared == 0:
        raise DataError(
            f"Runs {ra.id[:12]} and {rb.id[:12]} share no items (task, sample id, epoch).",
            hint="A pairwise campaign compares two runs of the same task.",
        )
    return out


def items_from_suite(name: str) -> SourceItems:
    """One single item per suite item with a reference answer (the logged answer): the
    conversation up to the query is the prompt. ``name`` may be ``NAME@vN``."""
    from calipers.suites import load_suite, parse_suite_ref

    suite, version = parse_suite_ref(name)
    manifest, items = load_suite(suite, version)
    out = SourceItems(f"suite:{manifest.name}@v{manifest.version}", [])
    for it in items:
        if it.reference is None:
            out.skip("no reference answer in the suite item")
            continue
        prompt = "\n".join(
            f"{t.role}: {t.content}" if len(it.turns) > 1 else t.content for t in it.turns
        )
        out.items.append(
            ReviewItemRecord(
                item_key=it.id,
                payload={"prompt": prompt, "response": it.reference},
                source={
                    "suite": manifest.name,
                    "version": manifest.version,
                    "item_id": it.id,
                    "record_id": it.source.record_id,
                    "reference_source": it.reference_source,
                    "cluster": it.cluster.name,
                },
            )
        )
    return out


def _arm(rec: Any) -> dict[str, Any]:
    return {"role": rec.role, "model": rec.model, "upstream": rec.upstream, "served": rec.served}


def _answered(rec: Any) -> bool:
    return rec is not None and rec.error is None and rec.response is not None


def items_from_traffic(
    store: Store,
    *,
    kind: ReviewKind,
    since: datetime | None,
    until: datetime | None,
    uncovered: Callable[[], Sequence[Any]] | None = None,
) -> SourceItems:
    """Items from the gateway's logged requests in ``[since, until)``, or from ``uncovered()``
    (the exchanges the monitor flags). Single: the answer the user was served; pairwise: the
    requests both models answered (shadow traffic), the baseline's answer as ``a``."""
    from calipers.monitor import load_exchanges

    exchanges = list(uncovered()) if uncovered else load_exchanges(store, since=since, until=until)
    out = SourceItems("traffic" + (" (uncovered)" if uncovered else ""), [])
    for ex in exchanges:
        source = {"pair_id": ex.pair_id, "ts": ex.ts.isoformat(), "mode": ex.mode}
        base, cand, served = ex.baseline, ex.candidate, ex.served
        if kind == "pairwise":
            if base is None or cand is None or not (_answered(base) and _answered(cand)):
                out.skip("not answered by both models (only shadow traffic has both)")
                continue
            payload = {"prompt": ex.prompt, "a": base.response, "b": cand.response}
            source |= {"a": _arm(base), "b": _arm(cand)}
        else:
            if served is None or not _answered(served):
                out.skip("no answer served (an error, or not logged)")
                continue
            payload = {"prompt": ex.prompt, "response": served.response}
            source |= _arm(served)
        out.items.append(ReviewItemRecord(item_key=ex.pair_id, payload=payload, source=source))
    return out


def _key_of(row: Mapping[str, Any], key: str | None, path: Path, line: int) -> str:
    if key is None:
        digest = hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()
        return f"{path.stem}-{digest[:12]}"
    value = row.get(key)
    if value is None or str(value).strip() == "":
        raise DataError(f"{path}:{line}: no value in the key column {key!r}.")
    return str(value).strip()


def _check_columns(
    path: Path, row: Mapping[str, Any], fields: Mapping[str, str], key: str | None
) -> None:
    wanted = [*fields.values(), *([key] if key else [])]
    missing = [c for c in wanted if c not in row]
    if missing:
        raise DataError(
            f"{path}: no column(s) {', '.join(map(repr, missing))}.",
            hint=f"The columns found are: {', '.join(map(repr, row))}. "
            "Map them with --field prompt=COLUMN --field response=COLUMN (and --key COLUMN).",
        )


def items_from_file(
    path: str | Path, *, kind: ReviewKind, fields: Mapping[str, str], key: str | None = None
) -> SourceItems:
    """Items from a JSONL, JSON or CSV file: ``fields`` maps ``prompt``, ``response``,
    ``reference`` (single) or ``a``, ``b`` (pairwise) to the file's columns (default: the
    same names); ``key`` names the column of each item's key (default: a digest of the row).
    Other columns go into the item's ``source``, never to raters."""
    from calipers.datasets import read_records

    p = Path(path)
    unknown = sorted(set(fields) - set(FILE_FIELDS))
    if unknown:
        raise ConfigError(
            f"Unknown --field {', '.join(map(repr, unknown))}.",
            hint=f"Fields: {', '.join(FILE_FIELDS)}.",
        )
    need = ("prompt", "a", "b") if kind == "pairwise" else ("prompt", "response")
    mapping = {f: fields.get(f, f) for f in need}
    if kind == "single" and "reference" in fields:
        mapping["reference"] = fields["reference"]
    out = SourceItems(f"file:{p.name}", [])
    seen: set[str] = set()
    for line, row in read_records(p):
        if not out.items and not out.skipped:
            _check_columns(p, row, mapping, key)
        item_key = _key_of(row, key, p, line)
        if item_key in seen:
            raise DataError(
                f"{p}:{line}: the key {item_key!r} is used twice.",
                hint="Choose a --key column whose values are unique.",
            )
        seen.add(item_key)
        payload = {n: row.get(c) for n, c in mapping.items() if n in need or row.get(c)}
        if any(payload[f] in (None, "") for f in need[1:]):
            out.skip("an empty answer")
            continue
        rest = {c: v for c, v in row.items() if c not in mapping.values()}
        out.items.append(
            ReviewItemRecord(
                item_key=item_key,
                payload=payload,
                source={"file": str(p), "line": line, "columns": mapping, "row": rest},
            )
        )
    return out
