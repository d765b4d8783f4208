"""The python example in docs/statistics.md runs and prints what it says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"


def test_statistics_doc_example_runs_and_its_comments_are_true() -> None:
    code = "\n".join(re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    promised = [m.group(1).split(" — ")[0] for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    assert out.getvalue().splitlines() == promised
