"""The ``tool_calls`` and ``bfcl`` tasks: single-call tool accuracy, graded by AST matching.

Each item is an episode of one model step: the model gets the item's question and its tools
(``EpisodeLimits(max_steps=1)``); the ``tool_call_match`` scorer checks the calls of that step
against the expected ones. Tools are never run: the environment answers any call with a note
that it was not executed, which the model never reads (the episode stops after its first step).

``tool_calls`` is calipers' own set of 42 items (16 simple, 10 multiple, 8 parallel, 8
irrelevance), written for this task in BFCL's format (``builtin.jsonl``). ``bfcl`` reads the
Berkeley Function Calling Leaderboard's own files, shipped in the PyPI package ``bfcl-eval``
(``bfcl_eval/data``: ``BFCL_v4_<category>.json`` and ``possible_answer/``): from the
installed package when there is one (the package is found, never imported), else from
``<data-dir>/bfcl/`` holding the same files. Its categories: simple (``simple_python``),
multiple, parallel, parallel_multiple and irrelevance.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calipers.datasets import data_root
from calipers.errors import DataError
from calipers.scorers import build_scorer
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.toolcalls._items import opening_messages, sample_from_record, spread, tool_specs
from calipers.types import (
    ChatMessage,
    EpisodeLimits,
    GenerateParams,
    ModelResponse,
    Sample,
    ToolCall,
    ToolSpec,
    Turn,
)

__all__ = [
    "BFCL_CATEGORIES",
    "BUILTIN",
    "SingleCallEnv",
    "bfcl_data_dir",
    "bfcl_task",
    "load_bfcl",
    "load_builtin",
    "register",
    "tool_calls_task",
]

BUILTIN = Path(__file__).with_name("builtin.jsonl")
BFCL_CATEGORIES = {  # our category -> BFCL's file name part
    "simple": "simple_python",
    "multiple": "multiple",
    "parallel": "parallel",
    "parallel_multiple": "parallel_multiple",
    "irrelevance": "irrelevance",
}
NOT_RUN = json.dumps({"note": "not executed: this task grades the call itself"})
LIMITS = EpisodeLimits(max_steps=1, tool_timeout_s=5.0)
_HOW = "pip install bfcl-eval (its data ships in the package), or copy its bfcl_eval/data/ "
_HOW += "files into <data-dir>/bfcl/."


class SingleCallEnv:
    """One item: the question and the item's tools; one model step; no tool is run."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self.tools: tuple[ToolSpec, ...] = tool_specs(sample.fields.get("tools") or ())

    def opening(self) -> tuple[ChatMessage, ...]:
        return opening_messages(self.sample)

    async def call_tool(self, call: ToolCall) -> str:
        return NOT_RUN

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        return None

    def final_state(self) -> dict[str, Any] | None:
        return None

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        """The expected calls, each argument at its first allowed value (optional arguments
        left out); for an item where no call is right, a plain answer."""
        expected = json.loads(self.sample.target_text or "[]")
        if not expected:
            return ModelResponse(text="None of my tools can help with that.")
        calls = tuple(
            ToolCall(
                id=f"oracle_{i}",
                name=name,
                arguments={a: _first(v) for a, v in args.items() if v and v[0] != ""},
            )
            for i, call in enumerate(expected)
            for name, args in call.items()
        )
        return ModelResponse(text="", tool_calls=calls, finish_reason="tool_calls")


def _first(allowed: list[Any]) -> Any:
    """The first allowed value; a dict argument's own allowed values unwrapped likewise."""
    return _unwrap(allowed[0])


def _unwrap(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if isinstance(v, list) and v and v[0] != ""}
    if isinstance(value, list):
        return [_unwrap(v) if isinstance(v, dict) else v for v in value]
    return value


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"Cannot read {path}: {e}") from None


def load_builtin(ctx: LoadContext | None = None) -> list[Sample]:
    records = _read_jsonl(BUILTIN)
    return spread([sample_from_record(r, r["category"], BUILTIN.name) for r in records])


def bfcl_data_dir(data_dir: Path | str | None = None) -> Path:
    """BFCL's data folder: the installed ``bfcl_eval`` package's ``data/``, else
    ``<data-dir>/bfcl``."""
    spec = importlib.util.find_spec("bfcl_eval")
    roots = (spec.submodule_search_locations or ()) if spec is not None else ()
    for root in roots:
        if (Path(root) / "data").is_dir():
            return Path(root) / "data"
    base = data_root(data_dir)
    if base is not None and (base / "bfcl").is_dir():
        return base / "bfcl"
    raise DataError(
        "bfcl: the package bfcl-eval is not installed and no <data-dir>/bfcl/.", hint=_HOW
    )


def _bfcl_file(folder: Path, part: str) -> Path:
    # BFCL_v4_multiple.json, not BFCL_v4_parallel_multiple.json
    name = re.compile(rf"BFCL_v[0-9.]+_{part}\.json")
    found = sorted(p for p in folder.glob("BFCL_v*.json") if name.fullmatch(p.name))
    if not found:
        raise DataError(f"bfcl: no BFCL_v*_{part}.json in {folder}.", hint=_HOW)
    return found[-1]  # the newest version when several are there


def load_bfcl(ctx: LoadContext) -> list[Sample]:
    folder = bfcl_data_dir(ctx.data_dir)
    samples: list[Sample] = []
    for category, part in BFCL_CATEGORIES.items():
        questions = _bfcl_file(folder, part)
        answers: dict[str, Any] = {}
        if category != "irrelevance":  # irrelevance has no answers: no call is right
            ans_path = folder / "possible_answer" / questions.name
            answers = {r["id"]: r["ground_truth"] for r in _read_jsonl(ans_path)}
        for r in _read_jsonl(questions):
            if category != "irrelevance" and r["id"] not in answers:
                raise DataError(f"bfcl: {r['id']!r} has no possible answer in {ans_path}.")
            rec = {**r, "ground_truth": answers.get(r["id"], [])}
            samples.append(sample_from_record(rec, category, questions.name))
    return spread(samples)


def _task(
    name: str, description: str, load: Any, card: dict[str, Any], source: str = "calipers"
) -> Task:
    return Task(
        name=name,
        version="1",
        description=description,
        kind="episode",
        load=load,
        scorers=(build_scorer("tool_call_match"),),
        params=GenerateParams(max_tokens=512),  # room for bounded calls (docs/tool-calling.md)
        environment=SingleCallEnv,
        limits=LIMITS,
        episode_card=card,
        source=source,
        tags=("agents", "tools"),
    )


def tool_calls_task() -> Task:
    return _task(
        "tool_calls",
        "Single-call tool accuracy (BFCL-style AST matching) on calipers' built-in 42 items: "
        "simple, multiple tools, parallel calls, irrelevance (no call is right).",
        load_builtin,
        {"grading": "first step, AST match", "items": "calipers built-in (BFCL format)"},
    )


def bfcl_task() -> Task:
    try:
        version = importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        version = "data-dir"
    return _task(
        "bfcl",
        "Berkeley Function Calling Leaderboard, single-turn AST categories (simple, multiple, "
        "parallel, parallel_multiple, irrelevance) from the bfcl-eval package's data.",
        load_bfcl,
        {"grading": "first step, AST match", "items": f"bfcl-eval {version}"},
        source="BFCL (gorilla-llm, bfcl-eval)",
    )


def register() -> None:
    register_task("tool_calls", tool_calls_task)
    register_task("bfcl", bfcl_task)
