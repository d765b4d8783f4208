"""The gateway's fingerprint canary end to end: a real gateway (uvicorn, 127.0.0.1) in front
of a model server that answers from P, then from another model, then is killed. Looks come
every 50 ms; each is read back from the store."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from calipers.errors import ConfigError
from calipers.gateway import GatewayConfig, create_app, load_config
from calipers.monitor import FingerprintCanaryStatus, fingerprint_canary_status
from calipers.store import FingerprintLookRecord, Store
from tests._servers import ServerThread
from tests.canary_fp.conftest import N_PROBES, ModelServer


def _wait(
    store: Store, until: Callable[[list[FingerprintLookRecord]], bool], timeout_s: float = 15
) -> list[FingerprintLookRecord]:
    deadline = time.monotonic() + timeout_s
    while True:
        looks = store.get_fingerprint_looks(canary="fingerprint")
        if until(looks) or time.monotonic() > deadline:
            return looks
        time.sleep(0.02)


def _ok(looks: list[FingerprintLookRecord]) -> int:
    return sum(r.status == "ok" for r in looks)


def test_the_canary_stays_quiet_then_sees_the_switch_then_records_failures(
    reference: Path, model_server: tuple[ModelServer, ServerThread], tmp_path: Path
) -> None:
    server, upstream = model_server
    config = GatewayConfig(
        baseline_url=f"{upstream.url}/v1", mode="off",
        fingerprint_canary={"reference": reference, "every": "0.05s", "timeout_s": 2},
    )  # fmt: skip
    db = tmp_path / "gw.db"
    gateway = ServerThread(create_app(config, str(db)), graceful_s=2).start()
    try:
        with Store.open(str(db)) as store:
            looks = _wait(store, lambda r: _ok(r) >= 8)
            status = fingerprint_canary_status(store)
            assert status is not None and status.verdict.state == "same", status
            n_before = status.verdict.looks
            # every probe, with the reference's settings, under the model name it was recorded as
            sent = server.requests[0]
            assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
            assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("p-model", 0.8, 64)
            assert all(len(r.completions) == N_PROBES for r in looks if r.status == "ok")

            server.model = server.q  # the provider swaps the model behind the same name
            changed = _changed(store)
            assert changed.verdict.state == "changed" and changed.verdict.direction == "lower"
            assert changed.verdict.changed_at is not None
            assert changed.verdict.changed_at > n_before  # after the switch, not before

            stats = httpx.get(f"{gateway.url}/calipers/stats").json()["fingerprint_canary"]
            assert stats["ok"] >= 8 and stats["failed"] == 0

            upstream.stop()  # the model server goes away mid-run
            n_ok = _ok(store.get_fingerprint_looks())
            looks = _wait(store, lambda r: sum(x.status == "failed" for x in r) >= 3)
            failed = [r for r in looks if r.status == "failed"]
            assert len(failed) >= 3
            assert all(r.statistic is None and r.error for r in failed)
            assert "probe q" in str(failed[-1].error)  # which probe, and why
            # no look taken while the server is down counts as data
            assert _ok(looks) <= n_ok + 1  # (one look may have been in flight at the stop)
            after = fingerprint_canary_status(store)
            assert after is not None and after.n_failed == len(failed)
            assert after.verdict.looks == _ok(looks)
    finally:
        gateway.stop()


def _changed(store: Store) -> FingerprintCanaryStatus:
    deadline = time.monotonic() + 15
    while True:
        status = fingerprint_canary_status(store)
        assert status is not None
        if status.alarm or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"every": "soon"}, "not a duration"),
        ({"upstream": "candidate"}, "needs a candidate URL"),
        ({"probes": 3}, "Extra inputs"),
    ],
)
def test_bad_canary_settings_are_refused_clearly(
    settings: dict[str, Any], match: str, reference: Path
) -> None:
    with pytest.raises(ConfigError, match=match):
        load_config(
            baseline_url="http://127.0.0.1:9/v1",
            mode="off",
            fingerprint_canary={"reference": str(reference), **settings},
        )
