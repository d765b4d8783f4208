"""The example in docs/human-review-statistics.md runs and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "human-review-statistics.md"


def test_the_example_prints_what_the_page_shows() -> None:
    text = DOC.read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    shown = re.findall(r"```text\n(.*?)```", text, re.S)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    assert out.getvalue() == shown
