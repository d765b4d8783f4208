"""The Ray executor without a cluster: sharding, and the errors a user meets first."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import ConfigError, ExecutorError
from calipers.runner import RayExecutor, RunConfig, make_plan
from calipers.runner._ray import make_shards
from calipers.store import Store
from tests._ray_cluster import free_port


def _todo(n: int) -> list:  # type: ignore[type-arg]
    plan = make_plan(RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), limit=n, seed=3))
    return list(plan.tasks[0].samples)


def _len(ps: object) -> int:
    msgs = ps.request.messages  # type: ignore[attr-defined]
    return sum(len(m.content) for m in msgs)


def test_shards_cover_every_sample_once_and_interleave_lengths() -> None:
    todo = _todo(50)
    shards = make_shards(todo, workers=2, size=4)
    flat = [i for s in shards for i in s]
    assert sorted(flat) == list(range(50))  # each sample exactly once
    assert len(shards) == 13 and {len(s) for s in shards} == {3, 4}
    ranked = sorted(range(50), key=lambda i: -_len(todo[i]))
    # dealt in turn from the length order: shard k holds ranks k, k+13, k+26, ...
    for k, shard in enumerate(shards):
        assert shard == ranked[k::13]
    # so the first item of every shard is one of the 13 longest prompts
    assert {s[0] for s in shards} == set(ranked[:13])


def test_default_shard_size_gives_each_worker_several_shards() -> None:
    todo = _todo(40)
    shards = make_shards(todo, workers=2, size=None)
    assert len(shards) == 14 and max(len(s) for s in shards) == 3  # ceil(40 / 16) = 3
    assert make_shards([], workers=3, size=None) == []


def test_without_ray_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(ConfigError, match="needs Ray") as e:
        RayExecutor().check()
    assert e.value.hint is not None and "pip install 'calipers[ray]'" in e.value.hint
    res = CliRunner().invoke(cli, ["run", "-m", "fake:echo", "-n", "2", "--executor", "ray"])
    assert res.exit_code == 2 and "pip install 'calipers[ray]'" in res.output
    with Store.open() as store:  # refused before anything was stored
        assert store.list_runs() == []


def test_a_bad_address_fails_fast_and_stores_nothing(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    port = free_port()  # nothing listens there
    with pytest.raises(ExecutorError, match=f"Cannot reach a Ray cluster at 127.0.0.1:{port}"):
        RayExecutor(address=f"127.0.0.1:{port}").check()
    with pytest.raises(ConfigError, match="is not a Ray address"):
        RayExecutor(address="nowhere").check()
    args = ["run", "-m", "fake:echo", "-n", "2", "--executor", "ray", "--address"]
    res = CliRunner().invoke(cli, [*args, f"ray://127.0.0.1:{port}"])
    assert res.exit_code == 2 and "Cannot reach a Ray cluster" in res.output
    assert "ray start --head" in res.output
    with Store.open() as store:
        assert store.list_runs() == []


def test_ray_options_need_the_ray_executor() -> None:
    res = CliRunner().invoke(cli, ["run", "-m", "fake:echo", "-n", "2", "--workers", "3"])
    assert res.exit_code == 2 and "--workers apply only to the Ray executor" in res.output


class _FlakyRay:
    """``ray.init`` whose first ``fail`` calls fail with ``message``, as Ray Client does when
    the head cannot start the client's server process."""

    def __init__(self, fail: int, message: str) -> None:
        self.fail, self.message, self.inits, self.shutdowns = fail, message, 0, 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: object) -> None:
        self.inits += 1
        if self.inits <= self.fail:
            raise ConnectionError(self.message)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_ray_client_retries_a_client_server_that_failed_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from calipers.runner import _ray

    monkeypatch.setattr(_ray, "_check_reachable", lambda address: None)
    monkeypatch.setattr("calipers.runner._ray.time.sleep", lambda s: None)
    failed = "Initialization failure from server: Starting Ray client server failed. See ..."
    ray = _FlakyRay(2, failed)
    assert _ray._connect(ray, "ray://127.0.0.1:10001") is True and ray.inits == 3
    ray = _FlakyRay(5, failed)  # still failing after three tries: the user is told
    with pytest.raises(ExecutorError, match="Cannot join a Ray cluster at ray://"):
        _ray._connect(ray, "ray://127.0.0.1:10001")
    assert ray.inits == 3
    ray = _FlakyRay(1, "Connection refused")  # any other failure is not retried
    with pytest.raises(ExecutorError, match="Connection refused"):
        _ray._connect(ray, "ray://127.0.0.1:10001")
    assert ray.inits == 1
    ray = _FlakyRay(1, failed)  # nor is a head's GCS address (no client server there)
    with pytest.raises(ExecutorError):
        _ray._connect(ray, "127.0.0.1:6379")
    assert ray.inits == 1
