"""MT-Bench-101: the loader against the raw file (counted independently), the golden history
reaching the model, per-turn judge scores recovered exactly, the benchmark's aggregation
(dialogue = worst turn, overall = mean over abilities), judge failures as errors, and a clear
error when no judge is named."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import CalipersError
from calipers.models import FakeModel
from calipers.runner import run
from calipers.store import Store
from calipers.tasks import LoadContext, resolve_task
from calipers.tasks.benchmarks.mt_bench_101 import ABILITIES, NEED_REFERENCE, SKIP_FIRST, overall
from calipers.types import ModelRequest
from tests._data import DATA, needs_data

from . import conftest
from .conftest import MTB_FILE, RAW, turn_score

pytestmark = needs_data(MTB_FILE)


def raw_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in RAW.read_text(encoding="utf-8").splitlines() if line]


def test_loader_matches_the_raw_file() -> None:
    rows = raw_rows()
    samples = resolve_task("mt_bench_101")[0].load(LoadContext(data_dir=DATA))
    assert len(rows) == len(samples) == 1388  # the paper's count
    assert Counter(r["task"] for r in rows) == Counter(s.category for s in samples)
    assert len({r["task"] for r in rows}) == 13 and set(ABILITIES) == {r["task"] for r in rows}
    by_id = {s.id: s for s in samples}
    for r in rows:
        s = by_id[f"{r['task']}-{r['id']}"]
        assert [t["user"] for t in s.fields["turns"]] == [t["user"] for t in r["history"]]
        assert [t["bot"] for t in s.fields["turns"]] == [t["bot"] for t in r["history"]]
        assert s.fields["first_judged"] == (1 if r["task"] in SKIP_FIRST else 0)
    # turns per dialogue, as in the file: 2 to 7, 4,208 in all
    assert sum(len(r["history"]) for r in rows) == 4208
    assert Counter(len(s.fields["turns"]) for s in samples) == Counter(
        len(r["history"]) for r in rows
    )
    # a --limit spreads over abilities (hash order, not file order)
    assert len({s.category for s in samples[:60]}) >= 10


def _run(tmp_path: Path, judge: str, limit: int, model: FakeModel) -> tuple[str, list[Any]]:
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        res = run(model, f"mt_bench_101:{judge}", store=store, data_dir=str(DATA), limit=limit)
        return res.run_id, store.get_samples(res.run_id)


def test_the_golden_history_reaches_the_model_and_each_turn_is_judged(tmp_path: Path) -> None:
    seen: list[tuple[list[str], list[str]]] = []

    def model(req: ModelRequest) -> str:
        msgs = req.messages or ()
        users = [m.content for m in msgs if m.role == "user"]
        seen.append((users, [m.content for m in msgs if m.role == "assistant"]))
        return f"MODEL REPLY {len(users)}: " + users[-1][:20]

    conftest.CALLS.clear()
    _rid, recs = _run(tmp_path, "mtbjudge:hashed", 60, FakeModel(model))
    samples = {s.id: s for s in resolve_task("mt_bench_101")[0].load(LoadContext(data_dir=DATA))}
    assert len(recs) == 60 and all(r.error is None for r in recs)
    n_judged = 0
    for r in recs:
        s = samples[r.sample_id]
        turns, first = s.fields["turns"], s.fields["first_judged"]
        for k in range(first, len(turns)):
            users = [t["user"] for t in turns[: k + 1]]
            golden = [t["bot"] for t in turns[:k]]
            # the model answering turn k saw every earlier reference reply, never its own
            assert (users, golden) in seen, (r.sample_id, k)
        replies = r.score_details["episode"]["replies"]
        assert len(replies) == len(turns) - first
        # per-turn scores: exactly what the hashed judge gives each (turn, reply)
        want = [turn_score(turns[first + j]["user"], rep) for j, rep in enumerate(replies)]
        meta = r.score_details["mt_bench_judge"]["metadata"]
        assert [t["score"] for t in meta["turns"]] == want
        assert [t["turn"] for t in meta["turns"]] == list(range(first + 1, len(turns) + 1))
        assert r.scores["mtb_score"] == min(want)  # the dialogue scores its worst turn
        assert r.scores["mtb_turn_mean"] == pytest.approx(sum(want) / len(want))
        n_judged += len(want)
    assert len(conftest.CALLS) == n_judged  # one judge call per judged turn
    # what the judge was shown: the golden history; the reference solution only for MR/GR
    for req in conftest.CALLS:
        b = conftest.blocks(req)
        ref = "REFERENCE SOLUTION" in b
        assert ref == any(
            b["CURRENT USER TURN"] == t["user"]
            for s in samples.values()
            if s.category in NEED_REFERENCE
            for t in s.fields["turns"]
        )
        assert "MODEL REPLY" not in b["EARLIER TURNS"]  # never the model's own replies


def test_overall_is_the_mean_over_abilities() -> None:
    class R:
        def __init__(self, cat: str, v: float, error: str | None = None) -> None:
            self.category, self.scores, self.error = cat, {"mtb_score": v}, error

    recs = [R("AR", 2), R("AR", 4), R("AR", 6), R("MR", 9), R("MR", 7), R("CM", 1, "boom")]
    est = overall(recs)["mtb_overall"]
    assert est.value == pytest.approx((4 + 8) / 2)  # not the pooled mean 5.6
    assert est.n == 5
    # stratified t by hand: var = (4/3 + 2/2) / 4; Welch-Satterthwaite df
    a, b = 4 / 3, 2 / 2
    df = (a + b) ** 2 / (a**2 / 2 + b**2 / 1)
    import scipy.stats

    half = scipy.stats.t.ppf(0.975, df) * math.sqrt((a + b) / 4)
    assert (est.low, est.high) == pytest.approx((6 - half, 6 + half))
    assert overall([])["mtb_overall"].n == 0
    assert math.isinf(overall([R("AR", 2), R("MR", 3), R("MR", 5)])["mtb_overall"].high)


def test_a_judge_that_cannot_answer_makes_errors_not_low_scores(tmp_path: Path) -> None:
    _rid, recs = _run(tmp_path, "mtbjudge:garbage", 3, FakeModel(lambda r: "hi"))
    assert all(r.scores is None for r in recs)
    assert all("no readable verdict" in (r.error or "") for r in recs)


def test_without_a_judge_the_task_lists_but_refuses_to_run(tmp_path: Path) -> None:
    task = resolve_task("mt_bench_101")[0]
    assert task.kind == "episode" and task.scorers == ()
    with (
        Store.open(f"sqlite:///{tmp_path / 's.db'}") as store,
        pytest.raises(CalipersError, match="judge model"),
    ):
        run(FakeModel(lambda r: "x"), "mt_bench_101", store=store, data_dir=str(DATA), limit=2)


def test_every_ability_has_its_rubric_and_the_oracle_gives_the_reference() -> None:
    from calipers.scorers._mtbench import MTB_RUBRICS
    from calipers.tasks.benchmarks.mt_bench_101 import MTBenchDialogue

    assert set(MTB_RUBRICS) == set(ABILITIES)
    samples = resolve_task("mt_bench_101")[0].load(LoadContext(data_dir=DATA))
    s = next(x for x in samples if x.category in SKIP_FIRST and len(x.fields["turns"]) >= 3)
    env = MTBenchDialogue(s)
    opening = env.opening()
    turns = s.fields["turns"]
    assert [m.content for m in opening] == [turns[0]["user"], turns[0]["bot"], turns[1]["user"]]
    oracle = env.oracle(opening)
    assert oracle is not None and oracle.text == turns[1]["bot"]
    counts: dict[str, int] = defaultdict(int)
    for x in samples:
        counts[x.category or ""] += 1
    assert sum(counts.values()) == 1388
