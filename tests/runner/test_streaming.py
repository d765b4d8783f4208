"""Bounded memory: summaries from columns equal the in-memory ones, and a plan is lazy.

The reference summary is the in-memory implementation calipers had before the summaries
were computed from columns (copied below as ``_reference``), run on planted records with
clusters, errors, epochs, categories, unscorable (NaN) values, a missing metric, retried
calls and tampering flags. The columnar path must give the identical ``RunSummary``
(estimates, bootstrap intervals included), from records and from a store (SQLite, and
PostgreSQL in a database of its own when ``CALIPERS_TEST_POSTGRES_URL`` is set).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from calipers._util.seeding import derived_rng
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun, make_plan, summarize_records, summarize_stored
from calipers.runner._plan import STREAM_ABOVE, PlannedSamples
from calipers.stats import bootstrap_mean, summarize
from calipers.store import RunRecord, SampleRecord, Store
from calipers.tasks import Task, data_hash
from calipers.types import (
    CallCounts,
    CategorySummary,
    RunSummary,
    Sample,
    TaskSummary,
    TopError,
)

# -- the reference: the in-memory summary as it was (main at f73908b) ------------------------


def _ref_estimate(recs: Any, metric: str, seed: int, confidence: float, *tag: str) -> Any:
    scored = [r for r in recs if r.error is None and r.scores and metric in r.scores]
    values = np.array([r.scores[metric] for r in scored if r.scores], dtype=float)
    cl = [r.cluster if r.cluster is not None else f"__item:{r.sample_id}" for r in scored]
    has_clusters = any(r.cluster is not None for r in scored) or len(set(cl)) < len(cl)
    return summarize(
        values,
        clusters=cl if has_clusters else None,
        rng=derived_rng(seed, metric, *tag),
        confidence=confidence,
    )


def _ref_top_error(recs: Any) -> Any:
    counts = Counter(r.error for r in recs if r.error is not None)
    if not counts:
        return None
    message, count = counts.most_common(1)[0]
    return TopError(message=message[:300], count=count)


def _ref_calls(recs: Any) -> Any:
    calls = [c for r in recs if (c := (r.score_details or {}).get("calls"))]
    return CallCounts(
        retries=sum(int(c.get("retries", 0)) for c in calls),
        samples_retried=sum(int(c.get("retries", 0)) > 0 for c in calls),
        rate_limited=sum(int(c.get("rate_limited", 0)) for c in calls),
        wait_s=round(sum(float(c.get("wait_s", 0.0)) for c in calls), 3),
    )


def _ref_tampering(r: Any) -> list[str]:
    found = []
    for d in (r.score_details or {}).values():
        if isinstance(d, dict) and isinstance(d.get("tampering"), list):
            found += [str(t) for t in d["tampering"]]
    return found


def _ref_task(task: str, recs: Any, metrics: Any, seed: int, confidence: float) -> Any:
    scored = [r for r in recs if r.error is None]
    errors = [r for r in recs if r.error is not None]
    if not metrics:
        metrics = list(next((r.scores for r in scored if r.scores), {}) or {})
    by_cat = defaultdict(list)
    for r in recs:
        by_cat[r.category or "(none)"].append(r)
    categories = {}
    if len(by_cat) > 1:
        for cat, crecs in sorted(by_cat.items()):
            categories[cat] = CategorySummary(
                n=len(crecs),
                n_errors=sum(r.error is not None for r in crecs),
                metrics={m: _ref_estimate(crecs, m, seed, confidence, task, cat) for m in metrics},
            )
    lat = np.array([r.latency_s for r in scored if r.latency_s is not None], dtype=float)
    return TaskSummary(
        primary=metrics[0] if metrics else None,
        n_samples=len(recs),
        n_scored=len(scored),
        n_errors=len(errors),
        n_cached=sum(bool(r.cached) for r in recs),
        metrics={m: _ref_estimate(recs, m, seed, confidence, task) for m in metrics},
        categories=categories,
        latency_s=bootstrap_mean(lat, derived_rng(seed, "latency", task), confidence=confidence),
        input_tokens=sum(r.input_tokens or 0 for r in recs),
        output_tokens=sum(r.output_tokens or 0 for r in recs),
        errors=tuple(sorted({(r.error or "").split(":")[0] for r in errors})),
        top_error=_ref_top_error(errors),
        calls=_ref_calls(recs),
        n_tampering=sum(bool(_ref_tampering(r)) for r in recs),
        tampering=tuple(sorted({t for r in recs for t in _ref_tampering(r)})),
    )


def _reference(records: Any, metrics: Any, seed: int, confidence: float) -> Any:
    by_task = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    tasks = {t: _ref_task(t, by_task.get(t, []), ms, seed, confidence) for t, ms in metrics.items()}
    return RunSummary(tasks=tasks, calls=_ref_calls(records))


# -- planted data -----------------------------------------------------------------------------

RUN = "run-streaming"
METRICS = {"alpha": ["acc", "score"], "beta": ["score"], "gamma": []}


def _planted(n_items: int = 700, seed: int = 7) -> list[SampleRecord]:
    """Three tasks: binary acc with clusters and 2 epochs; a continuous score with NaN and a
    missing metric; a task without declared metrics. Errors, retries and tampering mixed in."""
    rng = np.random.default_rng(seed)
    out: list[SampleRecord] = []
    when = datetime(2026, 12, 1, tzinfo=UTC)
    for task, epochs in (("alpha", 2), ("beta", 1), ("gamma", 1)):
        for i in range(n_items):
            for e in range(epochs):
                u = rng.random()
                error = None
                if u < 0.03:
                    error = "model: ModelCallError: boom"
                elif u < 0.05:
                    error = f"scorer: ValueError: bad {i % 3}"
                scores: dict[str, float] | None = None
                if error is None:
                    acc = float(rng.random() < 0.6)
                    score = float(rng.random()) if rng.random() > 0.05 else float("nan")
                    scores = {"acc": acc, "score": score}
                    if task == "beta" and i % 17 == 0:
                        scores = {"acc": acc}  # no value for "score"
                details: dict[str, object] = {"exact": {"explanation": "mentions calls"}}
                if i % 11 == 0:
                    details["calls"] = {"retries": 1 + i % 2, "rate_limited": i % 2, "wait_s": 0.1}
                if i % 29 == 0:
                    details["code"] = {"tampering": ["sys.exit"]}
                out.append(
                    SampleRecord(
                        run_id=RUN,
                        task=task,
                        sample_id=f"{task}-{i}",
                        position=i,
                        epoch=e,
                        prompt={"prompt": f"item {i}"},
                        category=None if i % 9 == 0 else f"cat{i % 4}",
                        cluster=f"c{i // 5}" if task == "alpha" else None,
                        scores=scores,
                        score_details=details,
                        latency_s=None if i % 13 == 0 else float(rng.random()),
                        input_tokens=int(rng.integers(1, 50)),
                        output_tokens=None if i % 7 == 0 else int(rng.integers(1, 9)),
                        cached=bool(i % 5 == 0),
                        error=error,
                        created_at=when,
                    )
                )
    return out


def _store_run(store: Store, records: Sequence[SampleRecord]) -> None:
    store.create_run(
        RunRecord(
            id=RUN,
            created_at=datetime(2026, 12, 1, tzinfo=UTC),
            finished_at=None,
            status="running",
            tasks=list(METRICS),
            methodology={"model": {"provider": "fake", "name": "x"}},
            methodology_hash="h",
            config={"model": "fake:x"},
            summary=None,
            calipers_version="test",
        )
    )
    for i in range(0, len(records), 1000):
        store.add_samples(records[i : i + 1000])


def test_columns_equal_the_in_memory_summary_from_records() -> None:
    records = _planted()
    expected = _reference(records, METRICS, 1234, 0.95)
    got = summarize_records(records, METRICS, seed=1234, confidence=0.95)
    assert got == expected
    # the planted features are there, so equality is not vacuous
    alpha = expected.tasks["alpha"]
    assert alpha.metrics["acc"].method.startswith("cluster")
    assert alpha.n_errors > 0 and alpha.top_error is not None and alpha.n_tampering > 0
    assert expected.tasks["beta"].metrics["score"].method.startswith("bootstrap")
    assert expected.calls is not None and expected.calls.retries > 0
    assert list(expected.tasks["gamma"].metrics) == ["acc", "score"]


def _pg_store() -> Iterator[Store]:
    """A store in a schema of its own on the test server (others use the same database)."""
    url = os.environ.get("CALIPERS_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("PostgreSQL: set CALIPERS_TEST_POSTGRES_URL")
    pytest.importorskip("psycopg")
    name = f"calipers_memory_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(url)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
    own = sa.make_url(url).update_query_dict({"options": f"-csearch_path={name}"})
    try:
        with Store.open(own.render_as_string(hide_password=False)) as store:
            yield store
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        with Store.open(f"sqlite:///{tmp_path / 's.db'}") as st:
            yield st
    else:
        yield from _pg_store()


def test_columns_from_the_store_equal_the_in_memory_summary(store: Store) -> None:
    records = _planted(n_items=400, seed=11)
    _store_run(store, records)
    expected = _reference(store.get_samples(RUN), METRICS, 99, 0.9)
    assert summarize_stored(store, RUN, METRICS, seed=99, confidence=0.9) == expected
    assert store.count_samples(RUN) == len(records)
    done = store.done_index(RUN)
    assert len(done) == sum(r.error is None for r in records)
    ok = next(r for r in records if r.error is None)
    bad = next(r for r in records if r.error is not None)
    assert ok.key in done and bad.key not in done and ("alpha", "nope", 0) not in done


# -- lazy plans -------------------------------------------------------------------------------


class _Counted(Sequence[Sample]):
    """A loader's items that count how many have been read."""

    def __init__(self, n: int) -> None:
        self.n, self.read = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        raise AssertionError("a lazy plan iterates; it does not index")

    def __iter__(self) -> Iterator[Sample]:
        for i in range(self.n):
            self.read += 1
            yield Sample(id=f"q{i}", input=f"say {i % 2}", target=str(i % 2))


