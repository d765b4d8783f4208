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
