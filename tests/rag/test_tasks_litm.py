"""nq_open_oracle and kv_retrieval read Lost in the Middle's files: items checked against the
files read here independently (gzip + json), and a run end to end with the fake model."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest

from calipers.errors import DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, make_plan
from calipers.scorers import alias_in, build_scorer
from calipers.tasks import get_task
from calipers.tasks.rag import RAG_INSTRUCTION, is_rag_task, passages_of
from calipers.tasks.rag.kv import read_kv
from calipers.tasks.rag.nq_open import read_nq_open_oracle
from calipers.types import ModelRequest, ModelResponse, SampleOutput
from tests._data import DATA, needs_data

NQ = "lost_in_the_middle/qa_data/nq-open-oracle.jsonl.gz"
KV = "lost_in_the_middle/kv_retrieval_data/kv-retrieval-75_keys.jsonl.gz"


def _raw(rel: str) -> list[dict[str, Any]]:
    with gzip.open(DATA / rel, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@needs_data(NQ)
def test_nq_items_match_the_file() -> None:
    rows = _raw(NQ)
    items = read_nq_open_oracle(DATA)
    assert len(items) == len(rows) == 2655  # SOURCES.md
    assert items[0].input == "who got the first nobel prize in physics"
    assert items[0].metadata["answers"] == ["Wilhelm Conrad Röntgen"]
    for i, (s, row) in enumerate(zip(items, rows, strict=True)):
        (p,) = passages_of(s)
        assert s.id == str(i) and p.id == f"nq{i}"
        assert (p.text, p.title, p.gold, p.kind) == (
            row["ctxs"][0]["text"],
            row["ctxs"][0]["title"],
            True,
            "gold",
        )
        assert s.metadata["answers"] == row["answers"] and s.target == row["answers"][0]
    misses = sum(not alias_in(r["ctxs"][0]["text"], r["answers"]) for r in rows)
    assert misses == sum(not s.metadata["alias_in_gold"] for s in items) == 24


@needs_data(NQ)
def test_nq_is_read_once_per_file() -> None:
    read_nq_open_oracle(DATA)
    t = time.perf_counter()
    again = read_nq_open_oracle(DATA)
    assert time.perf_counter() - t < 0.05 and len(again) == 2655


def test_litm_without_a_data_dir_says_where_to_get_it() -> None:
    with pytest.raises(DataError, match="lost_in_the_middle") as e:
        read_nq_open_oracle(None)
    assert "nelson-liu/lost-in-the-middle" in (e.value.hint or "")


@needs_data(KV)
def test_kv_items_hold_one_gold_pair_whose_value_nothing_else_holds() -> None:
    rows = _raw(KV)
    items = read_kv(DATA)
    assert len(items) == 500
    for s, row in zip(items, rows, strict=True):
        ps = passages_of(s)
        assert len(ps) == 75 and s.input == row["key"]
        gold = [p for p in ps if p.gold]
        keys = [k for k, _v in row["ordered_kv_records"]]
        assert len(gold) == 1 and ps.index(gold[0]) == keys.index(row["key"])
        assert gold[0].text == f'"{row["key"]}": "{row["value"]}"'
        assert s.metadata["answers"] == [row["value"]]
        assert not any(alias_in(p.text, [row["value"]]) for p in ps if not p.gold)


@needs_data(NQ, KV)
@pytest.mark.parametrize("name", ["nq_open_oracle", "kv_retrieval"])
def test_builtin_rag_tasks_run_and_score(name: str) -> None:
    task = get_task(name)
    assert is_rag_task(task) and task.params.max_tokens <= 64
    plan = make_plan(
        RunConfig(model="fake:echo", tasks=(name,), limit=3, data_dir=str(DATA)), FakeModel()
    )
    req = plan.tasks[0].samples[0].request
    sample = plan.tasks[0].samples[0].sample
    assert isinstance(req, ModelRequest)
    prompt = req.messages[-1].content if req.messages else req.prompt or ""
    assert sample.fields["context"] in prompt and sample.input in prompt
    scorer = build_scorer("rag_outcome")
    right = SampleOutput(response=ModelResponse(text=str(sample.target)))
    values = _run(scorer(sample, right))
    assert (values["correct"], values["abstained"], values["unsupported"]) == (1.0, 0.0, 0.0)
    if name == "nq_open_oracle":
        assert task.prompt.instruction == RAG_INSTRUCTION


def _run(coro: Any) -> dict[str, float]:
    import asyncio

    return dict(asyncio.run(coro).values)
