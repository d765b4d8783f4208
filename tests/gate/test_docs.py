"""Every command in docs/gate.md runs and exits as the doc says; the pytest example passes;
the GitHub Actions workflow is valid YAML whose gate command has only real options."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from calipers.cli import cli

pytest_plugins = ["pytester"]

DOC = (Path(__file__).resolve().parents[2] / "docs" / "gate.md").read_text(encoding="utf-8")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_the_shell_commands_run_and_exit_as_documented(tmp_path: Path) -> None:
    [script] = blocks("bash")
    outputs = []
    for line in script.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line.startswith("calipers "):
            subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True)
            continue
        words = shlex.split(line, comments=True)
        expected = int(re.findall(r"# exit (\d)$", line)[0])
        r = CliRunner().invoke(cli, words[1:], catch_exceptions=False)
        assert r.exit_code == expected, (line, r.output)
        outputs.append(" ".join(r.stdout.split()))
    assert "(reused run" in outputs[1] and "needs about 684 items" in outputs[1]
    assert (tmp_path / "gate.xml").exists() and (tmp_path / "gate.md").exists()
    shown = blocks("text")[1].strip().splitlines()
    assert all(" ".join(s.split()) in outputs[2] for s in shown)


def test_the_pytest_example_passes(pytester: pytest.Pytester) -> None:
    [example] = [b for b in blocks("python") if b.startswith("# test_model.py")]
    pytester.makepyfile(
        test_model=example,
        test_shown="""
        def test_shown(calipers_eval):
            base = calipers_eval(model="fake:echo", task="dyn_arithmetic", limit=30)
            cand = calipers_eval(model="fake:const=#### 4", task="dyn_arithmetic", limit=30)
            assert cand.not_worse_than(base, by=0.02)
    """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    [shown] = [b for b in blocks("text") if b.startswith("assert <calipers gate")]
    assert "E       " + shown.strip() in result.stdout.str()


def test_the_python_example_prints_what_it_says() -> None:
    [example] = [b for b in blocks("python") if not b.startswith("# test_model.py")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "docs/gate.md", "exec"), {})
    promised = re.findall(r"print\(.*\)\s+# (.*)", example)
    assert out.getvalue().splitlines() == promised


def test_the_github_workflow_is_valid_and_its_gate_command_parses() -> None:
    [workflow] = blocks("yaml")
    steps = yaml.safe_load(workflow)["jobs"]["gate"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    for action in (
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/cache/restore",
        "actions/cache/save",
        "actions/upload-artifact",
    ):
        assert action in uses
    assert any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in steps)
    [run] = [s["run"] for s in steps if "calipers gate" in s.get("run", "")]
    command = re.search(r"calipers gate (.*?) \|\|", run.replace("\\\n", " "), re.S)
    assert command is not None
    args = shlex.split(command.group(1))
    ctx = cli.commands["gate"].make_context("gate", args)  # raises on an unknown option
    assert ctx.params["max_drop"] == 0.03 and ctx.params["junit"] == "gate.xml"
