"""The example in docs/ab.md runs as written and prints what the page says it prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "ab.md"


@pytest.mark.slow  # three `calipers` processes and 1,500 requests: ~20 s
def test_ab_doc_example_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    script = re.search(r"```bash\n(.*?)```", text, re.S)
    assert script is not None
    code = script.group(1).replace('cd "$(mktemp -d)"', f"cd {tmp_path}")
    env = {k: v for k, v in os.environ.items() if k not in ("CALIPERS_STORE", "CALIPERS_HOME")}
    # the doc's `calipers` is the one installed beside this interpreter (venv not activated)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run(
        ["bash", "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "ROLL BACK (exit 1)" in lines and "exit 1" in lines and "exit 0" in lines
    assert "promote 975 [2968, 1975]" in lines
    assert "scored refusal: 2968 new, 0 reused" in lines
    assert "primary: 0.125 [0.070, 0.192] (not decisive: a guardrail failed)" in out.stdout
