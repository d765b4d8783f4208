"""The dashboard's Review section: a campaign's report as a page and as JSON, with figures
checked against values computed in the test."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from calipers.store import ImportedJudgment, ReviewCampaignRecord, ReviewItemRecord, Store
from calipers.web import create_app
from tests.web.conftest import LOOPBACK, wilson

QUESTIONS = [{"type": "pass_fail", "id": "ok", "prompt": "Is it right?"}]


@pytest.fixture
def store_path(tmp_path: Path) -> str:
    path = str(tmp_path / "s.db")
    with Store.open(path) as s:
        for name in ("first", "second"):
            s.create_campaign(
                ReviewCampaignRecord(name=name, kind="single", questions=QUESTIONS, k=2)
            )
            items = [
                ReviewItemRecord(item_key=f"i{n}", payload={"p": "<b>x</b>"}) for n in range(20)
            ]
            s.add_review_items(name, items)
            s.add_rater(name, "ann", f"h-ann-{name}", pool="business")
            s.add_rater(name, "bob", f"h-bob-{name}", pool="experts")
        # "second": both raters say pass on items 0-11, fail on 12-19 (unanimous everywhere)
        rows = [
            ImportedJudgment(item_key=f"i{n}", rater=r, answers={"ok": n < 12})
            for n in range(20)
            for r in ("ann", "bob")
        ]
        s.import_judgments("second", rows)
    return path


@pytest.fixture
def client(store_path: str) -> Iterator[TestClient]:
    with TestClient(create_app(store_path), base_url=LOOPBACK) as c:
        yield c


def test_the_newest_campaign_is_shown_with_its_figures(client: TestClient) -> None:
    page = client.get("/review")
    assert page.status_code == 200
    assert "Review report: second" in page.text and "/review?campaign=first" in page.text
    assert "<b>x</b>" not in page.text  # payloads are not on this page, and text is escaped
    data = client.get("/api/review").json()
    assert data["campaign"] == "second" and data["campaigns"] == ["first", "second"]
    [q] = data["report"]["questions"]
    rate = q["rates"][0]["estimate"]
    low, high = wilson(12, 20)  # every item unanimous: a proportion of 12 items in 20
    assert math.isclose(rate["value"], 0.6) and math.isclose(rate["low"], low, rel_tol=1e-9)
    assert math.isclose(rate["high"], high, rel_tol=1e-9)
    assert math.isclose(q["alpha"]["value"], 1.0)  # two raters in full agreement


def test_a_campaign_by_name_and_an_unknown_one(client: TestClient) -> None:
    first = client.get("/api/review", params={"campaign": "first"}).json()
    assert first["report"]["n_judgments"] == 0
    missing = client.get("/review", params={"campaign": "nope"})
    assert missing.status_code == 404 and "No review campaign is named" in missing.text


def test_no_campaign_yet(tmp_path: Path) -> None:
    with TestClient(create_app(str(tmp_path / "empty.db")), base_url=LOOPBACK) as c:
        page = c.get("/review")
    assert page.status_code == 200 and "calipers review create" in page.text
