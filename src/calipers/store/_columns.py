"""A run's samples as columns: what summaries and paired comparisons need, nothing more.

A run of a million samples does not fit in memory as records (each carries its prompt, its
response and its scorers' details), but its summary needs only a few numbers per sample. The
store reads those columns in chunks (``CHUNK`` rows at a time), straight into numpy arrays:
ids, position, epoch, category, cluster, error, the scores (one float array per metric), the
latency, the token counts and whether the response came from the cache. Scorer details are
read only for the rows whose details mention retried calls or tampering (a text pre-filter
in SQL; the exact test is the reader's), so they cost nothing on the common row.

Rows come in record order (task, position, epoch), as :meth:`Store.get_samples` returns them,
so anything computed from the columns sees the values in the same order as from the records.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from calipers.store._engine import read_transaction
from calipers.store._records import SampleRecord
from calipers.store._schema import samples

__all__ = ["CHUNK", "ColumnStore", "DoneKeys", "SampleColumns", "read_columns", "read_records"]

CHUNK = 20_000
"""Rows fetched per round trip when reading columns."""

_DETAIL_MARKS = ('"calls"', '"tampering"')  # keys whose rows' details the summary reads

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]


@dataclass(frozen=True)
class SampleColumns:
    """The samples of one task of one run, one array per field, in record order.

    ``scores[m]`` is NaN where the row has no value for ``m`` (an error, or a scorer that did
    not give it); ``has_score[m]`` tells a missing value from a stored NaN ("unscorable").
    ``first_metrics`` are the metric names of the first scored row, in its order.
    ``details`` maps a row's index to its scorer details, only for rows whose details hold
    retried calls or tampering flags.
    """

    task: str
    sample_id: ObjArray
    position: IntArray
    epoch: IntArray
    category: ObjArray
    cluster: ObjArray
    error: ObjArray
    scores: dict[str, FloatArray]
    has_score: dict[str, BoolArray]
    latency_s: FloatArray
    input_tokens: IntArray
    output_tokens: IntArray
    cached: BoolArray
    first_metrics: tuple[str, ...] = ()
    details: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.sample_id.size)

    @functools.cached_property
    def ok(self) -> BoolArray:
        """Rows stored without an error (computed once)."""
        return np.array([e is None for e in self.error], dtype=bool)

    @classmethod
    def from_records(cls, task: str, records: Iterable[SampleRecord]) -> SampleColumns:
        """The columns of ``task``'s records (other tasks' records are skipped)."""
        acc = _Accumulator(task)
        acc.add(
            (
                r.sample_id,
                r.position,
                r.epoch,
                r.category,
                r.cluster,
                r.error,
                None if r.scores is None else json.dumps(r.scores),
                r.latency_s,
                r.input_tokens,
                r.output_tokens,
                r.cached,
                r.score_details if _has_marks(r.score_details) else None,
            )
            for r in records
            if r.task == task
        )
        return acc.finish()


def _has_marks(details: dict[str, Any] | None) -> bool:
    if not details:
        return False
    if "calls" in details:
        return True
    return any(isinstance(d, dict) and "tampering" in d for d in details.values())


class _Accumulator:
    """Collects rows chunk by chunk into numpy arrays, one list of chunk arrays per column (no
    per-row Python objects kept beyond the ids, categories, clusters and errors).

    Rows are raw tuples as the database driver gives them: the scores as their JSON text, the
    details as JSON text (or already decoded), ``cached`` as 0/1 or a bool. The scores are
    parsed once per distinct text in a chunk (a binary metric has a handful of distinct texts
    in a million rows) and spread over the rows by index arrays.
    """

    def __init__(self, task: str) -> None:
        self.task = task
        self.n = 0
        self.ids: list[Any] = []
        self.pos: list[IntArray] = []
        self.epoch: list[IntArray] = []
        self.cat: list[Any] = []
        self.cluster: list[Any] = []
        self.error: list[Any] = []
        self.lat: list[FloatArray] = []
        self.tin: list[IntArray] = []
        self.tout: list[IntArray] = []
        self.cached: list[BoolArray] = []
        self.scores: dict[str, list[FloatArray]] = {}
        self.present: dict[str, list[BoolArray]] = {}
        self.first: tuple[str, ...] | None = None
        self.details: dict[int, dict[str, Any]] = {}
        self._intern: dict[str, str] = {}
        self._memo: dict[str, dict[str, float] | None] = {}

    def _interned(self, xs: Sequence[str | None]) -> list[str | None]:
        """One string object per distinct category/cluster/error text."""
        keep = self._intern.setdefault
        return [None if x is None else keep(x, x) for x in xs]

    def _parsed(self, x: str | None) -> dict[str, float] | None:
        """A distinct scores text parsed (kept for later chunks, up to 100,000 texts)."""
        if x is None:
            return None
        d = self._memo.get(x)
        if d is None:
            d = json.loads(x)
            if len(self._memo) < 100_000:
                self._memo[x] = d
        return d

    def add(self, rows: Iterable[Sequence[Any]]) -> None:
        """Append a chunk of rows (column by column, not row by row)."""
        chunk = list(rows)
        if not chunk:
            return
        sid, pos, ep, cat, cl, err, sc, lat, tin, tout, cached, det = zip(*chunk, strict=True)
        i0, k = self.n, len(chunk)
        self.ids.extend(sid)
        self.pos.append(np.array(pos, dtype=np.int64))
        self.epoch.append(np.array(ep, dtype=np.int64))
        self.cat.extend(self._interned(cat))
        self.cluster.extend(self._interned(cl))
        errors = self._interned(err)
        self.error.extend(errors)
        self.lat.append(np.array(lat, dtype=np.float64))  # None -> NaN
        self.tin.append(np.array([x or 0 for x in tin], dtype=np.int64))
        self.tout.append(np.array([x or 0 for x in tout], dtype=np.int64))
        self.cached.append(np.array([bool(x) for x in cached], dtype=bool))
        local: dict[str | None, int] = {}
        code = local.setdefault
        codes = np.array([code(x, len(local)) for x in sc], dtype=np.intp)
        parsed = [self._parsed(t) for t in local]  # distinct texts, in order of appearance
        if self.first is None:
            truthy = np.array([bool(d) for d in parsed], dtype=bool)[codes]
            hit = np.flatnonzero(truthy & np.array([e is None for e in err], dtype=bool))
            if hit.size:
                d = parsed[int(codes[hit[0]])]
                self.first = tuple(d or ())
        for d in parsed:  # metrics first seen here: earlier rows have no value for them
            for m in d or ():
                if m not in self.scores:
                    self.scores[m] = [np.full(i0, np.nan)]
                    self.present[m] = [np.zeros(i0, dtype=bool)]
        for m, col in self.scores.items():
            vals = np.array([d[m] if d and m in d else np.nan for d in parsed], dtype=np.float64)
            has = np.array([d is not None and m in d for d in parsed], dtype=bool)
            col.append(vals[codes])
            self.present[m].append(has[codes])
        for j, x in enumerate(det):
            if x is None:
                continue
            d = json.loads(x) if isinstance(x, str) else x
            if d is not None and _has_marks(d):
                self.details[i0 + j] = d
        self.n += k

    def finish(self) -> SampleColumns:
        def obj(xs: list[Any]) -> ObjArray:
            a = np.empty(len(xs), dtype=object)
            a[:] = xs
            return a

        def cat(parts: list[Any], dtype: Any) -> Any:
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        return SampleColumns(
            task=self.task,
            sample_id=obj(self.ids),
            position=cat(self.pos, np.int64),
            epoch=cat(self.epoch, np.int64),
            category=obj(self.cat),
            cluster=obj(self.cluster),
            error=obj(self.error),
            scores={m: cat(v, np.float64) for m, v in self.scores.items()},
            has_score={m: cat(v, bool) for m, v in self.present.items()},
            latency_s=cat(self.lat, np.float64),
            input_tokens=cat(self.tin, np.int64),
            output_tokens=cat(self.tout, np.int64),
            cached=cat(self.cached, bool),
            first_metrics=self.first or (),
            details=self.details,
        )


def _details_if_marked() -> sa.ColumnElement[Any]:
    text = sa.type_coerce(samples.c.score_details, sa.Text)
    marked = sa.or_(*(text.contains(m, autoescape=True) for m in _DETAIL_MARKS))
    return sa.case((marked, samples.c.score_details), else_=sa.null()).label("details")


def _ordered(stmt: sa.Select[Any]) -> sa.Select[Any]:
    return stmt.order_by(samples.c.task, samples.c.position, samples.c.epoch)


def read_columns(engine: Engine, run_id: str, task: str) -> SampleColumns:
    """``task``'s samples of ``run_id`` as columns, read ``CHUNK`` rows at a time from the
    driver's cursor itself (plain tuples: no result rows built, no JSON decoded per row)."""
    stmt = _ordered(
        sa.select(
            samples.c.sample_id,
            samples.c.position,
            samples.c.epoch,
            samples.c.category,
            samples.c.cluster,
            samples.c.error,
            sa.type_coerce(samples.c.scores, sa.Text),  # parsed by the reader, per text
            samples.c.latency_s,
            samples.c.input_tokens,
            samples.c.output_tokens,
            samples.c.cached,
            sa.type_coerce(_details_if_marked(), sa.Text),
        ).where(samples.c.run_id == run_id, samples.c.task == task)
    )
    acc = _Accumulator(task)
    with read_transaction(engine) as conn:
        for part in _raw_chunks(conn, stmt):
            acc.add(part)
    return acc.finish()


