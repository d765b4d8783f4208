"""SWE-bench export: the patch is pulled from the final reply, one prediction per instance in
SWE-bench's format, from the example task in examples/swebench."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.analysis import extract_patch
from calipers.cli import cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "swebench"
DIFF = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


def test_extract_patch() -> None:
    assert extract_patch(f"Here:\n```diff\n{DIFF}```\nDone.") == DIFF
    assert extract_patch(f"```patch\n{DIFF}```") == DIFF
    # the last fenced diff wins (a model that corrects itself)
    assert extract_patch(f"```diff\nold\n```\nbetter:\n```diff\n{DIFF}```") == DIFF
    assert extract_patch(DIFF.rstrip("\n")) == DIFF  # a bare diff
    assert extract_patch("```python\nprint(1)\n```") is None
    assert extract_patch("") is None and extract_patch(None) is None


def test_export_from_the_example_task(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    model = f"fake:script={EXAMPLE / 'replies.json'},name=demo-agent"
    r = CliRunner().invoke(
        cli, ["--store", store, "run", "-m", model, "-t", str(EXAMPLE / "swebench_sample.yaml")]
    )
    assert r.exit_code == 0, r.output
    out = tmp_path / "predictions.jsonl"
    e = CliRunner().invoke(
        cli, ["--store", store, "agent", "export-swebench", "latest", "-o", str(out), "--json"]
    )
    assert e.exit_code == 0, e.output
    summary = json.loads(e.stdout)
    assert summary["predictions"] == 2 and summary["no_patch"] == ["astropy__astropy-12907"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [set(row) for row in rows] == [{"instance_id", "model_name_or_path", "model_patch"}] * 2
    by = {row["instance_id"]: row for row in rows}
    assert set(by) == {"django__django-11099", "astropy__astropy-12907"}
    patch = by["django__django-11099"]["model_patch"]
    assert patch.startswith("diff --git a/django/contrib/auth/validators.py")
    assert "+    regex = r'\\A[\\w.@+-]+\\Z'" in patch and patch.endswith("\n")
    assert "```" not in patch
    assert by["astropy__astropy-12907"]["model_patch"] == ""
    assert {row["model_name_or_path"] for row in rows} == {"demo-agent"}
    none = CliRunner().invoke(
        cli,
        ["--store", store, "agent", "export-swebench", "latest", "-o", str(out), "--epoch", "3"],
    )
    assert none.exit_code == 2 and "no scored item" in none.stderr
