"""The import contract of DESIGN.md ("Layers"), as pyproject's ``[tool.importlinter]`` states it:
calipers keeps it, and each of its contracts fails on the import it forbids (planted in a copy
of the source, or in a small package of its own)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` (this virtualenv's) in ``cwd``, with ``cwd/src`` and ``cwd`` first on
    the path, so the package found is the one there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd / "src"), str(cwd)])}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def verdicts(output: str) -> dict[str, str]:
    """``{contract name: "KEPT" | "BROKEN"}`` from lint-imports' summary."""
    found = re.findall(r"^(.+?) (KEPT|BROKEN)\b", output, flags=re.MULTILINE)
    return dict(found)


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_calipers_keeps_its_import_contract() -> None:
    result = lint_imports(REPO)
    names = {c["name"] for c in contracts().values()}
    assert result.returncode == 0, result.stdout + result.stderr
    assert verdicts(result.stdout) == dict.fromkeys(names, "KEPT")


def test_each_contract_breaks_on_an_import_planted_in_a_copy_of_calipers(tmp_path: Path) -> None:
    shutil.copytree(
        REPO / "src" / "calipers",
        tmp_path / "src" / "calipers",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    pkg = tmp_path / "src" / "calipers"
    by_id = {cid: c["name"] for cid, c in contracts().items()}

    # store imports runner, which imports store: one layer, so the layers allow it; a circle.
    (pkg / "store" / "_planted.py").write_text("import calipers.runner\n")
    circle = lint_imports(tmp_path)
    assert circle.returncode == 1
    assert verdicts(circle.stdout) == {
        by_id["layers"]: "KEPT",
        by_id["acyclic"]: "BROKEN",
        by_id["private"]: "KEPT",
    }
    assert "No cycles are allowed in calipers." in circle.stdout
    assert "- .store -> .runner (1 import)" in circle.stdout

    (pkg / "store" / "_planted.py").unlink()
    # A layer-1 package imports an application (layer 5); an application reaches into
    # analysis' private module.
    (pkg / "types" / "_planted.py").write_text("import calipers.cli\n")
    (pkg / "cli" / "_planted.py").write_text("from calipers.analysis._gate import judge\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    out = result.stdout
    assert verdicts(out)[by_id["layers"]] == "BROKEN"
    assert verdicts(out)[by_id["private"]] == "BROKEN"
    assert "calipers.types is not allowed to import calipers.cli" in out
    assert "- calipers.types._planted -> calipers.cli (l.1)" in out
    private = re.findall(r"^- (\S+ -> \S+) \(l\.", out.split(by_id["private"] + "\n---")[-1], re.M)
    assert private == ["calipers.cli._planted -> calipers.analysis._gate"]


def test_the_private_contract_allows_what_design_allows(tmp_path: Path) -> None:
    """On a small package of its own: a private module is imported from inside its package, and
    other packages use its public ``__init__`` or the shared private ``_util`` (child of the root,
    so everyone's); only a reach into another package's ``_x`` breaks it."""
    files = {
        "toy/__init__.py": "",
        "toy/_util/__init__.py": "HELP = 1\n",
        "toy/a/__init__.py": "from toy.a._inner import THING\n",
        "toy/a/_inner.py": "from toy._util import HELP\nTHING = HELP\n",
        "toy/a/sub/__init__.py": "from toy.a._inner import THING\n",
        "toy/b/__init__.py": "",
        "toy/b/_uses.py": "from toy.a import THING\nfrom toy._util import HELP\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    private = contracts()["private"]
    config = (
        '[tool.importlinter]\nroot_package = "toy"\n\n[[tool.importlinter.contracts]]\n'
        f'name = "private"\ntype = "{private["type"]}"\n'
        'packages_with_private_modules = ["toy"]\n'
    )
    (tmp_path / "pyproject.toml").write_text(config)

    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert verdicts(kept.stdout) == {"private": "KEPT"}

    uses = tmp_path / "toy" / "b" / "_uses.py"
    uses.write_text(uses.read_text() + "from toy.a._inner import THING as AGAIN\n")
    broken = lint_imports(tmp_path)
    assert broken.returncode == 1
    assert verdicts(broken.stdout) == {"private": "BROKEN"}
    assert re.findall(r"^- (.+)$", broken.stdout, re.M) == ["toy.b._uses -> toy.a._inner (l.3)"]
