"""``calipers ui``: loopback only unless --allow-remote, a token required by default (and
always with --allow-remote), Host names checked, a clear install hint without FastAPI, the URL
printed, and uvicorn given the real app (uvicorn.run itself is replaced here; the real server
is run in tests/web/test_guard.py)."""

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
from tests.web.conftest import LOOPBACK

TOKEN = "a-test-token-of-more-than-16-chars"


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    import uvicorn

    seen: dict[str, Any] = {}

    def fake_run(app: Any, **kw: Any) -> None:
        seen["app"] = app
        seen.update(kw)
        with TestClient(app, base_url=LOOPBACK) as c:  # the app answers while the store is open
            seen["no_auth"] = c.get("/healthz").status_code
            r = c.get("/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
            seen["health"] = r.json() if r.status_code == 200 else r.status_code
            seen["remote"] = {
                host: c.get(
                    "/healthz", headers={"Authorization": f"Bearer {TOKEN}", "Host": host}
                ).status_code
                for host in ("evals.example.org", "evil.example", "localhost:8765")
            }

    monkeypatch.setattr(uvicorn, "run", fake_run)
    yield seen


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1", True),
        ("127.8.0.3", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("192.168.1.20", False),
        ("::", False),
        ("example.com", False),
    ],
)
def test_loopback(host: str, ok: bool) -> None:
    assert is_loopback(host) is ok


def test_serves_on_loopback_and_prints_the_url(served: dict[str, Any], tmp_path: Any) -> None:
    port = free_port()
    db = tmp_path / "ui.db"
    r = CliRunner().invoke(
        cli, ["ui", "--port", str(port), "--store", str(db)], env={"CALIPERS_UI_TOKEN": TOKEN}
    )
    assert r.exit_code == 0, r.output
    assert f"http://127.0.0.1:{port}/" in r.output
    assert TOKEN not in r.output  # a token given is not printed back
    assert served["host"] == "127.0.0.1" and served["port"] == port
    assert served["health"]["status"] == "ok" and str(db) in served["health"]["store"]
    assert served["no_auth"] == 401
    assert served["remote"] == {
        "evals.example.org": 421,
        "evil.example": 421,
        "localhost:8765": 200,
    }


def test_a_token_is_made_and_printed_once_by_default(served: dict[str, Any]) -> None:
    port = free_port()
    r = CliRunner().invoke(cli, ["ui", "--port", str(port)])
    assert r.exit_code == 0, r.output
    assert r.output.count("?token=") == 1
    made = r.output.split("?token=")[1].split()[0]
    assert len(made) >= 32 and made != TOKEN
    assert served["no_auth"] == 401 and served["health"] == 401  # only the printed one works


def test_no_token_on_loopback_warns(served: dict[str, Any]) -> None:
    r = CliRunner().invoke(cli, ["ui", "--port", str(free_port()), "--no-token"])
    assert r.exit_code == 0, r.output
    assert "no token" in r.output and "?token=" not in r.output
    assert served["no_auth"] == 200


def test_remote_host_is_refused_without_allow_remote(served: dict[str, Any]) -> None:
    r = CliRunner().invoke(cli, ["ui", "--host", "0.0.0.0"])
    assert r.exit_code == 2
    assert "beyond this machine" in r.output and "--allow-remote" in r.output
    assert "app" not in served


def test_allow_remote_needs_a_token(served: dict[str, Any]) -> None:
    r = CliRunner().invoke(
        cli, ["ui", "--host", "0.0.0.0", "--allow-remote", "--no-token", "--port", str(free_port())]
    )
    assert r.exit_code == 2 and "--no-token is refused with --allow-remote" in r.output
    assert "app" not in served
    r = CliRunner().invoke(cli, ["ui", "--port", str(free_port()), "--token", "short"])
    assert r.exit_code == 2 and "too short" in r.output and "app" not in served


def test_allow_remote_answers_the_allowed_names_only(served: dict[str, Any]) -> None:
    port = free_port()
    r = CliRunner().invoke(
        cli,
        [
            "ui",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--allow-remote",
            "--allowed-host",
            "evals.example.org",
        ],
        env={"CALIPERS_UI_TOKEN": TOKEN},
    )
    assert r.exit_code == 0, r.output
    assert "evals.example.org" in r.output
    assert served["host"] == "0.0.0.0" and f"http://0.0.0.0:{port}/" in r.output
    assert served["no_auth"] == 401
    assert served["remote"] == {
        "evals.example.org": 200,
        "evil.example": 421,
        "localhost:8765": 200,
    }


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
