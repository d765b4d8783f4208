"""``calipers run`` over a fleet: ``--base-url`` repeated, ``--fleet FILE``, their errors, and
``--resume`` on another fleet after every server of the first died (fake OpenAI-compatible
servers on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests.models.fleet_servers import FakeServer

N = 12


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    started = [FakeServer(delay_s=0.05).start() for _ in range(4)]
    yield started
    for s in started:
        s.stop()


@pytest.fixture
def items(tmp_path: Path) -> Path:
    rows = [{"id": f"i{i}", "input": f"item {i}", "target": f"item {i}"} for i in range(N)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "items.yaml"
    spec.write_text(
        "name: items\ndata: items.jsonl\nscorers: [exact_match]\n"
        "fields: {id: id, input: input, target: target}\n"
    )
    return spec


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run(items: Path, *more: str) -> list[str]:
    return ["run", "-m", "openai:fleet-model", "-t", str(items), "--no-cache", "--no-report", *more]


def test_base_url_twice_is_a_fleet(servers: list[FakeServer], items: Path) -> None:
    a, b = servers[:2]
    code, out, err = invoke(*run(items, "--base-url", a.url, "--base-url", b.url, "--json"))
    assert code == 0, err
    result = json.loads(out)
    assert result["model"]["base_url"] is None
    assert result["model"]["extra"]["fleet"] == "identity checked"
    assert result["tasks"]["items"]["n_scored"] == N
    assert a.served + b.served == N and a.served > 0 and b.served > 0
    with Store.open() as store:
        card = store.get_run(result["run_id"]).methodology
    assert card["model_runtime"]["fleet"] == f"{a.url} {b.url}"


def test_a_fleet_file(servers: list[FakeServer], items: Path, tmp_path: Path) -> None:
    a, b, c, d = servers
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(f"- url: {a.url}\n  max_concurrency: 2\n- {b.url}\n- url: {c.url}\n")
    code, _, err = invoke(*run(items, "--fleet", str(fleet), "--json"))
    assert code == 0, err
    assert a.served + b.served + c.served == N
    assert a.peak <= 2

    fleet.write_text(f"- url: {a.url}\n  max_concurrency: 0\n")
    code, _, err = invoke(*run(items, "--fleet", str(fleet)))
    assert code == 2
    assert f"{fleet}:2" in err and "max_concurrency" in err

    fleet.write_text(f"- {b.url}\n- {c.url}\n")
    code, _, err = invoke(*run(items, "--fleet", str(fleet), "--base-url", a.url))
    assert code == 2 and "a fleet, not both" in err
    code, _, err = invoke(
        *run(items, "--fleet", str(fleet), "--base-url", a.url, "--base-url", d.url)
    )
    assert code == 2 and "--base-url (repeated) or --fleet FILE" in err


def test_one_base_url_is_the_plain_provider(servers: list[FakeServer], items: Path) -> None:
    """Runs with one server keep their identity (and cache key) as before fleets."""
    a = servers[0]
    code, out, err = invoke(*run(items, "--base-url", a.url, "--json"))
    assert code == 0, err
    model = json.loads(out)["model"]
    assert model["base_url"] == a.url and model["extra"] == {}


def test_resume_on_another_fleet(servers: list[FakeServer], items: Path) -> None:
    a, b, c, d = servers

    def kill() -> None:
        while a.served + b.served < 4:
            time.sleep(0.005)
        a.kill()
        b.kill()

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    code, _, err = invoke(
        *run(items, "--base-url", a.url, "--base-url", b.url, "--concurrency", "1")
    )
    killer.join()
    assert code == 2 and "Is the server running?" in err
    with Store.open() as store:
        (rec,) = store.list_runs()
        done = len(store.get_samples(rec.id))
    assert 4 <= done < N
    code, _, err = invoke("run", "--resume", rec.id, "--base-url", c.url, "--base-url", d.url)
    assert code == 0, err
    assert c.served + d.served == N - done
    with Store.open() as store:
        assert len(store.get_samples(rec.id)) == N
        assert store.get_run(rec.id).status == "finished"
