"""Planted runs: a 100-item task whose fake model is right on the first K items of a run,
K planted per run by rewriting the model's script between runs (the same model spec, as a
hosted model changing under its name), each run made by ``calipers run --config``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from calipers.cli import cli

N = 100


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@dataclass
class Planter:
    root: Path
    store: str

    def task(self, template: str = "{input}") -> Path:
        rows = [{"id": f"q{i}", "input": f"<item {i}>", "target": f"a{i}"} for i in range(N)]
        (self.root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        spec = self.root / "items.yaml"
        spec.write_text(
            "name: items\nversion: '1'\ndata: items.jsonl\n"
            "fields: {id: id, input: input, target: target}\n"
            f"prompt: {{template: {json.dumps(template)}}}\nscorers: [exact_match]\n"
        )
        return spec

    @property
    def config(self) -> Path:
        return self.root / "bot.yaml"

    def write_config(self) -> None:
        script = self.root / "bot.json"
        self.config.write_text(
            f"model: fake:script={script},name=bot\n"
            f"task: [{self.root / 'items.yaml'}]\n"
            "cache: false   # a re-run asks the model again\n"
            "no-report: true\n"
        )

    def runs(self, rights: Sequence[int]) -> list[str]:
        """One run per K in ``rights``: right on items 0..K-1, wrong on the rest."""
        ids = []
        for k in rights:
            answers = {f"<item {i}>": f"a{i}" for i in range(k)} | {"*": "no"}
            (self.root / "bot.json").write_text(json.dumps(answers))
            res = invoke("--store", self.store, "run", "--config", str(self.config), "--json")
            assert res.exit_code == 0, res.output
            data = json.loads(res.stdout)
            assert data["tasks"]["items"]["metrics"]["exact_match"]["value"] == k / N
            ids.append(data["run_id"])
        return ids


@pytest.fixture
def planter(tmp_path: Path) -> Planter:
    p = Planter(tmp_path, f"sqlite:///{tmp_path / 'trend.db'}")
    p.task()
    p.write_config()
    return p


TrendRun = Callable[..., Result]


@pytest.fixture
def trend(planter: Planter) -> TrendRun:
    def run(*args: str) -> Result:
        return invoke("--store", planter.store, "trend", "bot", "items", *args)

    return run
