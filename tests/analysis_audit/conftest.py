"""Stored runs of deterministic fake models on a small multiple-choice task file."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from calipers.analysis import StoredRun, load_runs
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.types import ModelRequest

N_ITEMS = 30
OPTIONS = ["w0", "w1", "w2", "w3"]
_ITEM = re.compile(r"item (\d+)\b")

# item -> (option, confident?) where a model departs from its default answer
Answers = Mapping[int, tuple[int, bool]]


def write_mc_task(
    folder: Path, gold: Mapping[int, int], name: str = "mcq", n: int = N_ITEMS
) -> Path:
    rows = [
        {"id": f"q{i}", "question": f"item {i}", "choices": OPTIONS, "answer": gold[i]}
        for i in range(n)
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / f"{name}.yaml"
    spec.write_text(
        f"name: {name}\ndata: {name}.jsonl\nkind: multiple_choice\ntarget_type: index\n"
        "fields: {id: id, input: question, target: answer, choices: choices}\n"
        "scorers: [loglikelihood_mc]\n"
    )
    return spec


def mc_model(name: str, default: Callable[[int], int], answers: Answers) -> FakeModel:
    """Picks ``default(i)`` on item i with log-likelihood 0 against -5 for the others
    (softmax 0.98), or ``answers[i]``: confident the same way, or not (-1 against -1.2,
    softmax 0.29)."""

    def loglik(context: str, continuation: str) -> float:
        m = _ITEM.search(context)
        assert m is not None
        i, j = int(m.group(1)), OPTIONS.index(continuation.strip())
        option, confident = answers.get(i, (default(i), True))
        if confident:
            return 0.0 if j == option else -5.0
        return -1.0 if j == option else -1.2

    return FakeModel(name=name, loglik=loglik)


def make_run(spec: Path | str, model: FakeModel, **cfg: object) -> str:
    config = RunConfig.model_validate(
        {"model": f"fake:{model.identity().name}", "tasks": [str(spec)], **cfg}
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=model))
    return str(result.run_id)


def stored(*ids: str) -> list[StoredRun]:
    with Store.open() as store:
        runs: list[StoredRun] = load_runs(store, ids)
    return runs


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


def write_yes_task(folder: Path, n: int) -> Path:
    """A generation task of ``n`` items whose answer is always "yes" (exact match)."""
    rows = [{"id": f"q{i}", "input": f"item {i}", "target": "yes"} for i in range(n)]
    (folder / "yes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = folder / "yes.yaml"
    spec.write_text("name: answers\ndata: yes.jsonl\nfields: {id: id}\nscorers: [exact_match]\n")
    return spec


def right_on(items: set[int] | range, name: str) -> FakeModel:
    def answer(req: ModelRequest) -> str:
        text = req.prompt if req.messages is None else req.messages[-1].content
        m = _ITEM.search(text or "")
        assert m is not None
        return "yes" if int(m.group(1)) in items else "no"

    return FakeModel(answer, name=name)
