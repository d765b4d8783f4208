"""Every page and JSON endpoint over a seeded store (tests/web/conftest.py), through FastAPI's
TestClient. Scores are checked against the Wilson interval and McNemar's exact p-value
computed here from the known right/wrong items; the JSON endpoints against the CLI's own
``--json`` output; escaping against a model whose answer is a script and an image tag."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.store import Store
from calipers.web import CSP, SectionPage, create_app
from calipers.web._sections import param_values
from tests.web.conftest import (
    ALPHA_RIGHT,
    BETA_RIGHT,
    LOOPBACK,
    PAYLOAD,
    XSS_ERRORS,
    N,
    Seeded,
    Tags,
    pct,
)


@pytest.fixture(scope="module")
def client(seeded: Seeded) -> Iterator[TestClient]:
    with TestClient(create_app(seeded.url), base_url=LOOPBACK) as c:
        yield c


def samples_shown(html: str) -> list[str]:
    return Tags(html).attr("details", "data-sample")


# -- runs list -------------------------------------------------------------------------------


def test_runs_list_shows_every_run_with_its_interval_and_errors(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get("/runs")
    assert r.status_code == 200
    rows = Tags(r.text).attr("tr", "data-run")
    assert rows == [seeded.other, seeded.xss, seeded.beta, seeded.alpha]  # newest first
    assert pct(len(ALPHA_RIGHT), N) in r.text
    assert pct(len(BETA_RIGHT), N) in r.text
    assert pct(0, N - len(XSS_ERRORS)) in r.text  # errors excluded from the score
    row = re.search(rf'data-run="{seeded.xss}".*?</tr>', r.text, re.S)
    assert row and f"{len(XSS_ERRORS)}</span> / {N}" in row.group()


def test_runs_list_filters_by_model_and_task(client: TestClient, seeded: Seeded) -> None:
    assert Tags(client.get("/runs?model=beta").text).attr("tr", "data-run") == [seeded.beta]
    assert Tags(client.get("/runs?model=fake:alpha").text).attr("tr", "data-run") == [
        seeded.other,
        seeded.alpha,
    ]
    assert len(Tags(client.get("/runs?task=yesno").text).attr("tr", "data-run")) == 4
    r = client.get("/runs?task=nothing")
    assert "No run matches these filters" in r.text


# -- run detail --------------------------------------------------------------------------------


def test_run_page_scores_chart_categories_and_methodology(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get(f"/runs/{seeded.alpha}")
    assert r.status_code == 200
    assert pct(len(ALPHA_RIGHT), N) in r.text
    assert "wilson" in r.text
    # category a holds items 0, 3, ..., 27 (10 items); alpha is right on those below 18
    k_a = sum(1 for i in range(0, N, 3) if i in ALPHA_RIGHT)
    assert pct(k_a, 10) in r.text
    assert f'href="/runs/{seeded.alpha}/report"' in r.text
    assert "Methodology" in r.text and "prompt hash" in r.text
    assert r.text.count('<svg class="plot forest"') == 2  # task scores, categories


def test_sample_browser_pages_and_filters(client: TestClient, seeded: Seeded) -> None:
    base = f"/runs/{seeded.alpha}"
    assert samples_shown(client.get(base).text) == [f"q{i}" for i in range(20)]
    page2 = client.get(f"{base}?page=2").text
    assert samples_shown(page2) == [f"q{i}" for i in range(20, N)]
    assert "page 2 of 2" in page2
    failures = client.get(f"{base}?show=failures").text
    assert samples_shown(failures) == [f"q{i}" for i in range(N) if i not in ALPHA_RIGHT]
    errors = client.get(f"/runs/{seeded.xss}?show=errors").text
    assert samples_shown(errors) == [f"q{i}" for i in XSS_ERRORS]
    assert "server hiccup" in errors
    # errored samples are not failures
    fails = samples_shown(client.get(f"/runs/{seeded.xss}?show=failures").text)
    assert not set(fails) & {f"q{i}" for i in XSS_ERRORS}
    assert client.get(f"{base}?task=nope").status_code == 400


def test_full_report_is_the_reports_html(client: TestClient, seeded: Seeded) -> None:
    r = client.get(f"/runs/{seeded.alpha}/report")
    assert r.status_code == 200 and r.text.startswith("<!DOCTYPE html>")
    assert seeded.alpha in r.text and pct(len(ALPHA_RIGHT), N) in r.text


def test_unknown_run_is_a_404_page_and_json(client: TestClient) -> None:
    r = client.get("/runs/zzz-no-such-run")
    assert r.status_code == 404 and "zzz-no-such-run" in r.text and 'role="alert"' in r.text
    j = client.get("/api/runs/zzz-no-such-run")
    assert j.status_code == 404 and "zzz-no-such-run" in j.json()["error"]


# -- escaping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/runs/{xss}",
        "/runs/{xss}?show=failures",
        "/runs/{xss}/report",
        "/compare?run={alpha}&run={xss}",
    ],
)
def test_model_output_is_escaped_everywhere(client: TestClient, seeded: Seeded, path: str) -> None:
    r = client.get(path.format(xss=seeded.xss, alpha=seeded.alpha))
    assert r.status_code == 200
    tags = Tags(r.text)
    assert not {"script", "img", "iframe", "object"} & tags.names()
    assert not [a for _, attrs in tags.tags for a in attrs if a.startswith("on")]
    if "compare" not in path:
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text
        assert "onerror=&#34;window.__xss=2&#34;" in r.text


def test_pages_forbid_scripts_by_policy(client: TestClient, seeded: Seeded) -> None:
    for path in ("/runs", f"/runs/{seeded.xss}", f"/runs/{seeded.xss}/report", "/ab"):
        assert client.get(path).headers["content-security-policy"] == CSP
    assert "script-src" not in CSP and "default-src 'none'" in CSP


def test_api_returns_the_payload_as_data(client: TestClient, seeded: Seeded) -> None:
    r = client.get(f"/api/runs/{seeded.xss}/samples?show=failures&per_page=100")
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["total"] == N - len(XSS_ERRORS)
    assert {s["response"] for s in body["samples"]} == {PAYLOAD}


# -- compare ----------------------------------------------------------------------------------


def test_compare_page_shows_difference_pvalue_and_verdict(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get(f"/compare?run={seeded.alpha}&run={seeded.beta}")
    assert r.status_code == 200
    # beta is right wherever alpha is and on 9 more: McNemar exact, 9 discordant pairs all
    # one way, two-sided p = 2 * 0.5**9
    d = len(BETA_RIGHT) - len(ALPHA_RIGHT)
    p = 2 * 0.5**d
    assert f"{p:.3g}" in r.text
    assert f"+{100 * d / N:.1f} [" in r.text
    assert 'class="significant"' in r.text
    assert "beta is better by" in r.text
    assert '<svg class="plot forest"' in r.text
    # the baseline radio makes beta the baseline: the difference changes sign
    flipped = client.get(
        f"/compare?run={seeded.alpha}&run={seeded.beta}&baseline={seeded.beta}"
    ).text
    assert f"{-100 * d / N:+.1f} [" in flipped


def test_compare_refuses_different_methodology_with_the_message(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get(f"/compare?run={seeded.alpha}&run={seeded.other}")
    assert r.status_code == 200
    assert "These runs are not comparable" in r.text and "system_prompt" in r.text
    assert "Compare anyway" in r.text and '<table class="comparison">' not in r.text
    forced = client.get(f"/compare?run={seeded.alpha}&run={seeded.other}&force=true").text
    assert "FORCED" in forced and '<table class="comparison">' in forced
    j = client.get(f"/api/compare?run={seeded.alpha}&run={seeded.other}")
    assert j.status_code == 400 and "not comparable" in j.json()["error"]


def test_compare_form_without_enough_runs(client: TestClient, seeded: Seeded) -> None:
    r = client.get("/compare")
    assert r.status_code == 200 and len(Tags(r.text).attr("input", "value")) >= 8
    assert "Pick at least one more run" in client.get(f"/compare?run={seeded.alpha}").text


def test_api_compare_matches_cli(client: TestClient, seeded: Seeded) -> None:
    api = client.get(f"/api/compare?run={seeded.alpha}&run={seeded.beta}").json()
    out = CliRunner().invoke(
        cli, ["--store", seeded.url, "compare", seeded.alpha, seeded.beta, "--json"]
    )
    assert out.exit_code == 0, out.output
    assert api == json.loads(out.output)


# -- leaderboard ------------------------------------------------------------------------------


def test_leaderboard_ranks_and_leaves_out_other_methodology(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get("/leaderboard")
    assert r.status_code == 200
    models = Tags(r.text).attr("tr", "data-model")
    assert models == ["beta", "alpha", "xss"]  # 90% > 60% > 0%
    assert f"not ranked here: alpha (<code>{seeded.other}</code>)" in r.text
    api = client.get("/api/leaderboard").json()
    assert [e["model"] for e in api[0]["entries"]] == models


# -- JSON twins, health, sections --------------------------------------------------------------


def test_api_runs_and_run_match_the_cli(client: TestClient, seeded: Seeded) -> None:
    cli_runs = CliRunner().invoke(cli, ["--store", seeded.url, "runs", "--json"])
    cli_show = CliRunner().invoke(cli, ["--store", seeded.url, "show", seeded.alpha, "--json"])
    api_runs = client.get("/api/runs").json()
    assert [r["id"] for r in api_runs] == [r["id"] for r in json.loads(cli_runs.output)]
    assert [r["summary"] for r in api_runs] == [r["summary"] for r in json.loads(cli_runs.output)]
    shown = json.loads(cli_show.output)
    api_run = client.get(f"/api/runs/{seeded.alpha}").json()
    assert {k: api_run[k] for k in shown if k not in ("created_at", "finished_at")} == {
        k: v for k, v in shown.items() if k not in ("created_at", "finished_at")
    }
    acc = api_run["summary"]["tasks"]["yesno"]["metrics"]["exact_match"]
    assert acc["value"] == pytest.approx(len(ALPHA_RIGHT) / N)
    assert [r["id"] for r in client.get("/api/runs?model=beta").json()] == [seeded.beta]


def test_healthz(client: TestClient, seeded: Seeded) -> None:
    body = client.get("/healthz").json()
    assert body["status"] == "ok" and str(seeded.path) in body["store"]


def test_a_section_builder_can_be_replaced(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def page(store: Store, params: Mapping[str, str]) -> SectionPage:
        seen.append(param_values(params, "price"))
        return SectionPage(
            "section_generic.html.j2",
            {"alerts": ["<b>drift</b>"], "notes": [], "charts": [], "tables": []},
            {"ok": float("nan")},
            200,
            418,
        )

    app = create_app(str(tmp_path / "s.db"), sections={"monitor": page})
    with TestClient(app, base_url=LOOPBACK) as c:
        r = c.get("/monitor?price=a&price=b")
        assert r.status_code == 200 and "&lt;b&gt;drift&lt;/b&gt;" in r.text
        j = c.get("/api/monitor")
        assert j.status_code == 418 and j.json() == {"ok": None}
    assert seen == [["a", "b"], []]


def test_unknown_section_is_refused() -> None:
    from calipers.errors import ConfigError

    def page(store: Store, params: object) -> SectionPage:
        return SectionPage("section_generic.html.j2")

    with pytest.raises(ConfigError, match="Unknown dashboard section"):
        create_app(":memory:", sections={"nope": page})
