"""MT-Bench-101 (Bai et al., ACL 2024): 1,388 multi-turn dialogues over 13 abilities, judged
per turn, from the original ``data/subjective/mtbench101.jsonl`` of mtbench101/mt-bench-101.

Each dialogue is a list of turns ``{"user", "bot"}``; the ``bot`` replies are the reference
answers. The protocol, as the benchmark's evaluation code applies it:

- **Golden history.** Every turn is answered with the *reference* replies of the earlier turns
  in the history, never the model's own: a turn measures the ability, not the propagation of an
  earlier mistake. The environment plays the user turns and hands the runner each earlier
  turn's reference reply (``Turn.assistant``), which replaces the model's reply in the history.
- **Judged turns.** In six abilities (CM, SI... see :data:`SKIP_FIRST`) the first turn only
  sets the scene: it is given with its reference reply in the opening messages and the model
  first answers turn 2. Every other turn the model answers is judged.
- **Reference to the judge.** For mathematical and general reasoning (MR, GR) the judge also
  sees the turn's reference reply as the reference solution.
- **Score.** The judge gives each judged turn 1-10; a dialogue's score is its *lowest* turn
  (one failed turn fails the dialogue); an ability's score is the mean over its dialogues; the
  overall score is the mean over the 13 abilities (macro, :func:`overall`).

The judge is named with the task: ``-t mt_bench_101:JUDGE`` (``mt_bench_101:openai:gpt-4o``,
``mt_bench_101:fake:...`` for a dry run). ``category`` is the ability's code; items are in a
fixed order shuffled by a hash of their ids so ``--limit`` takes a spread over abilities.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import scipy.stats

from calipers._util.hashing import text_hash
from calipers.datasets import benchmark_file, read_records
from calipers.errors import ConfigError, DataError
from calipers.scorers import build_scorer
from calipers.tasks._registry import register_resolver, register_task
from calipers.tasks._task import LoadContext, Task
from calipers.types import (
    ChatMessage,
    EpisodeLimits,
    Estimate,
    GenerateParams,
    ModelResponse,
    Sample,
    ToolCall,
    ToolSpec,
    Turn,
)

__all__ = [
    "ABILITIES",
    "NEED_REFERENCE",
    "SKIP_FIRST",
    "MTBenchDialogue",
    "load_mt_bench_101",
    "mt_bench_101_task",
    "overall",
    "register",
]

NAME = "mt_bench_101"
FILE = "data/subjective/mtbench101.jsonl"
ABILITIES: dict[str, str] = {
    "CM": "context memory",
    "SI": "separate input",
    "AR": "anaphora resolution",
    "TS": "topic shift",
    "CC": "content confusion",
    "CR": "content rephrasing",
    "FR": "format rephrasing",
    "SC": "self-correction",
    "SA": "self-affirmation",
    "MR": "mathematical reasoning",
    "GR": "general reasoning",
    "IC": "instruction clarification",
    "PI": "proactive interaction",
}
"""The 13 abilities by their code in the data, as the paper names them."""
SKIP_FIRST = frozenset({"FR", "CR", "AR", "SA", "SC", "CM"})
"""Abilities whose first turn is context, given with its reference reply and not judged."""
NEED_REFERENCE = frozenset({"MR", "GR"})
"""Abilities whose judge sees the turn's reference reply as the reference solution."""
_HOW = (
    "Copy data/subjective/mtbench101.jsonl of github.com/mtbench101/mt-bench-101 to "
    "<data-dir>/mt_bench_101/data/subjective/mtbench101.jsonl (see docs/mt-bench-101.md)."
)


def _sample(line: int, row: Mapping[str, Any]) -> Sample:
    ability, history = row.get("task"), row.get("history")
    ok = (
        ability in ABILITIES
        and isinstance(history, list)
        and history
        and all(
            isinstance(t, dict) and isinstance(t.get("user"), str) and isinstance(t.get("bot"), str)
            for t in history
        )
        and "id" in row
    )
    if not ok or not isinstance(history, list):
        raise DataError(
            f"mt_bench_101: {FILE}:{line}: expected task (one of {', '.join(ABILITIES)}), id "
            'and history (a list of {"user", "bot"} turns).',
            hint=_HOW,
        )
    skip = 1 if ability in SKIP_FIRST else 0
    if len(history) <= skip:
        raise DataError(f"mt_bench_101: {FILE}:{line}: a {ability} dialogue needs 2+ turns.")
    turns = [{"user": t["user"], "bot": t["bot"]} for t in history]
    return Sample(
        id=f"{ability}-{row['id']}",
        input=turns[skip]["user"],
        category=str(ability),
        fields={"turns": turns, "first_judged": skip},
    )


def load_mt_bench_101(ctx: LoadContext) -> list[Sample]:
    """All dialogues, in an order shuffled by a hash of their ids (a ``--limit`` spreads)."""
    path = benchmark_file(NAME, FILE, ctx.data_dir, how_to_get=_HOW)
    samples = [_sample(line, row) for line, row in read_records(path)]
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise DataError(f"mt_bench_101: {path} has duplicate (task, id) pairs.", hint=_HOW)
    return sorted(samples, key=lambda s: text_hash(s.id))


def _turns(sample: Sample) -> tuple[list[dict[str, str]], int]:
    turns = sample.fields.get("turns")
    first = sample.fields.get("first_judged", 0)
    if not isinstance(turns, list) or not turns or not isinstance(first, int):
        raise DataError(f"Sample {sample.id!r} is not an MT-Bench-101 dialogue (fields.turns).")
    return turns, first


