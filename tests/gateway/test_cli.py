"""``calipers gateway``: clear errors for bad settings, and a real run that is stopped with
Ctrl-C (SIGINT) and has written every request by then."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests._servers import ServerThread, free_port
from tests.gateway.conftest import UPSTREAM, FakeUpstream, chat_body


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--candidate", "http://127.0.0.1:9/v1"], "Which baseline? Pass --baseline URL."),
        (["--baseline", "localhost:8000/v1"], "must be an http(s) URL"),
        (["--baseline", "http://u:pw@h/v1", "--mode", "off"], "must not contain a user"),
        (["--baseline", "http://h/v1"], "mode 'shadow' needs a candidate URL"),
        (["--baseline", "http://h/v1", "--mode", "off", "--fraction", "1.5"], "1.5 is not in"),
        (
            ["--baseline", "http://h/v1", "--mode", "off", "--candidate-param", "x"],
            "is not NAME=VALUE",
        ),
    ],
)
def test_bad_settings_are_refused_clearly(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["gateway", *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["gateway", "--baseline", "http://h/v1", "--mode", "off", "--port", str(port)]
        )
    assert result.exit_code == 2
    assert f"Cannot listen on 127.0.0.1:{port}" in result.output


def test_settings_file_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("baseline_url: http://h/v1\nmode: canary\nshadow_wrkers: 3\n")
    result = CliRunner().invoke(cli, ["gateway", "--config", str(config)])
    assert result.exit_code == 2 and "shadow_wrkers" in result.output


def test_serves_until_sigint_then_has_logged_everything(tmp_path: Path) -> None:
    base, cand = FakeUpstream("baseline"), FakeUpstream("candidate")
    servers = [
        ServerThread(base.app(), **UPSTREAM).start(),
        ServerThread(cand.app(), **UPSTREAM).start(),
    ]
    port, store = free_port(), tmp_path / "cli.db"
    cmd = [
        sys.executable,
        "-m",
        "calipers",
        "--store",
        str(store),
        "gateway",
        "--baseline",
        f"{servers[0].url}/v1",
        "--candidate",
        f"{servers[1].url}/v1",
        "--fraction",
        "1",
        "--port",
        str(port),
    ]
    env = {**os.environ, "CALIPERS_CANDIDATE_API_KEY": "sk-gatewayheldkey0123456789"}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, env=env, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/v1") as client:
            for i in range(5):
                assert client.post("/chat/completions", json=chat_body(f"c{i}")).status_code == 200
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        for s in servers:
            s.stop()
    assert proc.returncode in (0, 130)  # 130: uvicorn re-raises the SIGINT once it is done
    assert f"listening on http://127.0.0.1:{port}/v1" in err
    assert "100% of requests mirrored" in " ".join(err.split())
    assert cand.seen[0]["headers"]["authorization"] == "Bearer sk-gatewayheldkey0123456789"
    with Store.open(str(store)) as db:
        rows = db.get_traffic()
    assert sorted((r.role, r.response) for r in rows) == sorted(
        [("baseline", f"baseline: c{i}") for i in range(5)]
        + [("candidate", f"candidate: c{i}") for i in range(5)]
    )
    assert b"gatewayheldkey" not in store.read_bytes()
