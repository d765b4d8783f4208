"""Several real ``calipers gateway`` processes on one PostgreSQL database, for the replica
tests: a fresh database (or, where the test role may not create databases, a fresh schema)
per test, dropped afterwards; gateway subprocesses on loopback ports; an upstream that also
answers the fingerprint canary's probes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests._servers import free_port
from tests.canary_fp._sim import Model
from tests.gateway.conftest import FakeUpstream

PG_ENV = "CALIPERS_TEST_POSTGRES_URL"


def postgres_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(
            f"several gateway replicas share a PostgreSQL database: set {PG_ENV} "
            '(eval "$(bash .ci/start_postgres.sh)") to run this test'
        )
    pytest.importorskip("psycopg", reason="PostgreSQL: pip install 'calipers[postgres]'")
    return url


@contextmanager
def fresh_postgres(base: str) -> Iterator[str]:
    """The URL of a new, empty database on the server of ``base``, dropped afterwards; where
    the role may not create databases (the CI role may not), a new schema of ``base``'s
    database that the URL puts first on the search path."""
    name = f"calipers_replicas_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    url = sa.make_url(base)
    try:
        with admin.connect() as conn:
            try:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
                drop = f'DROP DATABASE "{name}" WITH (FORCE)'
                url = url.set(database=name)
            except sa.exc.ProgrammingError:  # no CREATEDB: a schema of our own instead
                conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
                drop = f'DROP SCHEMA "{name}" CASCADE'
                url = url.update_query_dict({"options": f"-csearch_path={name}"})
        try:
            yield url.render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(drop)
    finally:
        admin.dispose()


def with_app_name(url: str, name: str) -> str:
    """``url`` whose connections show ``name`` in ``pg_stat_activity``."""
    return (
        sa.make_url(url)
        .update_query_dict({"application_name": name})
        .render_as_string(hide_password=False)
    )


@dataclass
class Replica:
    """One ``calipers gateway`` process."""

    index: int
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict[str, Any]:
        found: dict[str, Any] = httpx.get(f"{self.url}/calipers/stats", timeout=10).json()
        return found

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM (graceful: every accepted log row is written) and wait."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_replicas(n: int, store_url: str, config: Path, folder: Path, tag: str) -> list[Replica]:
    """Start ``n`` gateways at the same moment (so they race to migrate the fresh store) and
    wait until each answers ``/healthz``. Their database sessions are named ``<tag>-r<i>``."""
    replicas = []
    env = os.environ | {"CALIPERS_HOME": str(folder / "home"), "PYTHONUNBUFFERED": "1"}
    for i in range(n):
        port = free_port()
        log = folder / f"replica-{i}.log"
        url = with_app_name(store_url, f"{tag}-r{i}")
        cmd = [sys.executable, "-m", "calipers", "gateway", "--store", url, "--config",
               str(config), "--port", str(port)]  # fmt: skip
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        replicas.append(Replica(i, port, proc, log))
    deadline = time.monotonic() + 60
    for r in replicas:
        while True:
            if r.proc.poll() is not None:
                raise AssertionError(f"replica {r.index} exited:\n{r.output()}")
            try:
                if httpx.get(f"{r.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"replica {r.index} did not start:\n{r.output()}")
            time.sleep(0.1)
    return replicas


class ProbeAnsweringUpstream(FakeUpstream):
    """The fake baseline, which also answers the fingerprint canary's probes (``probe i``)
    by sampling model ``p``, as the model the reference was recorded from would."""

    def __init__(self, name: str, p: Model, delay_s: float = 0.0) -> None:
        super().__init__(name, delay_s=delay_s)
        self.p = p
        self.rng = np.random.default_rng(0)
        self.probes = 0

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        found = re.fullmatch(r"probe (\d+)", str(body["messages"][-1]["content"]))
        if found is None:
            return await super().chat(_replay(request, body))
        self.probes += 1
        text = self.p.sample(int(found.group(1)), 1, self.rng)[0]
        return JSONResponse(
            {"id": "x", "object": "chat.completion", "model": "p",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                          "finish_reason": "stop"}]}
        )  # fmt: skip


def _replay(request: Request, body: dict[str, Any]) -> Request:
    """``request`` with its body read already, so the parent class can read it again."""
    import json

    data = json.dumps(body).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": data, "more_body": False}

    return Request(request.scope, receive)


def kill_connections(engine: sa.Engine, prefix: str) -> set[str]:
    """End every server session whose application name starts with ``prefix`` (what a
    database restart does to the gateways' connections); the names whose sessions ended."""
    with engine.connect() as conn:
        ended = conn.execute(
            sa.text(
                "SELECT application_name FROM pg_stat_activity "
                "WHERE application_name LIKE :p AND pid <> pg_backend_pid() "
                "AND pg_terminate_backend(pid)"
            ),
            {"p": f"{prefix}%"},
        ).scalars()
        names = set(ended)
        conn.commit()
    return names
