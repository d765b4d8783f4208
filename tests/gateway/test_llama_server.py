"""End to end with a real ``llama_cpp.server`` (the embedded SmolLM2 GGUF) on 127.0.0.1.

The baseline and the candidate are the same server; the candidate differs by a system prompt
the gateway puts first in every request it sends there (``candidate_system_prompt``). That is
the simplest honest candidate on a 2-core machine: a second server would double the memory and
halve the speed, and a changed system prompt is a real thing teams shadow-test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from calipers.gateway import GatewayConfig, create_app
from tests._servers import ServerThread, free_port
from tests.models.conftest import N_THREADS, SERVER_START_TIMEOUT_S, smollm2_path  # noqa: F401

PIRATE = (
    "You are a pirate captain of the seven seas. Whatever you are asked, answer in the voice of "
    "an old pirate, with plenty of pirate words, in one short sentence, and never break role."
)


@pytest.fixture(scope="module")
def llama_server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    """``python -m llama_cpp.server`` with the bundled model, as in tests/models, but with
    ``--interrupt_requests False``: by default a new request cuts off a stream in progress,
    and a shadow copy arrives while the user's answer streams."""
    if importlib.util.find_spec("sse_starlette") is None:
        pytest.skip("llama_cpp.server needs its extra: pip install 'llama-cpp-python[server]'")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(N_THREADS),
        "--n_ctx",
        "1024",
        "--interrupt_requests",
        "False",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "llama_cpp.server did not start"
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "smollm2",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": 12,
        "temperature": 0.0,
        "seed": 1,
        **extra,
    }


@pytest.mark.slow
def test_pass_through_and_logged_pairs(llama_server: str, tmp_path: Path) -> None:
    config = GatewayConfig(
        baseline_url=llama_server, candidate_url=llama_server, mode="shadow", fraction=1.0,
        candidate_system_prompt=PIRATE, candidate_timeout_s=120.0, shutdown_grace_s=120.0,
    )  # fmt: skip
    gateway = ServerThread(create_app(config, str(tmp_path / "gw.db"))).start()
    gw = f"{gateway.url}/v1"
    try:
        with httpx.Client(timeout=120) as client:
            # Never two identical prompts back to back: llama_cpp.server then replays only the
            # last token (see docs/models.md), which changes the answer.
            direct = client.post(f"{llama_server}/chat/completions", json=ask("Name a fruit."))
            client.post(f"{llama_server}/chat/completions", json=ask("Name a planet."))
            via = client.post(f"{gw}/chat/completions", json=ask("Name a fruit."))
            with client.stream(
                "POST", f"{gw}/chat/completions", json=ask("Name a color.", stream=True)
            ) as r:
                streamed = b"".join(r.iter_raw())
                assert r.status_code == 200
            models = client.get(f"{gw}/models").json()
    finally:
        gateway.stop()
    assert via.status_code == 200
    want, got = direct.json(), via.json()
    assert got["choices"][0]["message"]["content"] == want["choices"][0]["message"]["content"]
    assert got["usage"] == want["usage"]
    assert streamed.rstrip().endswith(b"data: [DONE]")
    assert models["data"][0]["id"].endswith(".gguf")

    from calipers.store import Store

    with Store.open(str(tmp_path / "gw.db")) as store:
        rows = store.get_traffic()
    base = {r.pair_id: r for r in rows if r.role == "baseline"}
    cand = {r.pair_id: r for r in rows if r.role == "candidate"}
    assert len(base) == len(cand) == 2 and set(base) == set(cand)
    plain, stream = sorted(base.values(), key=lambda r: r.stream)
    assert plain.response == want["choices"][0]["message"]["content"]
    assert (plain.input_tokens, plain.output_tokens) == (
        want["usage"]["prompt_tokens"],
        want["usage"]["completion_tokens"],
    )
    assert stream.stream and stream.response and stream.ttft_ms is not None
    for pid, c in cand.items():
        assert c.ok and c.response, c.error
        assert c.request["messages"][0] == {"role": "system", "content": PIRATE}
        assert base[pid].request["messages"][0]["role"] == "user"
    pirate = cand[plain.pair_id]
    assert pirate.input_tokens is not None and plain.input_tokens is not None
    assert pirate.input_tokens > plain.input_tokens + 10  # it really got the longer prompt
