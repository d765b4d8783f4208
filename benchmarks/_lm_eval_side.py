"""The lm-evaluation-harness side of ``vs_lm_eval.py``: items as JSON Lines for its ``json``
dataset loader, a task YAML per benchmark that reproduces calipers' prompt exactly, its ``hf``
backend loaded once, and per-item choices read back from ``log_samples``.

The YAML is data only: ``doc_to_text: context`` (the prompt calipers built, a field of the
item), ``doc_to_choice: choices`` (the option texts), ``doc_to_target: gold``, target delimiter
``" "``, 0-shot, no description. lm-eval then scores ``(context, " " + option)``, which is what
calipers scores, and its ``acc_norm`` divides by ``len(option)`` as calipers' does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


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
            f.write(json.dumps({"id": it.id, "context": it.context, "choices": list(it.choices),
                                "gold": it.gold}, ensure_ascii=False) + "\n")
    yaml = (
        f"task: {task}\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {json.dumps(str(data.resolve()))}\n"
        "test_split: test\n"
        "output_type: multiple_choice\n"
        "doc_to_text: context\n"
        "doc_to_choice: choices\n"
        "doc_to_target: gold\n"
        "target_delimiter: \" \"\n"
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

    return HFLM(pretrained=str(gguf.parent), gguf_file=gguf.name, dtype="float32",
                batch_size=batch, device="cpu")


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
    return LmEvalTask(task, seconds, preds, preds_norm, logprobs, same,
                      float(metrics["acc,none"]), float(metrics["acc_norm,none"]))
