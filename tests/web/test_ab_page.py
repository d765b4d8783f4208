"""The A/B page over logged shadow traffic whose arms are known by construction
(tests/monitor/_ab_fixtures.py): the candidate fails 20% of its calls against the baseline's
1%, so the error-rate guardrail shows harm and the decision is roll back. Scores were stored
beforehand by ``calipers ab`` with a fake judge; the page must read them and score nothing.
The error-rate effect is checked against the rates counted here from the records; the JSON
against ``calipers ab --json`` run with the command the page prints."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.monitor import ABConfig, run_ab
from calipers.store import Store, TrafficRecord
from calipers.web import create_app
from tests.monitor._ab_fixtures import Arm, canary_traffic, judge_script, shadow_traffic
from tests.web.conftest import LOOPBACK, Tags

N, JUDGE = 400, "llm_judge:helpfulness"


@pytest.fixture(scope="module")
def ab_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, list[TrafficRecord]]:
    tmp = tmp_path_factory.mktemp("ab")
    path, judge = str(tmp / "ab.db"), judge_script(tmp)
    records = shadow_traffic(N, Arm(error=0.01, good=0.5), Arm(error=0.2, good=0.6), seed=3)
    with Store.open(path) as store:
        store.add_traffic(records)
        asyncio.run(run_ab(store, ABConfig(scorers=(JUDGE,), judge_model=judge, sample=300)))
    return path, judge, records


@pytest.fixture(scope="module")
def client(ab_store: tuple[str, str, list[TrafficRecord]]) -> Iterator[TestClient]:
    with TestClient(create_app(ab_store[0]), base_url=LOOPBACK) as c:
        yield c


def main(html: str) -> str:
    return html[html.index("<main>") :]


def n_scores(path: str) -> int:
    with Store.open(path) as store:
        return len(store.get_online_scores())


def test_worse_errors_roll_back_with_the_guardrail_marked(
    client: TestClient, ab_store: tuple[str, str, list[TrafficRecord]]
) -> None:
    html = main(client.get("/ab").text)
    tags = Tags(html).tags
    assert [a["data-decision"] for t, a in tags if "data-decision" in a] == ["roll_back"]
    assert ">roll back</p>" in html
    rows = {
        a["data-metric"]: a["data-status"]
        for t, a in tags
        if t == "tr" and "guardrail" in (a.get("class") or "")
    }
    assert rows["error_rate"] == "failing" and rows["cost"] == "skipped"
    # the effect is the difference of the two arms' failure rates, counted here
    failed = {
        role: sum(r.status != 200 for r in ab_store[2] if r.role == role)
        for role in ("baseline", "candidate")
    }
    diff = 100 * (failed["candidate"] - failed["baseline"]) / N
    row = re.search(r'data-metric="error_rate".*?</tr>', html, re.S)
    assert row and f"{diff:+.2f} [" in row.group(0) and "FAILING" in row.group(0)
    assert "error_rate: worse by more than 0.01" in html
    assert f'<span class="n-used">{N}</span>' in html


def test_primary_is_the_stored_judge_score_with_its_path_chart(client: TestClient) -> None:
    html = main(client.get("/ab").text)
    assert f"Primary metric: {JUDGE}, the only quality score stored" in html
    assert f'<input name="scorer" value="{JUDGE}"' in html  # kept when the form is sent
    none = main(client.get("/ab?scorer=").text)
    assert 'id="primary"' in none and "No primary metric" in none
    assert 'figure class="chart ab-path"' in html
    chart = re.search(r'<figure class="chart ab-path">(.*?)</figure>', html, re.S)
    assert chart is not None
    points = chart.group(1).count('<circle class="pt"')
    n_shown = re.search(r'class="n-primary">([\d,]+)<', html)
    assert n_shown is not None
    n_primary = int(n_shown.group(1))
    assert points == min(200, n_primary) and 'class="band"' in chart.group(1)
    assert "no difference" in chart.group(1)  # the zero rule


def test_page_load_scores_nothing(
    client: TestClient, ab_store: tuple[str, str, list[TrafficRecord]]
) -> None:
    before = n_scores(ab_store[0])
    html = main(client.get("/ab?scorer=llm_judge:correctness").text)
    assert n_scores(ab_store[0]) == before
    assert "no request has a llm_judge:correctness score for both arms yet" in html
    assert "scores come from <code>calipers ab --scorer" in html


def test_api_is_strict_json_and_matches_the_printed_cli_command(
    client: TestClient, ab_store: tuple[str, str, list[TrafficRecord]]
) -> None:
    def no_nan(x: str) -> None:
        raise AssertionError(f"not strict JSON: {x}")

    r = client.get("/api/ab?since=2026-11-01T08:00&alpha=0.1")
    api = json.loads(r.text, parse_constant=no_nan)
    assert r.status_code == 200 and api["decision"] == "roll_back" and api["alpha"] == 0.1
    html = main(client.get("/ab?since=2026-11-01T08:00&alpha=0.1").text)
    code = re.search(r'<code class="cmd-same">(.*?)</code>', html, re.S)
    assert code is not None
    cmd = code.group(1)
    args = shlex.split(cmd.replace("&#39;", "'").replace("SPEC", ab_store[1]))
    out = CliRunner().invoke(cli, [*args[1:], "--json"])
    assert out.exit_code == 1, out.output  # roll back
    assert json.loads(out.output) == api


def test_no_traffic_mixed_modes_and_bad_parameters(client: TestClient, tmp_path: Path) -> None:
    r = client.get("/ab?since=2030-01-01")
    assert r.status_code == 200 and "No gateway traffic is logged" in r.text
    j = client.get("/api/ab?since=2030-01-01")
    assert j.status_code == 404 and "calipers gateway" in j.json()["hint"]
    bad = client.get("/ab?alpha=abc")
    assert bad.status_code == 400 and "Bad alpha=&#39;abc&#39;" in bad.text
    xss = client.get("/ab?scorer=<script>alert(1)</script>").text
    assert "<script>" not in xss and "&lt;script&gt;" in xss
    mixed = str(tmp_path / "mixed.db")
    with Store.open(mixed) as store:
        store.add_traffic(
            shadow_traffic(30, Arm(), Arm(), seed=1) + canary_traffic(30, Arm(), Arm(), seed=2)
        )
    with TestClient(create_app(mixed), base_url=LOOPBACK) as c:
        page = c.get("/ab")
        assert page.status_code == 400 and "not mixed" in page.text
        assert 'href="/ab?mode=shadow"' in page.text
        one = c.get("/ab?mode=shadow")
        assert one.status_code == 200 and 'data-decision="keep_watching"' in one.text
