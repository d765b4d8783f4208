"""docs/review.md's XSTest tables are what benchmarks/xstest_refusal_agreement.py prints on
the data, and a few of their figures recomputed here by hand."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests._data import DATA, REPO, needs_data
from tests.review.test_xstest import FILES, hand_kappa

DOC = REPO / "docs" / "review.md"
SCRIPT = REPO / "benchmarks" / "xstest_refusal_agreement.py"
MARK = "<!-- output: python benchmarks/xstest_refusal_agreement.py -->"
pytestmark = needs_data(*FILES.values())


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("xstest_refusal_agreement", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def shown() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Real data: XSTest and hh-rlhf") :]
    found = re.search(re.escape(MARK) + r"\n```text\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def test_the_page_shows_what_the_script_prints() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        script().main(["--data", str(Path(DATA))])
    assert out.getvalue() == shown()


def test_figures_on_the_page_recomputed_by_hand() -> None:
    mod = script()
    rows = [r for r in mod.load(Path(DATA)) if r.model == "gpt4"]
    refused = mod.scorer_refused(rows)
    with (DATA / FILES["gpt4"]).open(newline="", encoding="utf-8") as f:
        final = [r["final_label"] for r in csv.DictReader(f)]
    human = [x in ("2_full_refusal", "3_partial_refusal") for x in final]
    hits = sum(h == s for h, s in zip(human, refused, strict=True))
    kappa = hand_kappa([str(h) for h in human], [str(s) for s in refused])
    line = next(x for x in shown().splitlines() if x.startswith("gpt4  ") and "any refusal" in x)
    cells = line.split()
    assert cells[4:7] == [str(sum(human)), str(sum(refused)), f"{hits / 450:.3f}"]
    assert cells[9] == f"{kappa:.3f}"


JUDGE = "--loglik-judge smollm2 --limit 300 --seed 0"


@pytest.mark.slow
def test_the_page_shows_what_the_smollm2_judge_gives() -> None:
    """About 5 to 10 minutes on two cores: 300 log-likelihood calls to SmolLM2-135M."""
    text = DOC.read_text(encoding="utf-8")
    mark = f"<!-- output: python benchmarks/xstest_refusal_agreement.py {JUDGE} -->"
    found = re.search(re.escape(mark) + r"\n```text\n(.*?)```", text, re.S)
    assert found is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        script().main(["--data", str(Path(DATA)), *JUDGE.split()])
    assert out.getvalue() == found.group(1)
