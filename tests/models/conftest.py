"""Fixtures for provider tests: the bundled SmolLM2 GGUF, an independent reference ``Llama``,
and a real ``llama_cpp.server`` on 127.0.0.1 (never an HTTP mock for the happy path)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from calipers.errors import ModelLoadError
from calipers.models._gguf import bundled_smollm2

N_THREADS = 2
SERVER_START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    try:
        return bundled_smollm2()
    except ModelLoadError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def reference_llama(smollm2_path: Path) -> Any:
    """A separate Llama with ``logits_all=True``: the independent source of truth for
    log-likelihoods (each check resets it and evaluates the whole sequence at once)."""
    from llama_cpp import Llama

    llama = Llama(
        model_path=str(smollm2_path),
        n_ctx=512,
        n_threads=N_THREADS,
        logits_all=True,
        verbose=False,
    )
    yield llama
    llama.close()


def direct_logprob(llama: Any, context: str, continuation: str) -> tuple[float, bool]:
    """log P(continuation | context) from one fresh evaluation of the whole token sequence,
    tokenized the lm-evaluation-harness way, with numpy's log-softmax over the logits."""
    n_space = len(context) - len(context.rstrip())
    if n_space:
        context, continuation = context[:-n_space], context[-n_space:] + continuation

    def tok(text: str) -> list[int]:
        return list(llama.tokenize(text.encode(), add_bos=True, special=True))

    ctx = tok(context)
    if ctx:
        cont = tok(context + continuation)[len(ctx) :]
    else:
        ctx, cont = [llama.token_bos()], tok(continuation)
    seq = ctx + cont
    llama.reset()
    llama.eval(seq)
    logits = np.asarray(llama.scores[: len(seq)], dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = range(len(ctx) - 1, len(seq) - 1)  # row i predicts token i + 1
    total = sum(float(log_softmax[r, seq[r + 1]]) for r in rows)
    greedy = all(int(logits[r].argmax()) == seq[r + 1] for r in rows)
    return total, greedy


@pytest.fixture(scope="session")
def llama_server(smollm2_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the bundled model on a free loopback port; yields
    the base URL (``http://127.0.0.1:PORT/v1``)."""
    for module in ("fastapi", "uvicorn", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"llama_cpp.server needs {module} (pip install 'llama-cpp-python[server]')")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(smollm2_path), "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", str(N_THREADS), "--n_threads_batch", str(N_THREADS), "--n_ctx", "1024",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {tail}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within {SERVER_START_TIMEOUT_S} s")
            time.sleep(0.2)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
