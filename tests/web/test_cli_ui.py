"""``calipers ui``: loopback only unless --allow-remote, a clear install hint without FastAPI,
the URL printed, and uvicorn given the real app (uvicorn.run itself is replaced here)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.cli._net import is_loopback
from tests._servers import free_port


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    import uvicorn

    seen: dict[str, Any] = {}

    def fake_run(app: Any, **kw: Any) -> None:
        seen["app"] = app
        seen.update(kw)
        with TestClient(app) as c:  # the app answers while the store is open
            seen["health"] = c.get("/healthz").json()

    monkeypatch.setattr(uvicorn, "run", fake_run)
    yield seen


@pytest.mark.parametrize(("host", "ok"), [
    ("127.0.0.1", True), ("127.8.0.3", True), ("localhost", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("192.168.1.20", False), ("::", False),
    ("example.com", False)])
def test_loopback(host: str, ok: bool) -> None:
    assert is_loopback(host) is ok


def test_serves_on_loopback_and_prints_the_url(served: dict[str, Any], tmp_path: Any) -> None:
    port = free_port()
    db = tmp_path / "ui.db"
    r = CliRunner().invoke(cli, ["ui", "--port", str(port), "--store", str(db)])
    assert r.exit_code == 0, r.output
    assert f"http://127.0.0.1:{port}/" in r.output
    assert served["host"] == "127.0.0.1" and served["port"] == port
    assert served["health"]["status"] == "ok" and str(db) in served["health"]["store"]


def test_remote_host_is_refused_without_allow_remote(served: dict[str, Any]) -> None:
    r = CliRunner().invoke(cli, ["ui", "--host", "0.0.0.0"])
    assert r.exit_code == 2
    assert "no login" in r.output and "--allow-remote" in r.output
    assert "app" not in served


def test_allow_remote_warns(served: dict[str, Any]) -> None:
    port = free_port()
    r = CliRunner().invoke(cli, ["ui", "--host", "0.0.0.0", "--port", str(port),
                                 "--allow-remote"])
    assert r.exit_code == 0, r.output
    assert "no authentication" in r.output
    assert served["host"] == "0.0.0.0" and f"http://0.0.0.0:{port}/" in r.output


def test_busy_port_is_an_error(served: dict[str, Any]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
        r = CliRunner().invoke(cli, ["ui", "--port", str(port)])
    assert r.exit_code == 2 and "Cannot listen" in r.output


@pytest.fixture
def no_fastapi(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    saved = {k: v for k, v in sys.modules.items() if k.startswith("calipers.web")}
    for k in saved:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "fastapi", None)
    yield
    for k in [k for k in sys.modules if k.startswith("calipers.web")]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_missing_fastapi_names_the_extra(no_fastapi: None) -> None:
    r = CliRunner().invoke(cli, ["ui", "--port", str(free_port())])
    assert r.exit_code == 2
    assert "fastapi" in r.output and "pip install 'calipers[ui]'" in r.output
