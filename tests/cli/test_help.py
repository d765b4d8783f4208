"""``calipers --help``: the commands grouped into sections (``models`` next to ``model``, each
saying which is which), and the exit-code table of calipers.errors at the end."""

from __future__ import annotations

import re

from click.testing import CliRunner

import calipers.errors as errors_module
from calipers.cli import cli
from calipers.cli._app import COMMANDS, SECTIONS
from calipers.errors import EXIT_CODES, format_exit_codes

# What each code means, written out here (not read from the table).
MEANINGS = {
    0: ("done", "finished", "pass / promote / no drift / same"),
    1: ("bug", "bug", "fail / roll back / drift / changed"),
    2: ("error", "error", "inconclusive / keep watching"),
    3: ("-", "every sample of a task failed", "error"),
    4: ("-", "--deadline reached", "bug"),
    130: ("interrupted", "interrupted (resumable)", "interrupted"),
}


def _help() -> str:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def _sections(text: str) -> dict[str, list[str]]:
    """Help sections (``Title:`` then indented lines) by title."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            out[current] = []
        elif current is not None and line.startswith("  "):
            out[current].append(line[2:])
    return out


def test_the_table_says_what_each_code_means() -> None:
    assert {row.code: (row.most, row.run, row.decision) for row in EXIT_CODES} == MEANINGS


def test_help_ends_with_every_exit_code_of_the_table() -> None:
    lines = _sections(_help())["Exit codes"]
    assert lines[0].split()[0] == "code"
    listed = {int(line.split()[0]): line for line in lines[1:] if line[:1].isdigit()}
    assert set(listed) == set(MEANINGS)
    for code, (_most, _run, decision) in MEANINGS.items():
        assert listed[code].endswith(decision), listed[code]
    assert "every sample of a task" in listed[3] and "failed" in "\n".join(lines)


def test_the_errors_docstring_draws_the_same_table() -> None:
    drawn = "\n".join("    " + line if line else "" for line in format_exit_codes().splitlines())
    assert drawn in (errors_module.__doc__ or "")


def test_help_groups_every_command_once_one_line_each() -> None:
    sections = _sections(_help())
    listed: list[str] = []
    for title in SECTIONS:
        for line in sections[title]:
            assert re.match(r"^[a-z-]+ +\S", line), f"{title}: {line!r} is not one line"
            listed.append(line.split()[0])
    assert sorted(listed) == sorted(COMMANDS)  # each command once, none under "Other"
    assert "Other" not in sections


def test_providers_and_cards_are_told_apart() -> None:
    rows = {line.split()[0]: line for line in _sections(_help())["Catalogues"]}
    assert "Model providers" in rows["models"] and "how to name a model" in rows["models"]
    assert "Model cards" in rows["model"]
    results = {line.split()[0] for line in _sections(_help())["Results (stored runs)"]}
    assert {"runs", "show"} <= results
    assert "suite" in {line.split()[0] for line in _sections(_help())["Production"]}


def test_the_old_command_names_still_work() -> None:
    runner = CliRunner()
    for command in ("models", "model list", "runs", "show", "suite list", "suite show"):
        result = runner.invoke(cli, [*command.split(), "--help"])
        assert result.exit_code == 0, (command, result.output)
