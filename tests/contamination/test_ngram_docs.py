"""The Python example of docs/contamination.md's n-gram section runs and prints what its
comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import calipers.contamination
from tests._data import DATA, needs_data

DOC = Path(__file__).resolve().parents[2] / "docs" / "contamination.md"
NAMES = ("build_index", "ngram_check", "render_ngram_report", "task_item_texts")


@needs_data("mmlu/test")
def test_ngram_doc_example_runs_and_its_comments_are_true(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = [n for n in NAMES if not hasattr(calipers.contamination, n)]
    assert not missing, f"calipers.contamination must export {', '.join(missing)}"
    section = DOC.read_text(encoding="utf-8").split("## n-gram overlap", 1)[1].split("\n## ")[0]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    monkeypatch.setenv("CALIPERS_DATA", str(DATA))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    lines = out.getvalue().splitlines()
    promised = re.findall(r"^print\(.*\)\s+# (.*)$", code, re.M)
    assert promised and all(p in lines for p in promised)
    assert any("overlapping items" in line for line in lines)  # the rendered table
