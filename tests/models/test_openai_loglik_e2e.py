"""Log-likelihoods through OpenAI-compatible servers with the bundled SmolLM2 GGUF:

- the real ``python -m llama_cpp.server`` (0.3.36) shifts echoed log-probabilities by one
  token for this model (no BOS token): calipers must detect it and refuse it;
- a server that computes them correctly (``_completions_app`` over ``llama_cpp.Llama`` with
  ``logits_all=True`` in this process) must give what the ``llamacpp`` provider gives on the
  same requests: 20 ARC-Easy items, every option within 1e-3 nats, the same choice per item.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import NotSupportedError
from calipers.models import ModelOptions, ModelProvider
from calipers.models._openai import OpenAIModel
from calipers.runner import RunConfig, make_plan
from calipers.types import LoglikelihoodRequest, LoglikelihoodResult
from tests._servers import ServerThread
from tests.models._completions_app import LlamaBackend, completions_app

pytestmark = pytest.mark.slow

DATA = Path(os.environ.get("CALIPERS_DATA", "/work/shared/data"))


def scores(
    provider: ModelProvider, requests: Sequence[LoglikelihoodRequest]
) -> list[LoglikelihoodResult]:
    async def go() -> list[LoglikelihoodResult]:
        try:
            return [await provider.score_continuations(r) for r in requests]
        finally:
            await provider.aclose()

    return asyncio.run(go())


def test_the_real_llama_cpp_server_is_detected_as_shifted(
    llama_server: str, tmp_path: Path
) -> None:
    m = OpenAIModel("smollm2", ModelOptions(base_url=llama_server))
    request = LoglikelihoodRequest(context="The capital of France is", continuations=(" Paris",))
    with pytest.raises(NotSupportedError) as e:
        scores(m, [request])
    message = " ".join(str(e.value).split())
    assert "log-probabilities are shifted by one token" in message, message
    assert "at the position before" in message
    assert e.value.hint is not None and "llamacpp:" in e.value.hint
    assert not m._loglik.lists  # it answers a list of prompts with HTTP 500
    # a run that needs log-likelihoods is refused before anything is stored
    args = ["run", "-m", "openai:smollm2", "--base-url", llama_server, "-t", "hellaswag"]
    env = {"CALIPERS_DATA": str(DATA), "CALIPERS_HOME": str(tmp_path)}
    result = CliRunner().invoke(cli, [*args, "-n", "2", "--no-chat-template"], env=env)
    flat = " ".join(result.stderr.split())
    assert result.exit_code == 2, flat
    assert "fails calipers' log-likelihood check (log-probabilities are shifted" in flat


@pytest.fixture(scope="module")
def correct_server(smollm2_path: Path) -> Iterator[str]:
    from llama_cpp import Llama

    llama = Llama(
        model_path=str(smollm2_path),
        n_ctx=1024,
        n_threads=1,  # two threads spin against each other on a busy 2-core machine
        n_threads_batch=1,
        logits_all=True,
        verbose=False,
    )
    app, _ = completions_app(LlamaBackend(llama), model="smollm2")
    server = ServerThread(app).start()
    try:
        yield f"{server.url}/v1"
    finally:
        server.stop()
        llama.close()


def _choice(values: Sequence[float], lengths: Sequence[int] | None = None) -> int:
    keyed = [v / n for v, n in zip(values, lengths, strict=True)] if lengths else list(values)
    return max(range(len(keyed)), key=keyed.__getitem__)


def test_a_correct_server_agrees_with_the_llamacpp_provider(correct_server: str) -> None:
    if not (DATA / "arc").is_dir():
        pytest.skip(f"no ARC data under {DATA}")
    config = RunConfig(
        model="llamacpp:@smollm2",
        tasks=("arc_easy",),
        limit=20,
        chat_template=False,
        data_dir=str(DATA),
    )
    plan = make_plan(config)
    requests: list[Any] = [ps.request for ps in plan.tasks[0].samples]
    assert len(requests) == 20 and all(isinstance(r, LoglikelihoodRequest) for r in requests)
    local = scores(plan.provider, requests)
    server = OpenAIModel("smollm2", ModelOptions(base_url=correct_server))
    assert server.loglikelihood_refusal() is None  # verified
    remote = scores(server, requests)
    diffs = [
        abs(a - b)
        for x, y in zip(local, remote, strict=True)
        for a, b in zip(x.logprobs, y.logprobs, strict=True)
    ]
    print(f"\n{len(diffs)} options: largest difference {max(diffs):.2e} nats")
    print(server.runtime()["loglikelihood"])
    assert max(diffs) < 1e-3
    for r, x, y in zip(requests, local, remote, strict=True):
        assert x.n_tokens == y.n_tokens
        assert _choice(x.logprobs) == _choice(y.logprobs)
        chars = [len(c) for c in r.continuations]
        assert _choice(x.logprobs, chars) == _choice(y.logprobs, chars)
    assert server._loglik.lists and server._loglik.straddled == 0