def _raw_chunks(conn: Connection, stmt: sa.Select[Any]) -> Iterator[Sequence[Any]]:
    """``stmt``'s rows as the driver gives them (plain tuples, no type processing),
    ``CHUNK`` at a time; a server-side cursor on PostgreSQL, so rows stay in the server."""
    compiled = stmt.compile(dialect=conn.dialect)
    params = compiled.construct_params()
    args: Any = (
        tuple(params[k] for k in compiled.positiontup or ()) if conn.dialect.positional else params
    )
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    named = conn.dialect.name == "postgresql"
    cursor = dbapi.cursor(name="calipers_columns") if named else dbapi.cursor()
    try:
        cursor.execute(str(compiled), args)
        while part := cursor.fetchmany(CHUNK):
            yield part
    finally:
        cursor.close()


def read_records(
    engine: Engine, run_id: str, task: str | None = None
) -> Iterator[list[SampleRecord]]:
    """The samples of ``run_id`` as whole records, ``CHUNK`` at a time, in record order."""
    stmt = sa.select(samples).where(samples.c.run_id == run_id)
    if task is not None:
        stmt = stmt.where(samples.c.task == task)
    with read_transaction(engine) as conn:
        result = conn.execution_options(yield_per=CHUNK).execute(_ordered(stmt))
        for part in result.partitions():
            yield [SampleRecord.model_validate(row._asdict()) for row in part]


