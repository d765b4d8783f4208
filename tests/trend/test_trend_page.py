"""The dashboard's /trend page and /api/trend on planted runs."""

from __future__ import annotations

from fastapi.testclient import TestClient

from calipers.web import create_app
from tests.trend.conftest import Planter


def test_the_trend_page_draws_the_series_its_changes_and_the_alert(planter: Planter) -> None:
    ids = planter.runs([80, 80, 81])
    planter.task(template="Q: {input}")
    ids += planter.runs([80, 79, 80, 60, 60])
    with TestClient(create_app(planter.store), base_url="http://127.0.0.1") as client:
        html = client.get("/trend", params={"model": "bot", "task": "items"}).text
        assert 'class="drift-alert regression"' in html and ids[6] in html
        assert html.count('class="pt"') == len(ids)  # one point per run
        assert html.count('class="method-marker"') == 1 and html.count('class="alert-marker"') == 1
        assert "runs, methodology 2" in html and "prompt_template.template" in html
        api = client.get("/api/trend", params={"model": "bot", "task": "items"}).json()
        assert api["regression"]["run_id"] == ids[6]
        start = client.get("/trend").text
        assert "bot · items" in start and "(8 runs)" in start
        missing = client.get("/trend", params={"model": "bot", "task": "nope"})
        assert (
            missing.status_code == 200
            and "No runs of &#39;bot&#39; on &#39;nope&#39;" in missing.text
        )
        run = client.get(f"/runs/{ids[0]}").text
        assert 'href="/trend?model=bot&amp;task=items"' in run
