"""RAG arms on the real embedded model: context fill sized with SmolLM2's own tokenizer, and a
request over the window refused with a message, never truncated."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from calipers.errors import ModelLoadError
from calipers.models import ModelOptions
from calipers.runner import RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks.rag import RagArm
from calipers.types import ModelRequest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    """An independent tokenizer: a vocabulary-only Llama of the same GGUF."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    from llama_cpp import Llama

    from calipers.models._gguf import bundled_smollm2

    try:
        path = bundled_smollm2()
    except ModelLoadError as e:
        pytest.skip(str(e))
    llama = Llama(model_path=str(path), vocab_only=True, verbose=False)
    yield llama
    llama.close()


@pytest.mark.parametrize("fill", [0.25, 0.6, 0.9])
def test_fill_is_counted_with_the_models_tokenizer_and_template(vocab: Any, fill: float) -> None:
    window = 2048
    config = RunConfig(
        model="smollm2",
        tasks=("dyn_rag",),
        limit=6,
        rag=RagArm(fill=fill),
        model_options=ModelOptions(n_ctx=window),
    )
    plan = make_plan(config)
    for ps in plan.tasks[0].samples:
        req = ps.request
        assert isinstance(req, ModelRequest) and req.messages is not None
        text = plan.provider.render_chat(req.messages)
        assert text.startswith("<|im_start|>system")  # SmolLM2's chat template
        tokens = len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        realised = (tokens + req.params.max_tokens) / window
        assert abs(realised - fill) <= 0.02, (ps.sample.id, realised)
        assert ps.sample.metadata["arm"]["fill"] == pytest.approx(realised, abs=1e-9)
        kinds = [p["kind"] for p in ps.sample.fields["passages"]]
        assert kinds[0] == "filler" and kinds[-1] != "filler"  # own passages after the filler


def test_a_request_over_the_window_is_refused_with_a_message(tmp_path: Any) -> None:
    config = RunConfig(
        model="smollm2",
        tasks=("dyn_rag",),
        limit=2,
        rag=RagArm(noise=0.8, k=10),  # ten passages: far over 256 tokens
        model_options=ModelOptions(n_ctx=256),
    )
    with Store.open(f"sqlite:///{tmp_path / 'c.db'}") as store:
        result = asyncio.run(arun(config, store))
        records = store.get_samples(result.run_id)
    assert records and all(r.error is not None for r in records)
    assert all("exceed context window of 256" in (r.error or "") for r in records)
    assert all(r.response is None and r.scores is None for r in records)
