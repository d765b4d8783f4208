"""Shared fixtures: every test runs in an isolated calipers home (temporary folder)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._data import require

# Tests never reach the Hugging Face hub: a benchmark without local data must fail at once with
# the offline message (huggingface_hub reads this once, at import), never download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``needs_data`` (tests/_data.py): skip without the files, but fail under CI."""
    for mark in item.iter_markers("needs_data"):
        require(*mark.args)


@pytest.fixture(autouse=True)
def calipers_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "calipers-home"
    monkeypatch.setenv("CALIPERS_HOME", str(home))
    monkeypatch.delenv("CALIPERS_STORE", raising=False)
    monkeypatch.delenv("CALIPERS_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    yield home


CAPITALS = [
    {"id": "fr", "question": "Capital of France?", "answer": "Paris", "region": "europe"},
    {"id": "de", "question": "Capital of Germany?", "answer": "Berlin", "region": "europe"},
    {"id": "it", "question": "Capital of Italy?", "answer": "Rome", "region": "europe"},
    {"id": "jp", "question": "Capital of Japan?", "answer": "Tokyo", "region": "asia"},
    {"id": "cn", "question": "Capital of China?", "answer": "Beijing", "region": "asia"},
    {"id": "kr", "question": "Capital of South Korea?", "answer": "Seoul", "region": "asia"},
    {"id": "eg", "question": "Capital of Egypt?", "answer": "Cairo", "region": "africa"},
    {"id": "ke", "question": "Capital of Kenya?", "answer": "Nairobi", "region": "africa"},
]


@pytest.fixture
def capitals_task(tmp_path: Path) -> Path:
    """A generation task file: 8 capitals in 3 regions, scored by exact match."""
    data = tmp_path / "capitals.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in CAPITALS), encoding="utf-8")
    spec = tmp_path / "capitals.yaml"
    spec.write_text(
        "name: capitals\n"
        "version: '2'\n"
        "data: capitals.jsonl\n"
        "fields: {id: id, input: question, target: answer, category: region}\n"
        'prompt: {template: "Q: {input}\\nA:"}\n'
        "scorers: [exact_match]\n"
        "generation: {max_tokens: 8}\n",
        encoding="utf-8",
    )
    return spec


# 12 four-option questions; the right option's text always starts with "right".
MC_ITEMS = [
    {
        "id": f"q{i}",
        "question": f"Question {i}?",
        "options": [f"right {i}" if j == i % 4 else f"wrong {i}.{j}" for j in range(4)],
        "answer": i % 4,
    }
    for i in range(12)
]


@pytest.fixture
def mc_task(tmp_path: Path) -> Path:
    """A multiple-choice task file of MC_ITEMS, scored by the chosen letter."""
    data = tmp_path / "mc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in MC_ITEMS), encoding="utf-8")
    spec = tmp_path / "mc.yaml"
    spec.write_text(
        "name: mc\nkind: generate\ndata: mc.jsonl\ntarget_type: index\n"
        "fields: {input: question, target: answer, choices: options, id: id}\n"
        'prompt:\n  template: "{input}\\n{choices}\\nAnswer:"\n'
        "  instruction: Answer with the letter of the right option.\n"
        "scorers: [choice_letter]\n",
        encoding="utf-8",
    )
    return spec