def test_a_large_plan_is_built_as_it_is_iterated(monkeypatch: pytest.MonkeyPatch) -> None:
    from calipers.scorers import ScorerSpec, build_scorer

    n = STREAM_ABOVE + 5
    items = _Counted(n)
    task = Task(
        name="lazy",
        version="1",
        description="",
        kind="generate",
        load=lambda ctx: items,
        scorers=(build_scorer(ScorerSpec(name="exact_match")),),
    )
    monkeypatch.setattr("calipers.runner._plan.resolve_task", lambda name, f: [task])
    plan = make_plan(RunConfig(model="fake:echo", tasks=("lazy",)), FakeModel())
    pt = plan.tasks[0]
    assert isinstance(pt.samples, PlannedSamples) and len(pt.samples) == n == plan.total
    planned_reads = items.read  # the card's pass (and one item checked), nothing kept
    expected = [Sample(id=f"q{i}", input=f"say {i % 2}", target=str(i % 2)) for i in range(n)]
    assert pt.methodology.data_hash == data_hash(expected)
    it = iter(pt.samples)
    first = [next(it) for _ in range(3)]
    assert [p.sample.id for p in first] == ["q0", "q1", "q2"]
    assert items.read - planned_reads == 3  # three planned samples: three items read
    assert pt.samples[2].sample.id == "q2"


