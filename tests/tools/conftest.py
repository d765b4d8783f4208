"""A real ``llama_cpp.server`` with function calling (``--chat_format
chatml-function-calling``) and the bundled SmolLM2, on a free loopback port."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from calipers.errors import ModelLoadError
from calipers.models._gguf import bundled_smollm2
from tests._servers import free_port

START_TIMEOUT_S = 90.0


@pytest.fixture(scope="session")
def smollm2() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    try:
        return bundled_smollm2()
    except ModelLoadError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def function_server(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:PORT/v1``)."""
    for module in ("fastapi", "uvicorn", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"llama_cpp.server needs {module} (pip install 'llama-cpp-python[server]')")
    port = free_port()
    log = tmp_path_factory.mktemp("function-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
        "--n_threads", "2", "--chat_format", "chatml-function-calling",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within {START_TIMEOUT_S} s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
