"""Where each built-in benchmark lives on the Hugging Face hub, and small helpers the loaders
share: whether to use the hub (no data directory set), stamping samples with their hub source,
and row reshaping that several loaders need.

Every benchmark reads its local original files when ``--data-dir`` / ``CALIPERS_DATA`` is set,
and the hub copy below otherwise; both paths produce the same samples (same ids, prompts,
targets, categories), which tests check item by item.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calipers.datasets import DATA_SOURCE_KEY, HubRows, HubSource, data_root, load_hub_rows
from calipers.errors import DataError
from calipers.types import Sample

__all__ = [
    "HUB",
    "HubDataset",
    "field",
    "hellaswag_hub_text",
    "hub_rows",
    "stamp",
    "use_hub",
    "winogrande_hub_records",
]


@dataclass(frozen=True)
class HubDataset:
    """A benchmark's hub dataset: id, the config(s) and the split(s) calipers reads."""

    dataset_id: str
    configs: str
    splits: str


HUB: dict[str, HubDataset] = {
    "mmlu": HubDataset("cais/mmlu", "all", "test (few-shot: dev)"),
    "mmlu_redux": HubDataset("edinburgh-dawg/mmlu-redux-2.0", "<subject> (57)", "test"),
    "gsm8k": HubDataset("openai/gsm8k", "main", "test (few-shot: train)"),
    "truthfulqa": HubDataset(
        "truthfulqa/truthful_qa", "multiple_choice + generation", "validation"
    ),
    "humaneval": HubDataset("openai/openai_humaneval", "openai_humaneval", "test"),
    "bbq": HubDataset("heegyu/bbq", "data/<Category>.jsonl (11 files)", "test"),
    "ifeval": HubDataset("google/IFEval", "default", "train"),
    "arc": HubDataset("allenai/ai2_arc", "ARC-Easy / ARC-Challenge", "test (few-shot: train)"),
    "piqa": HubDataset("baber/piqa", "default", "validation"),
    "hellaswag": HubDataset("Rowan/hellaswag", "default", "validation"),
    "winogrande": HubDataset("allenai/winogrande", "winogrande_xl", "validation"),
    "mmlu_pro": HubDataset("TIGER-Lab/MMLU-Pro", "default", "test (few-shot: validation)"),
    "gpqa": HubDataset("Idavidrein/gpqa", "gpqa_diamond / gpqa_main / gpqa_extended", "train"),
    "bbh": HubDataset("SaylorTwift/bbh", "<subtask> (27)", "test"),
}
"""Benchmark -> hub dataset (what docs/benchmarks.md lists)."""


def use_hub(data_dir: Path | str | None) -> bool:
    """True when no local data directory is set (argument or ``CALIPERS_DATA``)."""
    return data_root(data_dir) is None


def hub_rows(
    benchmark: str,
    dataset_id: str,
    config: str | None,
    split: str,
    how_to_get: str,
    *,
    revision: str | None = None,
    data_file: str | None = None,
) -> HubRows:
    """:func:`calipers.datasets.load_hub_rows` with the benchmark's local how-to."""
    return load_hub_rows(
        benchmark,
        dataset_id,
        config=config,
        split=split,
        revision=revision,
        data_file=data_file,
        how_to_get=how_to_get,
    )


def stamp(samples: Sequence[Sample], source: HubSource) -> list[Sample]:
    """The samples with ``metadata["data_source"]`` set to the hub source (not part of the
    data hash: the same items from the hub and from local files hash alike)."""
    return [
        s.model_copy(update={"metadata": {**s.metadata, DATA_SOURCE_KEY: source.uri}})
        for s in samples
    ]


def field(benchmark: str, row: dict[str, Any], key: str, where: str, how: str) -> Any:
    """``row[key]``, or a DataError naming the dataset row and the missing field."""
    if key not in row:
        raise DataError(
            f"{benchmark}: {where} has no field {key!r} (has "
            f"{', '.join(sorted(row))}); the hub dataset's schema changed?",
            hint=how,
        )
    return row[key]


# -- HellaSwag ----------------------------------------------------------------------------------

_MARKER = re.compile(r"\[[a-z]+\]")


def _clean(text: str) -> str:
    """The text form of the local file: ``[header]``/``[title]``/``[step]``/``[substeps]``
    markers removed and runs of spaces collapsed."""
    return " ".join(_MARKER.sub(" ", text).split())


def hellaswag_hub_text(
    row: dict[str, Any], where: str, how: str
) -> tuple[str, str, list[str], int]:
    """(activity label, context, endings, label) of a ``Rowan/hellaswag`` row, in the form
    of the local text file: ``ctx_a + " " + ctx_b`` (``ctx_b`` lowercase as in the data),
    markers removed, spaces collapsed. The caller capitalizes the unfinished last sentence as
    it does for the local file."""
    activity = str(field("hellaswag", row, "activity_label", where, how))
    ctx_a = str(field("hellaswag", row, "ctx_a", where, how))
    ctx_b = str(field("hellaswag", row, "ctx_b", where, how))
    endings = field("hellaswag", row, "endings", where, how)
    label = str(field("hellaswag", row, "label", where, how))
    if not (isinstance(endings, list) and len(endings) == 4) or label not in {"0", "1", "2", "3"}:
        raise DataError(f"hellaswag: {where}: expected 4 endings and a label 0-3.", hint=how)
    context = _clean(f"{ctx_a} {ctx_b}" if ctx_b else ctx_a)
    return activity, context, [_clean(str(e)) for e in endings], int(label)


# -- WinoGrande ---------------------------------------------------------------------------------

WINOGRANDE_HOW = (
    "Copy WinoGrande v1.1 dev.jsonl and dev-labels.lst (winogrande_1.1/) into "
    "<data-dir>/winogrande/. See docs/benchmarks.md."
)


def winogrande_hub_records(
    config: str = "winogrande_xl", split: str = "validation"
) -> tuple[list[dict[str, Any]], list[str], HubSource]:
    """``allenai/winogrande`` rows shaped like the local ``dev.jsonl`` records plus the
    ``dev-labels.lst`` labels: records with ``sentence``, ``option1``, ``option2``, ``answer``
    (``"1"``/``"2"``) and ``qID``, the labels, and the hub source.

    The hub rows have no ``qID``; it is ``f"{split}/{i}"`` (the row position), without the
    ``-1``/``-2`` twin suffix of the original ids, so twin sentences cannot share a cluster
    when loaded from the hub: the caller should use ``qID`` itself as the cluster then."""
    rows = hub_rows("winogrande", "allenai/winogrande", config, split, WINOGRANDE_HOW)
    records, labels = [], []
    for i, row in enumerate(rows):
        where = f"allenai/winogrande {config}/{split} row {i}"
        rec = {
            k: field("winogrande", row, k, where, WINOGRANDE_HOW)
            for k in ("sentence", "option1", "option2", "answer")
        }
        answer = str(rec["answer"]).strip()
        if answer not in {"1", "2"}:
            raise DataError(
                f"winogrande: {where}: answer {answer!r} is not '1' or '2' (the "
                "test split has no labels).",
                hint=WINOGRANDE_HOW,
            )
        records.append({"qID": f"{split}/{i}", **rec, "answer": answer})
        labels.append(answer)
    return records, labels, rows.source
