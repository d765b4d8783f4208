"""``calipers review serve``: loopback unless --allow-remote, the URL printed, the access log off
(a personal link's path holds its token), the lease length passed on, and the app refusing
clients beyond this machine unless --allow-remote (uvicorn.run is replaced here; the real server
runs in test_review_concurrency.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from calipers.cli import cli
from calipers.store import Store
from tests._servers import free_port
from tests.web.review_rig import LOOPBACK, invite, make_campaign


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    import uvicorn

    seen: dict[str, Any] = {}

    def fake_run(app: Any, **kw: Any) -> None:
        seen.update(kw, app=app)
        st = app.state.review
        seen["lease_s"], seen["secure"] = st.lease_s, st.secure
        token = invite(st.store, "alice")
        for who, client in (("local", ("127.0.0.1", 5000)), ("remote", ("203.0.113.9", 5000))):
            c = TestClient(app, base_url=LOOPBACK, client=client)
            seen[who] = c.get(f"/r/{token}", follow_redirects=False).status_code

    monkeypatch.setattr(uvicorn, "run", fake_run)
    yield seen


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'calipers.db'}"
    with Store.open(url) as store:
        make_campaign(store, 2)
    return url


def test_serves_on_loopback_and_prints_the_url(served: dict[str, Any], db: str) -> None:
    port = free_port()
    args = ["review", "serve", "c", "--store", db, "--port", str(port), "--lease-minutes", "2"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert f"http://127.0.0.1:{port}/" in r.output and f"{port}/r/TOKEN" in r.output
    assert (served["host"], served["port"], served["access_log"]) == ("127.0.0.1", port, False)
    assert served["lease_s"] == 120 and served["secure"] is False
    assert (served["local"], served["remote"]) == (303, 403)  # loopback clients only


def test_allow_remote_answers_other_machines(served: dict[str, Any], db: str) -> None:
    args = ["review", "serve", "c", "--store", db, "--host", "0.0.0.0", "--allow-remote"]
    args += ["--secure-cookies", "--allowed-host", "127.0.0.1", "--port", str(free_port())]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert served["secure"] is True and served["remote"] == 303


def test_a_remote_host_needs_allow_remote_and_the_campaign_must_exist(
    served: dict[str, Any], db: str
) -> None:
    r = CliRunner().invoke(cli, ["review", "serve", "c", "--store", db, "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "--allow-remote" in r.output and "app" not in served
    r = CliRunner().invoke(cli, ["review", "serve", "nope", "--store", db])
    assert r.exit_code != 0 and "nope" in r.output and "app" not in served
