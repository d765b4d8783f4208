"""Concurrency over HTTP: 20 raters (threads with httpx) against a real ``calipers review serve``
subprocess on 127.0.0.1, 300 pairwise items with k = 3. The server is killed with SIGKILL part
way and restarted on the same SQLite store; the raters' sessions carry on. At the end every item
has exactly 3 counted judgments, no rater judged an item twice, and every answer the server
acknowledged (303 to the next item) is in the store."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from calipers.store import Store
from tests._servers import free_port
from tests.web.review_rig import invite, make_campaign

pytestmark = pytest.mark.slow  # about a minute on a loaded machine

RATERS, ITEMS, K = 20, 300, 3
KILL_AFTER = 300  # acknowledged answers before the kill


class Server:
    def __init__(self, url: str, port: int, log: Path) -> None:
        self.url, self.port, self.log = url, port, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "calipers", "review", "serve", "c", "--store", self.url,
               "--port", str(self.port), "--lease-minutes", "10"]  # fmt: skip
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/favicon.ico").status_code == 204:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the review server did not start")

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


class Rater(threading.Thread):
    """Answers items until the server says done; retries through the server's outage."""

    def __init__(self, base: str, token: str, acked: list[int], lock: threading.Lock) -> None:
        super().__init__(daemon=True)
        self.base, self.token, self.acked, self.lock = base, token, acked, lock
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._work()
        except BaseException as e:  # reported by the test
            self.error = e

    def _call(self, client: httpx.Client, method: str, path: str, **kw: object) -> httpx.Response:
        deadline = time.monotonic() + 120
        while True:
            try:
                return client.request(method, path, **kw)  # type: ignore[arg-type]
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)  # the server is down: try again

    def _work(self) -> None:
        with httpx.Client(base_url=self.base, follow_redirects=False, timeout=60) as client:
            assert self._call(client, "GET", f"/r/{self.token}").status_code == 303
            n = 0
            while True:
                page = self._call(client, "GET", "/rate")
                assert page.status_code == 200, page.text
                if 'id="done"' in page.text:
                    return
                m = re.search(r'action="/rate/(\d+)"', page.text)
                if m is None:  # waiting for other raters
                    time.sleep(0.1)
                    continue
                csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
                assert csrf is not None
                n += 1
                pick = ("left", "right", "tie")[n % 3]
                data = {"csrf": csrf.group(1), "q.preference": pick, "seconds": "3"}
                try:
                    r = client.post(f"/rate/{m.group(1)}", data=data)
                except httpx.TransportError:
                    continue  # unacknowledged: it may or may not be stored
                if r.status_code == 303:
                    with self.lock:
                        self.acked.append(int(m.group(1)))
                else:
                    assert r.status_code == 409, r.text  # e.g. answered before a lost reply


def test_twenty_raters_over_http_survive_a_kill(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'calipers.db'}"
    with Store.open(url) as store:
        make_campaign(store, ITEMS, k=K)
        tokens = [invite(store, f"r{i:02d}") for i in range(RATERS)]
    port = free_port()
    server = Server(url, port, tmp_path / "server.log")
    server.start()
    acked: list[int] = []
    lock = threading.Lock()
    raters = [Rater(f"http://127.0.0.1:{port}", t, acked, lock) for t in tokens]
    try:
        for r in raters:
            r.start()
        deadline = time.monotonic() + 300
        while len(acked) < KILL_AFTER and time.monotonic() < deadline:
            time.sleep(0.05)
        server.kill()
        killed_at = len(acked)
        time.sleep(0.5)
        server.start()
        for r in raters:
            r.join(timeout=600)
            assert not r.is_alive(), "a rater did not finish"
            assert r.error is None, repr(r.error)
    finally:
        server.stop()
    assert KILL_AFTER <= killed_at < ITEMS * K  # the kill came part way
    with Store.open(url) as store:
        judgments = store.get_judgments("c")
    stored = {j.assignment_id for j in judgments}
    assert set(acked) <= stored  # no acknowledged answer was lost
    assert len(acked) == len(set(acked))
    counted = Counter(j.item_key for j in judgments if j.counted)
    assert counted == {f"i{i:03d}": K for i in range(ITEMS)}  # exactly k, none over
    pairs = Counter((j.rater, j.item_key) for j in judgments)
    assert max(pairs.values()) == 1  # no rater saw an item twice
    assert len(judgments) == ITEMS * K
