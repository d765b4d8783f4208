"""The commands in docs/suites.md run on the example logs and print the lines shown."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "suites.md"


def _sessions() -> list[tuple[str, list[str]]]:
    block = re.search(r"```console\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/suites.md has no console block"
    out: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif line.strip():
            out[-1][1].append(line)
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_doc_commands_run_and_print_what_the_doc_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.chdir(ROOT)  # the doc's paths are relative to the repository root
    # the doc shows the TF-IDF fallback (what a plain install has), embeddings installed or not
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    sessions = _sessions()
    assert len(sessions) >= 6
    for command, promised in sessions:
        args = shlex.split(command)
        assert args[0] == "calipers"
        result = CliRunner().invoke(cli, args[1:], catch_exceptions=False)
        assert result.exit_code == 0, (command, result.stderr)
        got = _norm(result.stdout)
        for line in promised:
            assert _norm(line) in got, (command, line, result.stdout)
