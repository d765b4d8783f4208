"""The lm-evaluation-harness side of ``vs_lm_eval.py``: items as JSON Lines for its ``json``
dataset loader, a task YAML per benchmark that reproduces calipers' prompt exactly, its ``hf``
backend loaded once, and per-item choices read back from ``log_samples``.

The YAML is data only: ``doc_to_text: context`` (the prompt calipers built, a field of the
item), ``doc_to_choice: choices`` (the option texts), ``doc_to_target: gold``, target delimiter
``" "``, 0-shot, no description. lm-eval then scores ``(context, " " + option)``, which is what
calipers scores, and its ``acc_norm`` divides by ``len(option)`` as calipers' does.

lm-eval runs in a process of its own (``LmEvalProcess``), so neither side's state slows the
other: its Python objects do not lengthen calipers' garbage collections, and its torch calls
do not start a second GNU OpenMP thread team in calipers' process (with more OpenMP threads
than cores, libgomp sleeps between parallel regions instead of spinning; calipers measured
10-30% slower in the same process as lm-eval for that reason).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from _measure import measured


@dataclass(frozen=True)
class Item:
    id: str
    context: str
    choices: tuple[str, ...]
    gold: int


@dataclass(frozen=True)
class LmEvalTask:
    name: str
    seconds: float
    preds: dict[str, int]  # item id -> acc choice
    preds_norm: dict[str, int]  # item id -> acc_norm choice
    logprobs: dict[str, list[float]]
    same_prompt: int  # items whose (context, continuation) pairs equal calipers'
    acc: float
    acc_norm: float
    timing: dict[str, Any] = field(default_factory=dict)


def write_task(workdir: Path, name: str, items: Sequence[Item]) -> str:
    """Write ``<name>.jsonl`` and ``<name>.yaml`` under ``workdir``; returns the task name."""
    task = f"calipers_vs_{name}"
    data = workdir / f"{name}.jsonl"
    with data.open("w", encoding="utf-8") as f:
        for it in items:
            f.write(
                json.dumps(
                    {
                        "id": it.id,
                        "context": it.context,
                        "choices": list(it.choices),
                        "gold": it.gold,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    yaml = (
        f"task: {task}\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {json.dumps(str(data.resolve()))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: context\n"
        "doc_to_choice: choices\n"
        "doc_to_target: gold\n"
        'target_delimiter: " "\n'
        "num_fewshot: 0\n"
        "metric_list:\n"
        "  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
        "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n"
    )
    (workdir / f"{name}.yaml").write_text(yaml, encoding="utf-8")
    return task


def load_lm(gguf: Path, batch: int) -> Any:
    """lm-eval's ``hf`` backend on the GGUF, dequantised to float32."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=str(gguf.parent),
        gguf_file=gguf.name,
        dtype="float32",
        batch_size=batch,
        device="cpu",
    )


def task_manager(workdir: Path) -> Any:
    """lm-eval's task index (its built-in tasks plus the YAML files in ``workdir``)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(workdir))


def run_task(lm: Any, tm: Any, task: str, items: Sequence[Item]) -> LmEvalTask:
    """``simple_evaluate`` on one task with ``log_samples``; per-item choices recomputed from
    the logged log-likelihoods (first maximum, as numpy's argmax and lm-eval's metric)."""
    import lm_eval

    start = time.perf_counter()
    out = lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=tm, log_samples=True)
    seconds = time.perf_counter() - start
    assert out is not None
    by_id = {it.id: it for it in items}
    preds, preds_norm, logprobs = {}, {}, {}
    same = 0
    for s in out["samples"][task]:
        item = by_id[s["doc"]["id"]]
        lls = np.array([float(r[0]) for r in s["filtered_resps"]])
        lens = np.array([float(len(c)) for c in item.choices])
        preds[item.id] = int(np.argmax(lls))
        preds_norm[item.id] = int(np.argmax(lls / lens))
        logprobs[item.id] = lls.tolist()
        args = [tuple(a) for a in s["arguments"]]
        same += args == [(item.context, " " + c) for c in item.choices]
    metrics = out["results"][task]
    return LmEvalTask(
        task,
        seconds,
        preds,
        preds_norm,
        logprobs,
        same,
        float(metrics["acc,none"]),
        float(metrics["acc_norm,none"]),
    )


# -- its own process ------------------------------------------------------------------------------


def _serve(conn: Any, gguf: str, batch: int, workdir: str) -> None:
    """The child: load the model and task index (timed), then answer ``(task, items)`` with an
    ``LmEvalTask`` (timed in this process) until ``None``; an error is sent back as text."""
    try:
        loads: dict[str, dict[str, Any]] = {"lm-eval hf (HFLM)": {}, "lm-eval TaskManager": {}}
        with measured(loads["lm-eval hf (HFLM)"]):
            lm = load_lm(Path(gguf), batch)
        with measured(loads["lm-eval TaskManager"]):
            tm = task_manager(Path(workdir))
        conn.send(loads)
        while (msg := conn.recv()) is not None:
            task, items = msg
            timing: dict[str, Any] = {}
            with measured(timing):
                result = run_task(lm, tm, task, items)
            conn.send(dataclasses.replace(result, timing=timing))
    except Exception:
        conn.send(traceback.format_exc())


class LmEvalProcess:
    """lm-eval's ``hf`` backend in a spawned process: ``loads`` (timings of loading), then
    ``run(task, items)`` per task. The task YAML files must be in ``workdir`` before start."""

    def __init__(self, gguf: Path, batch: int, workdir: Path) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve, args=(child, str(gguf), batch, str(workdir)), name="lm-eval", daemon=True
        )
        self._proc.start()
        child.close()
        self.loads: dict[str, dict[str, Any]] = self._receive()

    def _receive(self) -> Any:
        try:
            msg = self._conn.recv()
        except EOFError:
            raise SystemExit(
                f"lm-eval's process exited (code {self._proc.exitcode}) "
                "without answering; its output is above."
            ) from None
        if isinstance(msg, str):
            raise SystemExit(f"lm-eval failed in its process:\n{msg}")
        return msg

    def run(self, task: str, items: Sequence[Item]) -> LmEvalTask:
        self._conn.send((task, list(items)))
        result: LmEvalTask = self._receive()
        return result

    def close(self) -> None:
        if self._proc.is_alive():
            self._conn.send(None)
            self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.kill()