def test_a_small_plan_and_run_are_unchanged(tmp_path: Path) -> None:
    """Below the threshold a plan is a tuple, and a run's summary is the reference's."""
    spec = tmp_path / "t.yaml"
    rows = "".join(
        f'{{"id": "{i}", "question": "say {i % 3}", "answer": "{i % 2}", "c": "k{i % 3}"}}\n'
        for i in range(60)
    )
    (tmp_path / "t.jsonl").write_text(rows)
    spec.write_text(
        "name: t\ndata: t.jsonl\nfields: {input: question, target: answer, category: c}\n"
        "scorers: [exact_match]\n"
    )
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as st:
        cfg = RunConfig(model="fake:echo", tasks=(str(spec),))
        res = asyncio.run(arun(cfg, st, provider=FakeModel(lambda r: "1")))
        assert isinstance(make_plan(cfg, FakeModel()).tasks[0].samples, tuple)
        expected = _reference(
            st.get_samples(res.run_id),
            {"t": ["exact_match"]},
            res.methodology.seeds.bootstrap,
            0.95,
        )
    got = res.summary.model_copy(update={"elapsed_s": None})
    assert got == expected
    assert got.tasks["t"].metrics["exact_match"].value == 0.5  # 30 of 60 targets are "1"


def test_compare_from_columns_equals_compare_from_records(tmp_path: Path) -> None:
    """Two stored runs compared from the store (columns) give the same JSON as from their
    whole records (the path every caller used before)."""
    from calipers.analysis import StoredRun, compare, leaderboard, load_runs

    spec = tmp_path / "t.yaml"
    rows = "".join(
        f'{{"id": "{i}", "q": "say {i}", "a": "{i % 2}", "g": "g{i // 3}"}}\n' for i in range(90)
    )
    (tmp_path / "t.jsonl").write_text(rows)
    spec.write_text(
        "name: t\ndata: t.jsonl\nfields: {input: q, target: a, cluster: g}\n"
        "scorers: [exact_match]\n"
    )
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as st:
        cfg = RunConfig(model="fake:echo", tasks=(str(spec),))
        a = asyncio.run(arun(cfg, st, provider=FakeModel(lambda r: "1", name="a", fail_rate=0.1)))
        b = asyncio.run(arun(cfg, st, provider=FakeModel(lambda r: "0", name="b")))
        lazy = load_runs(st, [a.run_id, b.run_id])
        whole = [StoredRun(r.record, tuple(st.get_samples(r.record.id))) for r in lazy]
        new, old = compare(lazy), compare(whole)
        assert new.model_dump(mode="json") == old.model_dump(mode="json")
        assert new.rows[0].excluded["errors_a"] > 0 and new.rows[0].n > 0
        assert [x.model_dump(mode="json") for x in leaderboard(lazy)] == [
            x.model_dump(mode="json") for x in leaderboard(whole)
        ]
        assert "samples" not in lazy[0].__dict__  # the records were never read


