"""Both new judges are gated like every judge: "(uncalibrated)" in show and compare until
``calipers judge-calibrate`` has a record (human 1-10 labels for MT-Bench-101, planted
conversations for self_contradiction); a judge-free self_contradiction is never marked."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from calipers.cli import cli
from calipers.models import FakeModel
from calipers.runner import run
from calipers.scorers import build_scorer, planted_conversations
from calipers.store import Store
from calipers.tasks import Task, register_task
from calipers.types import ChatMessage, ModelRequest, ModelResponse, Sample, ToolCall, Turn
from tests._data import DATA, needs_data

from .conftest import MTB_FILE, PLANTED_N, PLANTED_SEED


def views(run_id: str, other: str) -> dict[str, str]:
    inv = CliRunner().invoke
    out = {
        "show": inv(cli, ["show", run_id]).output,
        "compare": inv(cli, ["compare", run_id, other]).output,
    }
    return {k: " ".join(v.split()) for k, v in out.items()}


@needs_data(MTB_FILE)
def test_mt_bench_judge_is_uncalibrated_until_human_labels_are_saved(tmp_path: Path) -> None:
    ids = []
    for _ in range(2):
        res = run(
            FakeModel(lambda r: "ok"), "mt_bench_101:mtbjudge:hashed", data_dir=str(DATA), limit=12
        )
        ids.append(res.run_id)
    a, b = ids
    for view, text in views(a, b).items():
        assert "uncalibrated" in text, view
    with Store.open() as store:
        recs = store.get_samples(a)
    labels = tmp_path / "human.jsonl"  # people agree with the judge on most dialogues
    rows = [
        {"sample_id": r.sample_id, "label": int((r.scores or {})["mtb_score"]) if i % 4 else 5}
        for i, r in enumerate(recs)
    ]
    labels.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    done = CliRunner().invoke(cli, ["judge-calibrate", a, "--labels", str(labels), "--json"])
    assert done.exit_code == 0, done.output
    rep = json.loads(done.stdout)
    assert rep["scorer"] == "mt_bench_judge" and rep["mode"] == "scale"
    assert rep["n_matched"] == 12 and rep["categories"][:10] == [float(x) for x in range(1, 11)]
    assert sum(rep["confusion"][i][i] for i in range(len(rep["categories"]))) >= 9
    v = views(a, b)
    assert "uncalibrated" not in v["show"] and "judge-human agreement" in v["show"]
    assert "uncalibrated" not in v["compare"]  # both runs: same judge, scorer and task


class Replay:
    """Plays a planted conversation's user turns; the model answers from the script."""

    tools = ()

    def __init__(self, sample: Sample) -> None:
        self.turns = sample.fields["turns"]
        self.k = 0

    def opening(self) -> tuple[ChatMessage, ...]:
        return (ChatMessage(role="user", content=self.turns[0][0]),)

    async def call_tool(self, call: ToolCall) -> str:
        return ""

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        self.k += 1
        return None if self.k >= len(self.turns) else Turn(user=self.turns[self.k][0])

    def final_state(self) -> dict[str, Any] | None:
        return None

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        return None


def contradiction_task(name: str, judge: str | None) -> Task:
    convs = planted_conversations(PLANTED_N, PLANTED_SEED)[:16]
    args = {} if judge is None else {"judge": judge}
    return Task(
        name=name,
        version="1",
        description="planted conversations",
        kind="episode",
        load=lambda ctx: [c.as_sample() for c in convs],
        scorers=(build_scorer({"name": "self_contradiction", "args": args}),),
        environment=Replay,
    )


def script(req: ModelRequest) -> str:
    """Answers each planted conversation's turn with its planted reply (keyed by the user
    turns so far: one question may recur in two conversations with different replies)."""
    answers = {
        tuple(u for u, _a in c.turns[: k + 1]): a
        for c in planted_conversations(PLANTED_N, PLANTED_SEED)[:16]
        for k, (_u, a) in enumerate(c.turns)
    }
    return answers[tuple(m.content for m in req.messages or () if m.role == "user")]


def test_self_contradiction_judge_is_uncalibrated_until_planted_calibration() -> None:
    register_task(
        "contra_judged", lambda: contradiction_task("contra_judged", "contrajudge:honest")
    )
    register_task("contra_free", lambda: contradiction_task("contra_free", None))
    a = run(FakeModel(script), "contra_judged").run_id
    b = run(FakeModel(script), "contra_judged").run_id
    free = run(FakeModel(script), "contra_free").run_id
    with Store.open() as store:
        recs = store.get_samples(a)
    truth = {c.id: c.contradicts for c in planted_conversations(PLANTED_N, PLANTED_SEED)[:16]}
    assert {r.sample_id: bool((r.scores or {})["contradiction"]) for r in recs} == truth
    assert "uncalibrated" in views(a, b)["show"] and "uncalibrated" in views(a, b)["compare"]
    # judge-free: planted pairs are prose, so nothing is checked, and nothing is marked
    free_show = views(free, free)["show"]
    assert "uncalibrated" not in free_show
    done = CliRunner().invoke(
        cli, ["judge-calibrate", a, "--planted", "--pairs", "40", "--seed", "0", "--json"]
    )
    assert done.exit_code == 0, done.output
    rep = json.loads(done.stdout)
    assert rep["scorer"] == "self_contradiction" and rep["n_matched"] == 40
    assert rep["precision"]["value"] == rep["recall"]["value"] == 1.0
    v = views(a, b)
    assert "uncalibrated" not in v["show"] and "judge-truth agreement" in v["show"]
    assert "planted pairs" in v["show"]
    text = CliRunner().invoke(cli, ["judge-calibrate", b, "--planted", "--pairs", "40"]).output
    assert "precision" in text and "recall" in text and "100.0%" in text
