"""Fleets (``openai:MODEL`` over several servers) against fake OpenAI-compatible servers on
127.0.0.1 (FastAPI under uvicorn, ``fleet_servers.FakeServer``): load spread, AIMD windows
against a planted capacity, 429s, failover when a server dies mid-run, identity checks, the
methodology record and resuming on another fleet."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from calipers.errors import ConfigError, ModelCallError, ModelLoadError, ResumeError
from calipers.models import FleetEndpoint, ModelOptions, resolve_model, track_calls
from calipers.models._fleet import FleetModel
from calipers.models._fleet_identity import served_model
from calipers.models._fleet_window import BETA, EndpointWindow
from calipers.runner import RunConfig, aresume, arun
from calipers.store import Store
from calipers.types import ChatMessage, GenerateParams, ModelRequest
from tests.models.conftest import SERVER_START_TIMEOUT_S, free_port
from tests.models.fleet_servers import FakeServer

N_ITEMS = 60


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    started: list[FakeServer] = []
    yield started
    for s in started:
        s.stop()


def start(servers: list[FakeServer], n: int, **kw: Any) -> list[FakeServer]:
    new = [FakeServer(**kw).start() for _ in range(n)]
    servers.extend(new)
    return new


def fleet(of: list[FakeServer], **options: Any) -> FleetModel:
    model = resolve_model(
        "openai:fleet-model",
        ModelOptions(fleet=tuple(FleetEndpoint(url=s.url) for s in of), **options),
    )
    assert isinstance(model, FleetModel)
    return model


def ask(text: str) -> ModelRequest:
    return ModelRequest(messages=(ChatMessage(role="user", content=text),), params=GenerateParams())


async def flood(model: FleetModel, n: int, parallel: int) -> list[str]:
    gate = asyncio.Semaphore(parallel)

    async def one(i: int) -> str:
        async with gate:
            return (await model.generate(ask(f"q{i}"))).text

    try:
        return await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await model.aclose()


def when(condition: Callable[[], bool], action: Callable[[], None]) -> threading.Thread:
    """Run ``action`` in a thread as soon as ``condition`` holds (a server killed mid-run)."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.005)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def items(tmp_path: Path) -> Path:
    """A task whose target is its input: the echoing fake servers answer every item right."""
    rows = [{"id": f"i{i}", "input": f"item {i}", "target": f"item {i}"} for i in range(N_ITEMS)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "items.yaml"
    spec.write_text(
        "name: items\ndata: items.jsonl\nscorers: [exact_match]\n"
        "fields: {id: id, input: input, target: target}\n"
    )
    return spec


def config(items: Path, of: list[FakeServer], **kw: Any) -> RunConfig:
    return RunConfig(
        model="openai:fleet-model",
        tasks=(str(items),),
        use_cache=False,
        model_options=ModelOptions(fleet=tuple(FleetEndpoint(url=s.url) for s in of), **kw),
    )


def assert_complete(store: Store, run_id: str) -> None:
    """Every item stored exactly once, answered and scored right (the target is the input)."""
    rows = store.get_samples(run_id)
    assert sorted(r.sample_id for r in rows) == sorted(f"i{i}" for i in range(N_ITEMS))
    assert [r.error for r in rows if r.error] == []
    assert all(r.scores == {"exact_match": 1.0} for r in rows)


# -- spreading and AIMD --------------------------------------------------------------------------


def test_load_spreads_over_three_endpoints(servers: list[FakeServer]) -> None:
    of = start(servers, 3, delay_s=0.03)
    model = fleet(of)
    assert model.concurrency_limit(None) == 3 * 8  # the runner may use the combined capacity
    texts = asyncio.run(flood(model, 150, parallel=24))
    assert texts == [f"q{i}" for i in range(150)]
    served = [s.served for s in of]
    assert sum(served) == 150  # nothing sent twice
    assert sorted(p for s in of for p in s.prompts) == sorted(f"q{i}" for i in range(150))
    # three equal servers: 50 each expected; least-loaded dispatch keeps each within 30%
    assert all(35 <= n <= 65 for n in served), served
    assert all(s.peak >= 4 for s in of)  # each really worked in parallel


def test_a_server_answering_429_is_cut_and_recovers(servers: list[FakeServer]) -> None:
    (busy,) = start(servers, 1, delay_s=0.02, refuse_first=5)
    model = fleet([busy], max_retries=6)
    model.backoff_base_s = 0.01
    windows: list[float] = []
    real_throttled = EndpointWindow.throttled

    def throttled(self: EndpointWindow, epoch: int) -> None:
        real_throttled(self, epoch)
        windows.append(self.window)

    async def go() -> list[str]:
        with track_calls() as calls:
            out = await flood(model, 80, parallel=8)
        assert calls.rate_limited == 5  # every 429 reported to the call tracker
        assert calls.retries == 5
        return out

    EndpointWindow.throttled = throttled  # type: ignore[method-assign]
    try:
        texts = asyncio.run(go())
    finally:
        EndpointWindow.throttled = real_throttled  # type: ignore[method-assign]
    assert texts == [f"q{i}" for i in range(80)]
    assert busy.throttled == 5
    # cut from the start window (4) at least once, to at most 4 * BETA...
    assert windows and min(windows) <= 4 * BETA
    # ... then additive increase brings it back to the cap (8) within the 75 successes
    (state,) = model.summary()
    assert state["cuts"] >= 1
    assert state["window"] == 8.0
    assert busy.peak == 8


def test_aimd_settles_near_a_planted_capacity(servers: list[FakeServer]) -> None:
    """A server that answers 429 above 6 concurrent requests, with a cap of 16. By the rule
    (``_fleet_window``) a 429 comes only once the window reaches C + 1 = 7 (the 7th slot
    opens), or C + 2 when one of the client's requests is an answer still on its way back
    (the server no longer counts it). So each cut is from [7, 9) to [3.5, 4.5), and the window
    climbs back linearly in time: its time average is about (3.5 + 7) / 2 = 5.25, and within
    (3.5 + 7) / 2 - 0.5 and (4.5 + 9) / 2 + 0.5. The server takes 0.1 s per answer, long
    against the client's own overhead, so the client's count seldom runs ahead (with 20 ms
    answers on a busy machine the window peaks near 10)."""
    capacity = 6
    (srv,) = start(servers, 1, delay_s=0.1, capacity=capacity)
    model = resolve_model(
        "openai:fleet-model",
        ModelOptions(fleet=(FleetEndpoint(url=srv.url, max_concurrency=16),), max_retries=8),
    )
    assert isinstance(model, FleetModel)
    model.backoff_base_s = 0.0
    state = model.endpoints[0].state
    state.latency_factor = float("inf")  # only 429s here (a busy shared CPU slows answers)
    peaks: list[float] = []
    real_throttled = EndpointWindow.throttled

    def throttled(self: EndpointWindow, epoch: int) -> None:
        if epoch == self.epoch:
            peaks.append(self.window)
        real_throttled(self, epoch)

    samples: list[float] = []

    async def go() -> None:
        async def watch() -> None:
            while True:
                samples.append(state.window)
                await asyncio.sleep(0.002)

        watcher = asyncio.create_task(watch())
        try:
            await flood(model, 200, parallel=16)
        finally:
            watcher.cancel()

    EndpointWindow.throttled = throttled  # type: ignore[method-assign]
    try:
        asyncio.run(go())
    finally:
        EndpointWindow.throttled = real_throttled  # type: ignore[method-assign]
    assert srv.peak <= capacity
    assert len(peaks) >= 3, peaks  # several sawtooth cycles
    assert all(capacity + 1 <= p < capacity + 3 for p in peaks), peaks
    after = samples[len(samples) // 4 :]  # past the first climb
    assert min(after) >= BETA * (capacity + 1) - 1e-9
    assert max(after) < capacity + 3
    mean = sum(after) / len(after)
    low = (BETA * (capacity + 1) + capacity + 1) / 2 - 0.5
    high = (BETA * (capacity + 3) + capacity + 3) / 2 + 0.5
    assert low <= mean <= high, mean


def test_latency_well_above_the_baseline_cuts_once_per_epoch() -> None:
    w = EndpointWindow(cap=16, window=8.0)
    for _ in range(8):  # the baseline: the fastest of the recent answers, 0.1 s
        w.succeeded(0.1, w.epoch)
    grown = 8.0
    for _ in range(8):
        grown += 1 / grown
    assert w.window == pytest.approx(grown)
    epoch = w.epoch
    w.succeeded(0.35, epoch)  # 3.5x the baseline: not "well above" (4x)
    assert w.cuts == 0
    w.succeeded(0.5, epoch)  # 5x: cut
    assert w.window == pytest.approx((grown + 1 / grown) * BETA)
    w.succeeded(0.5, epoch)  # started before the cut: the same overload, no second cut
    assert w.cuts == 1
    w.throttled(epoch)
    assert w.cuts == 1 and w.rate_limited == 1


def test_the_window_stays_within_one_and_the_cap() -> None:
    w = EndpointWindow(cap=3)
    assert w.window == 3.0  # the start window (4) is capped
    for _ in range(50):
        w.succeeded(0.1, w.epoch)
    assert w.window == 3.0 and w.slots() == 3
    for _ in range(10):
        w.throttled(w.epoch)
    assert w.window == 1.0 and w.slots() == 1


# -- identity ------------------------------------------------------------------------------------


def test_endpoints_serving_other_models_are_refused(servers: list[FakeServer]) -> None:
    a, b = start(servers, 2)
    (c,) = start(servers, 1, model_id="other-model")
    with pytest.raises(ConfigError) as e:
        fleet([a, b, c]).identity()
    msg = e.value.message
    assert f"{a.url}, {b.url} serve id=fleet-model" in msg
    assert f"{c.url} serves id=other-model" in msg


def test_same_name_other_weights_are_refused(servers: list[FakeServer]) -> None:
    """llama.cpp's server names a model by its file; ``meta`` tells the weights apart."""
    (a,) = start(servers, 1, meta={"n_params": 134515008, "n_vocab": 49152})
    (b,) = start(servers, 1, meta={"n_params": 361821120, "n_vocab": 49152})
    with pytest.raises(ConfigError, match=r"meta.n_params=361821120"):
        fleet([a, b]).identity()
    (c,) = start(servers, 1, meta={"n_params": 134515008, "n_vocab": 49152})
    ident = fleet([a, c]).identity()
    assert ident.extra["served.meta.n_params"] == "134515008"


def test_what_vllm_and_llama_cpp_say_about_the_weights_is_compared() -> None:
    vllm = {"data": [{"id": "chat", "root": "/models/llama-3-8b", "max_model_len": 8192}]}
    assert served_model(vllm, "chat") == {"id": "chat", "root": "/models/llama-3-8b"}
    several = {"data": [{"id": "a"}, {"id": "b"}]}
    assert served_model(several, "b") == {"id": "b"}
    assert served_model(several, "c") == {"models": "a, b"}
    assert served_model(None, "c") == {"models": "(none listed)"}


def test_the_first_request_checks_the_identity(servers: list[FakeServer]) -> None:
    (a,) = start(servers, 1)
    (b,) = start(servers, 1, model_id="other-model")
    with pytest.raises(ConfigError, match="do not serve the same model"):
        asyncio.run(flood(fleet([a, b]), 1, parallel=1))
    assert a.served == b.served == 0


def test_a_rejected_request_is_not_retried_elsewhere(servers: list[FakeServer]) -> None:
    (bad,) = start(servers, 1, bad_request=True)
    (good,) = start(servers, 1)
    model = fleet([bad, good])
    model.endpoints[1].state.in_flight = 8  # full: the request goes to ``bad``
    with track_calls() as calls, pytest.raises(ModelCallError, match="max_tokens is too large"):
        asyncio.run(model.generate(ask("q")))
    assert calls.retries == 0 and good.served == 0
    assert model.summary()[0]["health"] == "up"


def test_identity_does_not_name_the_endpoints(servers: list[FakeServer]) -> None:
    a, b, c = start(servers, 3)
    assert fleet([a, b]).identity() == fleet([c]).identity()
    assert fleet([a, b]).identity().key() == fleet([b, c, a]).identity().key()


# -- failover, methodology, resume ---------------------------------------------------------------


def test_a_server_killed_mid_run_loses_nothing(
    servers: list[FakeServer], items: Path, tmp_path: Path
) -> None:
    of = start(servers, 3, delay_s=0.05)
    victim = of[1]
    provider = fleet(of)
    killer = when(lambda: victim.served >= 5, victim.kill)
    with Store.open(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        with track_calls():
            result = asyncio.run(arun(config(items, of), store, provider=provider))
        killer.join()
        assert result.status == "finished"
        assert_complete(store, result.run_id)
    assert 5 <= victim.served < N_ITEMS // 2
    assert sum(s.served for s in of) >= N_ITEMS  # retried ones may have been answered twice
    summary = {s["url"]: s for s in provider.summary()}
    assert summary[victim.url]["went_down"] == 1
    assert summary[victim.url]["health"] == "down"


def test_the_methodology_records_the_fleet_and_never_a_key(
    servers: list[FakeServer], items: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-fleet-secret-do-not-store"
    monkeypatch.setenv("FLEET_KEY", secret)
    of = start(servers, 3)
    with Store.open(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        cfg = config(items, of, api_key_env="FLEET_KEY")
        result = asyncio.run(arun(cfg, store))
        rec = store.get_run(result.run_id)
    card = rec.methodology
    assert card["model"]["base_url"] is None
    assert card["model"]["extra"]["fleet"] == "identity checked"
    assert card["model_runtime"]["fleet"] == " ".join(s.url for s in of)
    assert "3 answered" in card["model_runtime"]["fleet_identity"]
    assert "id=fleet-model" in card["model_runtime"]["fleet_identity"]
    assert secret not in rec.model_dump_json()


def test_all_servers_down_fails_the_run_and_resume_uses_another_fleet(
    servers: list[FakeServer], items: Path, tmp_path: Path
) -> None:
    first = start(servers, 2, delay_s=0.05)

    def kill_all() -> None:
        for s in first:
            s.kill()

    killer = when(lambda: sum(s.served for s in first) >= 10, kill_all)
    with Store.open(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        with pytest.raises(ModelLoadError, match=r"Is the server running\?") as e:
            asyncio.run(arun(config(items, first), store))
        killer.join()
        assert all(s.url in e.value.message for s in first)
        (rec,) = store.list_runs()
        assert rec.status == "failed"
        stored = store.get_samples(rec.id)
        assert 10 <= len(stored) < N_ITEMS
        assert [r.error for r in stored if r.error] == []  # failed over, never an error row

        (other,) = start(servers, 1, model_id="other-model")
        with pytest.raises(ResumeError, match="model is not the same"):
            asyncio.run(aresume(rec.id, store, model_options={"fleet": [{"url": other.url}]}))

        second = start(servers, 3)
        fleet2 = [{"url": s.url} for s in second]
        result = asyncio.run(aresume(rec.id, store, model_options={"fleet": fleet2}))
        assert result.status == "finished"
        assert_complete(store, rec.id)
    assert sum(s.served for s in second) == N_ITEMS - len(stored)


def test_an_endpoint_down_at_the_start_is_probed_back_in(servers: list[FakeServer]) -> None:
    a, b = start(servers, 2, delay_s=0.02)
    b.stop()
    model = fleet([a, b])
    model.identity()
    assert [s["health"] for s in model.summary()] == ["up", "down"]
    assert b.thread is not None
    back = FakeServer(delay_s=0.02).start(port=b.thread.port)  # the same address comes back
    servers.append(back)
    model.endpoints[1].state.retry_at = 0.0  # cool-down over
    asyncio.run(flood(model, 40, parallel=8))
    assert back.served > 0
    assert model.summary()[1]["health"] == "up"


# -- two real llama_cpp.server processes ---------------------------------------------------------


def _llama_server(model: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "1024",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        try:
            if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "llama_cpp.server did not start"
        time.sleep(0.2)


@pytest.mark.slow
def test_two_llama_servers_one_killed_mid_run(
    smollm2_path: Path, items: Path, tmp_path: Path
) -> None:
    procs = [_llama_server(smollm2_path, tmp_path / f"server{i}.log") for i in range(2)]
    try:
        (victim, _), (_, _) = procs
        cfg = RunConfig(
            model="openai:smollm2",
            tasks=(str(items),),
            use_cache=False,
            max_tokens=4,
            temperature=0.0,
            limit=16,
            model_options=ModelOptions(
                fleet=tuple(FleetEndpoint(url=u, max_concurrency=2) for _, u in procs)
            ),
        )
        provider = resolve_model(cfg.model, cfg.model_options)
        assert isinstance(provider, FleetModel)
        ident = provider.identity()  # both serve the bundled GGUF, named by its path
        assert ident.api_model and ident.api_model.endswith(".gguf")
        with Store.open(f"sqlite:///{tmp_path / 'runs.db'}") as store:
            killer = when(
                lambda: provider.endpoints[0].state.served >= 3,
                victim.kill,
            )
            result = asyncio.run(arun(cfg, store, provider=provider))
            killer.join()
            rows = store.get_samples(result.run_id)
        assert result.status == "finished"
        assert sorted(r.sample_id for r in rows) == sorted(f"i{i}" for i in range(16))
        assert [r.error for r in rows if r.error] == []
        assert all(r.scores is not None for r in rows)
        assert provider.summary()[0]["went_down"] == 1
        assert provider.summary()[1]["served"] >= 16 - provider.summary()[0]["served"]
    finally:
        for proc, _ in procs:
            proc.kill()
            proc.wait(timeout=30)
