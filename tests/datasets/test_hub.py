"""The hub loader: every way ``datasets.load_dataset`` fails becomes a DataError that names the
benchmark, the dataset, config and split and says what to do; the source is recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from calipers.datasets import HubSource, _hub, data_source, hub_error, load_hub_rows
from calipers.errors import DataError
from calipers.tasks import LoadContext, get_task
from calipers.types import Sample

HOW = "Put the files in <data-dir>/gpqa/."
GPQA = HubSource("Idavidrein/gpqa", "gpqa_diamond", "train")

_OFFLINE_SCRIPT = """
import json, sys
from calipers.errors import DataError
from calipers.datasets import load_hub_rows
try:
    load_hub_rows("mmlu", "cais/mmlu", config="all", split="test", how_to_get="HOW-TO")
except DataError as e:
    print(json.dumps({"message": e.message, "hint": e.hint}))
"""


def test_offline_and_not_cached_is_a_clear_data_error(tmp_path: Path) -> None:
    """The real ``datasets.load_dataset``, offline, with an empty cache."""
    pytest.importorskip("datasets")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "HF_DATASETS_CACHE": str(tmp_path / "hf" / "datasets"),
    }
    out = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    err = json.loads(out.strip().splitlines()[-1])
    assert err["message"].startswith(
        "mmlu: no local data directory is set, and loading "
        "cais/mmlu, config all, split test from the Hugging Face "
        "hub failed: the hub cannot be reached"
    )
    assert "not in the local cache" in err["message"]
    assert "Go online" in err["hint"] and "--data-dir" in err["hint"]
    assert err["hint"].endswith("HOW-TO")


def test_gated_dataset_says_how_to_get_access() -> None:
    # datasets' own wording for a gated repository without access
    e = Exception(
        "Dataset 'Idavidrein/gpqa' is a gated dataset on the Hub. Visit the dataset "
        "page at https://huggingface.co/datasets/Idavidrein/gpqa to ask for access."
    )
    err = hub_error("gpqa", e, GPQA, HOW)
    assert "gpqa: no local data directory" in err.message and "gated" in err.message
    assert "Idavidrein/gpqa, config gpqa_diamond, split train" in err.message
    assert err.hint is not None
    assert "https://huggingface.co/datasets/Idavidrein/gpqa" in err.hint
    assert "huggingface-cli login" in err.hint and HOW in err.hint


def test_gated_repo_error_class_found_in_the_cause_chain() -> None:
    class GatedRepoError(Exception):
        pass

    outer = RuntimeError("could not load")
    outer.__cause__ = GatedRepoError("401")
    assert "gated" in hub_error("gpqa", outer, GPQA, HOW).message


def test_unknown_split_and_config_list_the_available_ones() -> None:
    src = HubSource("TIGER-Lab/MMLU-Pro", None, "dev")
    e = ValueError("Unknown split \"dev\". Should be one of ['test', 'validation'].")
    err = hub_error("mmlu_pro", e, src, HOW)
    assert "has no split 'dev'" in err.message and "'test', 'validation'" in err.message
    e = ValueError("BuilderConfig 'gpqa_x' not found. Available: ['gpqa_main', 'gpqa_diamond']")
    err = hub_error("gpqa", e, HubSource("Idavidrein/gpqa", "gpqa_x", "train"), HOW)
    assert "has no config 'gpqa_x'" in err.message and "'gpqa_diamond'" in err.message


def test_other_failures_keep_their_message() -> None:
    err = hub_error(
        "bbh", OSError("disk full"), HubSource("SaylorTwift/bbh", "navigate", "test"), HOW
    )
    assert "OSError: disk full" in err.message and "SaylorTwift/bbh" in err.message


def test_no_route_to_the_hub_is_an_offline_error() -> None:
    class ConnectError(Exception):  # httpx's, raised through huggingface_hub's file system
        pass

    err = hub_error(
        "bbq",
        ConnectError("[Errno -2] Name or service not known"),
        HubSource("heegyu/bbq", None, "test", data_file="data/Age.jsonl"),
        HOW,
    )
    assert "heegyu/bbq, file data/Age.jsonl (test split)" in err.message
    assert "the hub cannot be reached" in err.message
    assert err.hint is not None and err.hint.startswith("Go online once")


def test_a_repository_behind_a_loading_script_is_named_as_such() -> None:
    # datasets >= 4.0, load.py: the repository still has <name>.py at its root
    e = RuntimeError("Dataset scripts are no longer supported, but found bbh.py")
    err = hub_error("bbh", e, HubSource("lukaemon/bbh", "navigate", "test"), HOW)
    assert "lukaemon/bbh, config navigate, split test" in err.message
    assert "loads through a Python script" in err.message and "Retry" not in (err.hint or "")
    assert err.hint is not None and "datasets<4" in err.hint and "--data-dir" in err.hint


def test_a_raw_data_file_is_read_with_the_json_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    sha = "5" * 40
    calls: list[tuple[Any, ...]] = []

    class FakeDataset:
        cache_files = ({"filename": "/c/json/default-0123/0.0.0/abcd/json-train.arrow"},)

        def to_list(self) -> list[dict[str, Any]]:
            return [{"example_id": 0}]

    class FakeLib:
        @staticmethod
        def load_dataset(path: str, *, data_files: str, split: str) -> FakeDataset:
            calls.append((path, data_files, split))
            return FakeDataset()

    monkeypatch.setattr(_hub, "_datasets", lambda *a: FakeLib)
    rows = load_hub_rows(
        "bbq", "heegyu/bbq", split="test", revision=sha, data_file="data/Age.jsonl", how_to_get=HOW
    )
    assert calls == [("json", f"hf://datasets/heegyu/bbq@{sha}/data/Age.jsonl", "train")]
    assert list(rows) == [{"example_id": 0}]
    assert rows.source.commit == sha  # the pinned revision is a commit
    assert rows.source.uri == f"hf://datasets/heegyu/bbq@{sha}/data/Age.jsonl"
    assert rows.source.describe() == "heegyu/bbq, file data/Age.jsonl (test split)"
    unpinned = HubSource("x/y", None, "test", data_file="d/a.jsonl")
    assert unpinned.file_url == unpinned.uri == "hf://datasets/x/y@main/d/a.jsonl"
    assert HubSource("x/y", "c", "test").file_url is None


def test_datasets_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(DataError, match=r"gsm8k: no local data directory .* `datasets`") as e:
        get_task("gsm8k").load(LoadContext())
    assert e.value.hint is not None and "pip install 'calipers[hub]'" in e.value.hint


def test_rows_and_source_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    sha = "a" * 40

    class FakeDataset:
        cache_files = ({"filename": f"/c/openai___gsm8k/main/0.0.0/{sha}/gsm8k-test.arrow"},)

        def to_list(self) -> list[dict[str, Any]]:
            return [{"question": "q", "answer": "#### 1"}]

    class FakeLib:
        @staticmethod
        def load_dataset(
            path: str, name: str | None, *, split: str, revision: str | None
        ) -> FakeDataset:
            assert (path, name, split, revision) == ("openai/gsm8k", "main", "test", None)
            return FakeDataset()

    monkeypatch.setattr(_hub, "_datasets", lambda *a: FakeLib)
    rows = load_hub_rows("gsm8k", "openai/gsm8k", config="main", split="test", how_to_get=HOW)
    assert list(rows) == [{"question": "q", "answer": "#### 1"}] and len(rows) == 1
    assert rows.source == HubSource("openai/gsm8k", "main", "test", None, sha)
    assert rows.source.uri == f"hf://datasets/openai/gsm8k@{sha}/main/test"
    # without a commit in the cache path: the requested revision
    assert HubSource("x/y", None, "test", "v1").uri == "hf://datasets/x/y@v1/default/test"


def test_data_source_of_samples() -> None:
    a = Sample(id="1", input="q", metadata={"data_source": "hf://datasets/a@1/x/test"})
    b = Sample(id="2", input="q", metadata={"data_source": "hf://datasets/b@2/y/test"})
    assert data_source([a, b, a]) == "hf://datasets/a@1/x/test; hf://datasets/b@2/y/test"
    assert data_source([Sample(id="3", input="q")]) is None


def test_a_data_dir_never_touches_the_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def boom(*a: Any) -> Any:
        raise AssertionError("hub used")

    monkeypatch.setattr(_hub, "_fetch", boom)
    with pytest.raises(DataError, match=r"gsm8k: expected the folder"):
        get_task("gsm8k").load(LoadContext(data_dir=tmp_path))
    monkeypatch.setenv("CALIPERS_DATA", str(tmp_path))
    with pytest.raises(DataError, match=r"gsm8k: expected the folder"):
        get_task("gsm8k").load(LoadContext())
