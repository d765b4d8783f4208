"""``calipers monitor fingerprint`` (looks for cron, no gateway), the alert in ``calipers
monitor`` and on the dashboard's Monitor page (headless chromium), against a real model
server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests._servers import ServerThread
from tests.canary_fp.conftest import N_PROBES, ModelServer


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_cron_looks_then_the_monitor_alert_and_the_page(
    reference: Path,
    model_server: tuple[ModelServer, ServerThread],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    server, upstream = model_server
    url = str(tmp_path / "c.db")
    look = ["--store", url, "monitor", "fingerprint", "--reference", str(reference),
            "-m", "openai:p-model", "--base-url", f"{upstream.url}/v1"]  # fmt: skip

    code, out = _invoke([*look, "--looks", "5", "--json", "--fail-on-change"])
    assert code == 0, out
    d = json.loads(out)
    assert [t["status"] for t in d["looks_taken"]] == ["ok"] * 5
    assert d["status"]["state"] == "same" and d["status"]["verdict"]["looks"] == 5
    assert len(server.requests) == 5 * N_PROBES

    server.model = server.q
    code, out = _invoke([*look, "--looks", "8", "--fail-on-change"])
    assert code == 1, out  # changed: the decision's exit code
    assert "CHANGED since look" in out

    upstream.stop()
    code, out = _invoke([*look, "--looks", "1"])
    assert code == 0 and "FAILED" in out and "not counted" in out
    with Store.open(url) as store:
        rows = store.get_fingerprint_looks()
    assert [r.status for r in rows] == ["ok"] * 13 + ["failed"]

    mon = ["--store", url, "monitor", "--embeddings", "tfidf"]
    code, out = _invoke([*mon, "--json"])
    assert code == 0
    (fp,) = json.loads(out)["fingerprint_canaries"]
    assert fp["state"] == "changed" and fp["n_failed"] == 1 and fp["alarm"]
    assert fp["verdict"]["changed_at"] > 5
    code, out = _invoke([*mon, "--fail-on-drift"])
    assert code == 1 and "Fingerprint canary fingerprint" in out and "CHANGED" in out

    # the browser fixture runs an event loop in this thread: start it after the CLI's looks
    _page(url, request.getfixturevalue("browser"), tmp_path)


def _page(url: str, browser: object, tmp_path: Path) -> None:
    from calipers.web import create_app

    app = ServerThread(create_app(url), graceful_s=2).start()
    try:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(f"{app.url}/monitor?embeddings=tfidf")
        alert = page.locator(".fingerprint-alert")
        assert alert.is_visible()
        assert "CHANGED since look" in alert.inner_text()
        row = page.locator("tr.fingerprint")
        assert row.get_attribute("data-state") == "changed"
        assert "[" in row.inner_text()  # both intervals shown
        page.locator("#fingerprint").screenshot(path=str(tmp_path / "fingerprint.png"))
        page.close()
    finally:
        app.stop()


def test_no_model_and_a_bad_reference_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    base = ["--store", str(tmp_path / "x.db"), "monitor", "fingerprint"]
    result = CliRunner().invoke(cli, [*base, "--reference", str(bad)])
    assert result.exit_code == 2 and "Which model?" in result.output
    result = CliRunner().invoke(cli, [*base, "--reference", str(bad), "--looks", "0"])
    assert result.exit_code == 2 and "not a calipers fingerprint" in result.output
    missing = tmp_path / "none.json"
    result = CliRunner().invoke(cli, [*base, "--reference", str(missing), "--looks", "0"])
    assert result.exit_code == 2 and "Cannot read the fingerprint" in result.output