def _ok(s: SampleRecord, task: str, metric: str) -> bool:
    ok = s.task == task and s.error is None and s.scores and metric in s.scores
    return bool(ok) and not np.isnan((s.scores or {})[metric])


def _ref_pair(a: Any, b: Any, task: str, metric: str) -> Any:
    """``analysis.pair`` as it was, on whole records (main at f73908b)."""

    def scored(samples: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in samples:
            if _ok(s, task, metric):
                out.setdefault(s.sample_id, s)
        return out

    def means(samples: Any) -> dict[str, float]:
        sums: dict[str, list[float]] = {}
        for s in samples:
            if _ok(s, task, metric):
                sums.setdefault(s.sample_id, []).append(s.scores[metric])
        return {i: float(np.mean(v)) for i, v in sums.items()}

    sa_, sb_ = scored(a), scored(b)
    ma, mb = means(a), means(b)
    order = {s.sample_id: (s.position, s.epoch) for s in a if s.task == task}
    ids = sorted(set(sa_) & set(sb_), key=lambda i: order.get(i, (0, 0)))
    return (
        ids,
        [ma[i] for i in ids],
        [mb[i] for i in ids],
        [sa_[i].cluster or f"__item:{i}" for i in ids],
        len(set(sa_) - set(sb_)),
        len(set(sb_) - set(sa_)),
    )


@pytest.mark.parametrize("metric", ["acc", "score"])
def test_pairing_from_columns_equals_pairing_from_records(metric: str, tmp_path: Path) -> None:
    """Three epochs per item (means of 3 values), NaN, errors and clusters: the columnar
    pairing gives the same ids, values (bit for bit), clusters and counts as the records'."""
    from calipers.analysis import StoredRun, pair

    def three_epochs(seed: int) -> list[SampleRecord]:
        recs = [r for r in _planted(n_items=300, seed=seed) if r.task == "alpha"]
        return recs + [r.model_copy(update={"epoch": 2}) for r in recs if r.epoch == 1]

    ra, rb = three_epochs(1), three_epochs(2)[40:]  # B lacks some items
    rec = RunRecord(
        id="x",
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        finished_at=None,
        status="finished",
        tasks=["alpha"],
        methodology={},
        methodology_hash="h",
        config={"model": "fake:x"},
        summary=None,
        calipers_version="t",
    )
    p = pair(StoredRun(rec, tuple(ra)), StoredRun(rec, tuple(rb)), "alpha", metric)
    ids, va, vb, clusters, only_a, only_b = _ref_pair(ra, rb, "alpha", metric)
    assert list(p.ids) == ids and len(ids) > 100
    assert p.a.tolist() == va and p.b.tolist() == vb
    assert list(p.clusters or ()) == clusters
    assert (p.only_a, p.only_b) == (only_a, only_b) and only_a > 0