class MTBenchDialogue:
    """Plays one dialogue's user turns with the golden history: after the model answers turn
    ``k``, the next user turn comes with turn ``k``'s reference reply, which replaces the
    model's in the history. A skip-first ability opens with turn 1 and its reference reply."""

    tools: tuple[ToolSpec, ...] = ()

    def __init__(self, sample: Sample) -> None:
        self.turns, self.first = _turns(sample)
        self.current = self.first  # the turn the model is answering

    def opening(self) -> tuple[ChatMessage, ...]:
        msgs: list[ChatMessage] = []
        for t in self.turns[: self.first]:
            msgs += [
                ChatMessage(role="user", content=t["user"]),
                ChatMessage(role="assistant", content=t["bot"]),
            ]
        return (*msgs, ChatMessage(role="user", content=self.turns[self.first]["user"]))

    async def call_tool(self, call: ToolCall) -> str:
        raise ConfigError(f"MT-Bench-101 offers no tools (called {call.name!r}).")

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        golden = self.turns[self.current]["bot"]
        self.current += 1
        if self.current >= len(self.turns):
            return None
        return Turn(user=self.turns[self.current]["user"], assistant=golden)

    def final_state(self) -> dict[str, Any] | None:
        return None

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        """The reference reply of the turn being answered."""
        k = sum(m.role == "user" for m in messages) - 1
        return ModelResponse(text=self.turns[min(k, len(self.turns) - 1)]["bot"])


def _no_judge(sample: Sample) -> MTBenchDialogue:
    raise ConfigError(
        "mt_bench_101 is scored by a judge model, and none was named.",
        hint="Name it with the task: -t mt_bench_101:openai:gpt-4o-mini (any model spec; "
        "-t 'mt_bench_101:fake:const={\"score\": 7}' for a dry run). See docs/mt-bench-101.md.",
    )


def overall(records: Sequence[Any], confidence: float = 0.95) -> dict[str, Estimate]:
    """MT-Bench-101's overall score: the mean over abilities of each ability's mean dialogue
    score (``mtb_score``), every ability weighted equally. Interval: the abilities' means are
    independent, so the variance is the sum of their squared standard errors over K^2, with
    Welch-Satterthwaite degrees of freedom (method ``stratified-t``); an ability with a single
    scored dialogue has no standard error and makes the interval unbounded. ``n`` counts
    dialogues. Only abilities with a scored dialogue count (K of them)."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in records:
        v = (r.scores or {}).get("mtb_score") if r.error is None else None
        if v is not None and not math.isnan(v):
            by[str(r.category)].append(float(v))
    if not by:
        return {"mtb_overall": Estimate.empty("stratified-t", confidence)}
    k = len(by)
    value = sum(sum(v) / len(v) for v in by.values()) / k
    n = sum(len(v) for v in by.values())
    if any(len(v) < 2 for v in by.values()):
        return {"mtb_overall": Estimate(value, -math.inf, math.inf, n, "stratified-t", confidence)}
    parts = [_var(v) / len(v) for v in by.values()]
    var = sum(parts) / k**2
    if var == 0:
        return {"mtb_overall": Estimate(value, value, value, n, "stratified-t", confidence)}
    df = sum(parts) ** 2 / sum(p**2 / (len(v) - 1) for p, v in zip(parts, by.values(), strict=True))
    half = float(scipy.stats.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(var)
    return {
        "mtb_overall": Estimate(value, value - half, value + half, n, "stratified-t", confidence)
    }


def _var(v: Sequence[float]) -> float:
    m = sum(v) / len(v)
    return sum((x - m) ** 2 for x in v) / (len(v) - 1)


def mt_bench_101_task(judge: str | None = None) -> Task:
    """The task, judged by ``judge`` (a model spec); without one it lists but will not run."""
    max_turns = 7  # the longest dialogue in the data
    return Task(
        name=NAME,
        version="1",
        description="MT-Bench-101: 1,388 multi-turn dialogues, 13 abilities, golden history, "
        "judged 1-10 per turn (dialogue = its worst turn). -t mt_bench_101:JUDGE",
        kind="episode",
        load=load_mt_bench_101,
        scorers=(build_scorer({"name": "mt_bench_judge", "args": {"judge": judge}}),)
        if judge is not None
        else (),
        environment=MTBenchDialogue if judge is not None else _no_judge,
        limits=EpisodeLimits(max_steps=max_turns),
        episode_card={
            "benchmark": "mt_bench_101",
            "history": "golden",
            "skip_first": sorted(SKIP_FIRST),
            "reference_to_judge": sorted(NEED_REFERENCE),
            "dialogue_score": "min over judged turns",
        },
        derived=overall,
        params=GenerateParams(max_tokens=1024, temperature=0.0),
        source="mtbench101/mt-bench-101 (Bai et al., ACL 2024)",
        license="Apache-2.0",
        tags=("conversation", "multi_turn", "judge"),
    )


def _resolve(spec: str, formulation: str | None) -> list[Task]:
    if formulation is not None:
        raise ConfigError("mt_bench_101 has a single formulation; drop --formulation.")
    judge = spec.partition(":")[2].strip()
    if not judge:
        _no_judge(Sample(id="-", input=""))
    return [mt_bench_101_task(judge)]


def register() -> None:
    """Register ``mt_bench_101`` (listed; runs once a judge is named) and the prefix
    ``mt_bench_101:JUDGE`` (idempotent)."""
    register_task(NAME, mt_bench_101_task)
    register_resolver(NAME, _resolve)
