"""Helpers of the review CLI tests: invoke the CLI, make runs with the fake model, write
question files."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli

SINGLE_QUESTIONS = """\
questions:
  - id: correct
    type: pass_fail
    prompt: Is the answer correct?
  - type: refusal
"""

PAIRWISE_QUESTIONS = """\
questions:
  - id: preference
    type: preference
    prompt: Which answer is better?
    ties: true
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'review.db'}"


def make_run(url: str, task: Path, model: str, *extra: str) -> str:
    """A run of ``task`` with the fake ``model``; its id."""
    code, out, err = invoke("run", "--store", url, "-m", model, "-t", str(task), "--json",
                            "--no-report", *extra)  # fmt: skip
    assert code == 0, err
    return str(json.loads(out)["run_id"])


def questions(tmp_path: Path, text: str = SINGLE_QUESTIONS, name: str = "q.yaml") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)