class DoneKeys:
    """The ``(task, sample_id, epoch)`` keys of a run's finished samples, held as one sorted
    numpy array of encoded keys (a few bytes each, not a Python tuple each): what a resumed
    run skips, at a million samples included. ``key in done`` and ``len(done)`` as a set."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._keys = np.unique(np.array(list(keys), dtype=np.bytes_))

    @staticmethod
    def encode(task: str, sample_id: str, epoch: int) -> bytes:
        return f"{task}\x1f{sample_id}\x1f{epoch}".encode()

    def __len__(self) -> int:
        return int(self._keys.size)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 3 or not self._keys.size:
            return False
        k = np.bytes_(self.encode(*key))
        i = int(np.searchsorted(self._keys, k))
        return i < self._keys.size and bytes(self._keys[i]) == bytes(k)


class ColumnStore:
    """The store's column readers (a mixin of :class:`~calipers.store.Store`)."""

    _engine: Engine

    def sample_columns(self, run_id: str, task: str) -> SampleColumns:
        """The samples of ``task`` in run ``run_id`` (exact id) as :class:`SampleColumns`,
        read in chunks: a million samples take a few hundred MB, not gigabytes."""
        return read_columns(self._engine, run_id, task)

    def iter_samples(self, run_id: str, *, task: str | None = None) -> Iterator[list[SampleRecord]]:
        """The samples of ``run_id`` (as :meth:`get_samples`), a chunk of records at a time."""
        return read_records(self._engine, run_id, task)

    def get_samples_at(
        self, run_id: str, task: str, keys: Sequence[tuple[str, int]]
    ) -> list[SampleRecord]:
        """The records of ``task`` in ``run_id`` whose ``(sample_id, epoch)`` is in ``keys``,
        in the order of ``keys`` (keys not stored are left out)."""
        found: dict[tuple[str, int], SampleRecord] = {}
        ids = sorted({k[0] for k in keys})
        with read_transaction(self._engine) as conn:
            for i in range(0, len(ids), 500):
                stmt = sa.select(samples).where(
                    samples.c.run_id == run_id,
                    samples.c.task == task,
                    samples.c.sample_id.in_(ids[i : i + 500]),
                )
                for row in conn.execute(stmt):
                    rec = SampleRecord.model_validate(row._asdict())
                    found[(rec.sample_id, rec.epoch)] = rec
        return [found[k] for k in keys if k in found]

    def count_samples(self, run_id: str, *, done: bool = False) -> int:
        """How many samples ``run_id`` has stored (``done``: only those without error)."""
        stmt = sa.select(sa.func.count()).where(samples.c.run_id == run_id)
        if done:
            stmt = stmt.where(samples.c.error.is_(None))
        with read_transaction(self._engine) as conn:
            return int(conn.scalar(stmt) or 0)

    def done_index(self, run_id: str) -> DoneKeys:
        """:meth:`done_keys` held compactly (:class:`DoneKeys`), read in chunks."""
        stmt = sa.select(samples.c.task, samples.c.sample_id, samples.c.epoch).where(
            samples.c.run_id == run_id, samples.c.error.is_(None)
        )
        parts: list[npt.NDArray[np.bytes_]] = []
        with read_transaction(self._engine) as conn:
            result = conn.execution_options(yield_per=CHUNK).execute(stmt)
            for part in result.partitions():
                enc = [DoneKeys.encode(t, s, int(e)) for t, s, e in part]
                parts.append(np.array(enc, dtype=np.bytes_))
        done = DoneKeys()
        if parts:
            width = max(p.dtype.itemsize for p in parts)
            done._keys = np.unique(np.concatenate([p.astype(f"S{width}") for p in parts]))
        return done
