"""docs/review.md's walkthrough, run as written: the setup block in bash, every `$ calipers`
command through the CLI, and the labelling step through the review pages (two raters answering
as XSTest's two annotators did). The lines the page shows under each command must be in what
the command prints, and the closing claim (the corrected interval covers XSTest's own rate, the
judge's does not) is checked against the dataset."""

from __future__ import annotations

import csv
import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.store import Store
from calipers.web import review_app
from tests._data import DATA, REPO, needs_data

pytestmark = needs_data("xstest/model_completions/xstest_v2_completions_gpt4.csv")

DOC = REPO / "docs" / "review.md"
CSV = DATA / "xstest" / "model_completions" / "xstest_v2_completions_gpt4.csv"


def _walkthrough() -> tuple[str, list[tuple[str, list[str]]]]:
    text = DOC.read_text(encoding="utf-8")
    setup = re.search(r"<!-- walkthrough: setup -->\n```bash\n(.*?)```", text, re.S)
    assert setup, "docs/review.md has no walkthrough setup block"
    end = text.index("## Campaigns")
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", text[setup.end() : end], re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif line.strip():
                steps[-1][1].append(line)
    return setup.group(1), steps


def _norm(s: str) -> str:
    return " ".join(s.split())


def _promised(line: str) -> list[str]:
    """The parts of a shown line that must appear: `...` stands for what changes per run."""
    return [p.strip() for p in line.split("...") if p.strip(" │")]


def _label(token: str, store: Store, answers: dict[str, str]) -> int:
    """Sign in with the link's token and answer every item as ``answers`` (prompt -> column
    value) says; returns how many were answered."""
    done = 0
    with TestClient(review_app(store, "xstest"), base_url="http://127.0.0.1") as c:
        assert c.get(f"/r/{token}", follow_redirects=False).status_code == 303
        while True:
            page = c.get("/rate").text
            m = re.search(r'action="/rate/(\d+)"', page)
            if m is None:
                return done
            prompt = re.search(r'<pre class="text" id="prompt">(.*?)</pre>', page, re.S)
            assert prompt is not None
            complied = answers[html.unescape(prompt.group(1))] == "1_full_compliance"
            csrf = re.search(r'name="csrf" value="([^"]*)"', page)
            assert csrf is not None
            r = c.post(
                f"/rate/{m.group(1)}",
                data={"csrf": csrf.group(1), "q.complied": "pass" if complied else "fail",
                      "seconds": "12"},
                headers={"sec-fetch-site": "same-origin"},
                follow_redirects=False,
            )  # fmt: skip
            assert r.status_code == 303, r.text
            done += 1


def test_the_walkthrough_runs_and_prints_what_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup, steps = _walkthrough()
    home = tmp_path / "home"
    env = os.environ | {"CALIPERS_DATA": str(DATA), "CALIPERS_HOME": str(home)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    setup = setup.replace('cd "$(mktemp -d)" && export CALIPERS_HOME=$PWD/home\n', "")
    subprocess.run(["bash", "-ec", setup], cwd=tmp_path, env=env, check=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CALIPERS_HOME", str(home))
    rows = list(csv.DictReader(CSV.open(encoding="utf-8")))
    tokens: dict[str, str] = {}
    outputs: dict[str, str] = {}
    assert len(steps) >= 12
    for command, shown in steps:
        args = shlex.split(command)
        assert args[0] == "calipers"
        if args[1:3] == ["review", "status"]:  # step 4: the raters label first
            with Store.open() as store:
                for who, column in (("alice", "annotation_1"), ("bob", "annotation_2")):
                    labels = {r["prompt"]: r[column] for r in rows}
                    assert _label(tokens[who], store, labels) == 80
        result = CliRunner().invoke(cli, args[1:], catch_exceptions=False)
        assert result.exit_code == 0, (command, result.stderr)
        out = _norm(result.output)  # stdout and stderr (notes like "Wrote F" go there)
        outputs[command] = out
        for line in shown:
            for part in _promised(line):
                assert _norm(part) in out, (command, part, result.stdout)
        if args[1:3] == ["review", "invite"]:
            link = re.search(r"/r/(\S+)", result.stdout)
            assert link is not None
            tokens[args[args.index("--rater") + 1]] = link.group(1)
    # the page's closing claim, against XSTest's own final labels
    complied = sum(r["final_label"] == "1_full_compliance" for r in rows) / len(rows)
    assert round(100 * complied, 1) == 51.1
    corrected = outputs["calipers show latest --judge-corrected xstest"]
    judge = re.search(r"judge only │ ([\d.]+) \[([\d.]+), ([\d.]+)\]", corrected)
    ppi = re.search(r"judge-corrected \(PPI\+\+\) │ ([\d.]+) \[([\d.]+), ([\d.]+)\]", corrected)
    assert judge and ppi
    assert not float(judge[2]) <= complied <= float(judge[3])
    assert float(ppi[2]) <= complied <= float(ppi[3])
    assert (tmp_path / "labels.jsonl").read_text().count("\n") == 80
