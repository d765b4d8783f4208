"""Who may read the dashboard: unknown Host headers are refused (a DNS-rebinding page sends
its own name), and with a token every request carries it: once in the address (then an
HttpOnly, SameSite=Strict cookie), or as a Bearer header. Through the app in-process, and
through the real ``calipers ui`` under uvicorn on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from calipers.errors import ConfigError
from calipers.web import create_app
from calipers.web._guard import host_name
from tests._servers import free_port
from tests.web.conftest import LOOPBACK

TOKEN = "tok-" + "x" * 28


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(str(tmp_path / "g.db"), token=TOKEN, allowed_hosts=["evals.example.org"])
    with TestClient(app, base_url=LOOPBACK, follow_redirects=False) as c:
        yield c


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LOCALHOST.", "localhost"),
        ("[::1]:8765", "::1"),
        ("::1", "::1"),
        ("evals.example.org:443", "evals.example.org"),
        ("", ""),
    ],
)
def test_host_name(value: str, name: str) -> None:
    assert host_name(value) == name


def test_without_the_token_nothing_is_served(client: TestClient) -> None:
    page = client.get("/runs")
    assert page.status_code == 401 and "Token needed" in page.text
    assert page.headers["www-authenticate"].startswith("Bearer")
    api = client.get("/api/runs")
    assert api.status_code == 401 and "Bearer" in api.json()["hint"]
    assert client.get("/healthz").status_code == 401
    wrong = client.get("/runs?token=" + "y" * 32)
    assert wrong.status_code == 401 and "wrong" in wrong.text
    assert client.get("/runs", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert client.get("/favicon.ico").status_code == 204  # no data behind it


def test_token_in_the_address_sets_a_strict_cookie_and_leaves_the_address(
    client: TestClient,
) -> None:
    r = client.get(f"/runs?task=yesno&token={TOKEN}")
    assert r.status_code == 303 and r.headers["location"] == "/runs?task=yesno"
    cookie = r.headers["set-cookie"]
    assert f"={TOKEN};" in cookie
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in cookie.split(";")}
    name = cookie.split("=", 1)[0]
    assert client.get("/runs").status_code == 200  # the client keeps the cookie
    client.cookies.clear()
    assert client.get("/runs").status_code == 401
    client.cookies.set(name, "stale-" + TOKEN)
    assert client.get("/runs").status_code == 401


def test_bearer_and_api_token(client: TestClient) -> None:
    ok = client.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.json() == []
    assert client.get(f"/api/runs?token={TOKEN}").status_code == 200  # no redirect for JSON
    assert (
        client.get("/healthz", headers={"Authorization": f"bearer {TOKEN}"}).json()["status"]
        == "ok"
    )


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", 200),
        ("localhost", 200),
        ("[::1]:8765", 200),
        ("evals.example.org", 200),
        ("rebind.attacker.example", 421),
        ("127.0.0.1.attacker.example", 421),
        ("", 421),
    ],
)
def test_only_known_host_names_are_answered(client: TestClient, host: str, status: int) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "Host": host}
    r = client.get("/api/runs", headers=auth)
    assert r.status_code == status, r.text
    if status == 421:
        assert "--allowed-host" in r.text and "<" not in r.text  # plain text, nothing echoed
        #                                                          as markup


def test_without_a_token_the_host_check_still_holds(tmp_path: Path) -> None:
    with TestClient(create_app(str(tmp_path / "g.db")), base_url=LOOPBACK) as c:
        assert c.get("/api/runs").status_code == 200
        assert c.get("/api/runs", headers={"Host": "rebind.attacker.example"}).status_code == 421
    with TestClient(
        create_app(str(tmp_path / "g.db"), allowed_hosts=["*"]), base_url="http://anything.example"
    ) as c:
        assert c.get("/api/runs").status_code == 200


def test_short_tokens_are_refused() -> None:
    with pytest.raises(ConfigError, match="too short"):
        create_app(":memory:", token="short")


def _start_ui(db: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    """``calipers ui`` as a user runs it; returns the process and the address it printed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("CALIPERS_UI_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "calipers", "--store", str(db), "ui", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    out = proc.stdout
    assert out is not None
    # A thread reads the lines: select() on the pipe would miss a line that readline() has
    # already buffered (the address and the token line come in one burst).
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(out.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while (
        not any("?token=" in x for x in lines)
        and time.monotonic() < deadline
        and proc.poll() is None
    ):
        time.sleep(0.05)
    seen = "".join(lines)
    assert "?token=" in seen, seen
    url = next(w for w in seen.split() if "?token=" in w)
    for _ in range(100):  # the address is printed just before uvicorn listens
        try:
            httpx.get(f"http://127.0.0.1:{port}/favicon.ico", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    return proc, url


def test_real_server_token_cookie_and_host_check(tmp_path: Path) -> None:
    port = free_port()
    proc, url = _start_ui(tmp_path / "ui.db", port)
    try:
        base = f"http://127.0.0.1:{port}"
        assert url.startswith(base + "/?token=")
        assert httpx.get(base + "/runs").status_code == 401
        with httpx.Client(timeout=60) as browser:
            r = browser.get(url, follow_redirects=True)
            assert r.status_code == 200 and "<h1>Runs</h1>" in r.text
            assert str(r.url) == base + "/runs"  # "/" goes to /runs; the token left the URL
            assert browser.get(base + "/monitor").status_code == 200  # the cookie
            rebound = browser.get(base + "/runs", headers={"Host": f"rebind.example:{port}"})
            assert rebound.status_code == 421
    finally:
        proc.terminate()
        proc.wait(timeout=30)
