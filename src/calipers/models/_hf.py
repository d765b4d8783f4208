"""Hugging Face transformers models: generation, batched log-likelihood, token statistics.

``hf:@smollm2`` (the bundled SmolLM2 GGUF, dequantised to float32), ``hf:PATH.gguf``,
``hf:CHECKPOINT_DIR`` or ``hf:ORG/NAME`` (from the Hugging Face cache; downloaded only without
``HF_HUB_OFFLINE``), with options after commas: ``gguf_file=NAME``, ``revision=REV``,
``dtype=float32|bfloat16|float16`` (default float32), ``batch=N`` (requests per forward pass,
default 16), ``cache=off`` (do not keep a converted GGUF), ``kernels=torch`` (plain
``torch.nn.Linear`` instead of oneDNN-packed float32 weights, see ``_hf_kernels``). Needs the
optional extra
``calipers[hf]`` (torch, transformers, gguf, accelerate), imported on first use.

All torch work of every ``hf`` model in the process runs on one long-lived thread
(``torch_thread``). PyTorch's CPU kernels use GNU OpenMP, which keeps a team of worker threads
per calling thread; once two calling threads have teams there are more OpenMP threads than
cores, and libgomp then stops spinning between parallel regions and sleeps instead. Scoring
from a pool of worker threads measured 10-30% slower for that reason alone.

Log-likelihood requests that arrive together (the runner keeps ``2 * batch`` in flight) are
gathered into one forward pass of up to ``batch`` requests; see ``_hf_loglik`` for how each
shared token is computed once and the output head only where a continuation token is
predicted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from calipers.errors import ModelCallError, NotSupportedError
from calipers.models._base import ModelOptions, ModelProvider
from calipers.models._hf_kernels import pack_linears
from calipers.models._hf_load import (
    HfSpec,
    LocalModel,
    import_hf,
    load_model,
    load_tokenizer,
    parse_spec,
    resolve_local,
    source_identity,
)
from calipers.models._hf_loglik import (
    Encoded,
    encode_request,
    head_logits,
    score_packed,
    use_block_attention,
)
from calipers.types import (
    ChatMessage,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    TokenStatsRequest,
    TokenStatsResult,
)

__all__ = ["HfModel", "hf_from_spec", "torch_thread"]

_TORCH_THREAD = "calipers-torch"
_TORCH: list[ThreadPoolExecutor] = []
_TORCH_LOCK = threading.Lock()


def torch_thread() -> ThreadPoolExecutor:
    """The one thread that runs the torch work of every ``hf`` model (module docstring)."""
    with _TORCH_LOCK:
        if not _TORCH:
            _TORCH.append(ThreadPoolExecutor(1, thread_name_prefix=_TORCH_THREAD))
        return _TORCH[0]


async def _on_torch_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(torch_thread(), fn, *args)


def _run_on_torch_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on the torch thread, waiting for it (directly when already there)."""
    if threading.current_thread().name.startswith(_TORCH_THREAD):  # would deadlock
        return fn()
    return torch_thread().submit(fn).result()


_STATS_BLOCK = 64


def hf_from_spec(rest: str, options: ModelOptions) -> HfModel:
    return HfModel(parse_spec(rest), options)


class _Batcher:
    """Collects concurrent calls and hands them to ``work`` (run on the torch thread) in lists
    of at most ``size``; ``work`` returns one result or exception per item."""

    def __init__(self, work: Callable[[list[Any]], list[Any]], size: int) -> None:
        self._work = work
        self._size = size
        self._pending: list[tuple[Any, asyncio.Future[Any]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, item: Any) -> Any:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        # Items left by an earlier event loop (asyncio.run called again) can never finish.
        self._pending = [p for p in self._pending if p[1].get_loop() is loop]
        self._pending.append((item, fut))
        if self._drainer is None or self._drainer.done() or self._drainer.get_loop() is not loop:
            self._drainer = loop.create_task(self._drain())
        return await fut

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let the callers woken in this loop turn queue up
            batch = [p for p in self._pending[: self._size] if not p[1].done()]
            del self._pending[: self._size]
            if not batch:
                continue
            try:
                results = await _on_torch_thread(self._work, [item for item, _f in batch])
            except Exception as e:
                results = [e] * len(batch)
            for (_item, fut), res in zip(batch, results, strict=True):
                if fut.done():
                    continue
                if isinstance(res, BaseException):
                    fut.set_exception(res)
                else:
                    fut.set_result(res)


class HfModel(ModelProvider):
    """A transformers causal LM run in-process, on the torch thread, under a lock."""

    provider_name = "hf"
    supports_loglikelihood = True
    supports_token_stats = True

    def __init__(self, spec: HfSpec, options: ModelOptions | None = None) -> None:
        self.spec = spec
        self.options = options or ModelOptions()
        self.default_concurrency = 2 * spec.batch
        self.loads = 0
        self.forward_passes = 0  # log-likelihood batches run (for tests and benchmarks)
        self._local: LocalModel | None = None
        self._identity: ModelIdentity | None = None
        self._tokenizer: Any = None
        self._model: Any = None
        self._packed = True  # trees of a batch in one sequence (see _hf_loglik)
        self._prefix: tuple[int, str] | None = None  # prefix token id and its text
        self._lock = threading.Lock()
        self._batcher = _Batcher(self._loglikelihood_batch, spec.batch)

    # -- identity, loading ------------------------------------------------------------------

    def local(self) -> LocalModel:
        if self._local is None:
            self._local = resolve_local(self.spec)
        return self._local

    def identity(self) -> ModelIdentity:
        if self._identity is None:
            self._identity = source_identity(self.spec, self.local())
        return self._identity

    def _ensure_tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.spec, self.local())
        return self._tokenizer

    def _ensure_loaded(self) -> tuple[Any, Any, Any]:
        """``(torch, tokenizer, model)``; call with the lock held."""
        torch, _transformers = import_hf()
        if self._model is None:
            if self.options.n_threads:
                torch.set_num_threads(self.options.n_threads)
            tokenizer = self._ensure_tokenizer()
            self._model = load_model(self.spec, self.local(), tokenizer)
            if self.spec.kernels == "onednn":
                pack_linears(torch, self._model)
            self._packed = use_block_attention(self._model)
            self.loads += 1
        return torch, self._tokenizer, self._model

    def load(self) -> None:
        """Load tokenizer and weights now (benchmarks time loading apart from scoring)."""

        def load() -> None:
            with self._lock:
                self._ensure_loaded()

        _run_on_torch_thread(load)

    async def aclose(self) -> None:
        with self._lock:
            self._model = None

    def _tok_encode(self, text: str) -> list[int]:
        """``HFLM.tok_encode``: the tokenizer's own special tokens, except when the text
        already starts with the prefix token's text."""
        tok = self._ensure_tokenizer()
        if self._prefix is None:
            prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
            self._prefix = (int(prefix), str(tok.decode([prefix])))
        add = not (self._prefix[1] and text.startswith(self._prefix[1]))
        return list(tok.encode(text, add_special_tokens=add))

    def _prefix_token(self) -> int:
        """What an empty context is scored after: BOS, else EOS (lm-eval's prefix_token_id)."""
        if self._prefix is None:
            self._tok_encode("")
        assert self._prefix is not None
        return self._prefix[0]

    def _max_positions(self, model: Any) -> int | None:
        value = getattr(model.config, "max_position_embeddings", None)
        return int(value) if isinstance(value, int) else None

    # -- chat template -----------------------------------------------------------------------

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        tok = self._ensure_tokenizer()
        if not getattr(tok, "chat_template", None):
            raise NotSupportedError(
                f"{self.spec.source} has no chat template.",
                hint="Run the task with --no-chat-template (plain prompts).",
            )
        try:
            text = tok.apply_chat_template(
                [m.model_dump() for m in messages], tokenize=False, add_generation_prompt=True
            )
        except Exception as e:  # jinja errors, raise_exception() in the template
            raise ModelCallError(f"The chat template rejected the messages: {e}") from None
        return str(text)

    # -- log-likelihood ----------------------------------------------------------------------

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        start = time.perf_counter()
        res: LoglikelihoodResult = await self._batcher.submit(request)
        return res.model_copy(update={"latency_s": time.perf_counter() - start})

    def _loglikelihood_batch(self, requests: list[LoglikelihoodRequest]) -> list[Any]:
        with self._lock:
            torch, _tok, model = self._ensure_loaded()
            limit = self._max_positions(model)
            results: list[Any] = [None] * len(requests)
            todo: list[tuple[int, Encoded]] = []
            for i, r in enumerate(requests):
                enc = encode_request(
                    self._tok_encode, self._prefix_token(), r.context, r.continuations
                )
                if limit is not None and enc.span > limit:
                    results[i] = ModelCallError(
                        f"Context ({len(enc.context)} tokens) plus the longest continuation "
                        f"exceed the model's {limit} positions.",
                        hint="Use fewer few-shot examples or shorter prompts.",
                    )
                else:
                    todo.append((i, enc))
            try:
                scored, self._packed = score_packed(
                    torch, model, [e for _i, e in todo], packed=self._packed
                )
            except RuntimeError as e:
                raise ModelCallError(f"transformers could not evaluate the batch ({e}).") from None
            self.forward_passes += 1
        for (i, enc), s in zip(todo, scored, strict=True):
            results[i] = LoglikelihoodResult(
                logprobs=tuple(s.logprobs),
                is_greedy=tuple(s.greedy),
                n_tokens=tuple(len(c) for c in enc.continuations),
                tokens_evaluated=s.evaluated,
                input_tokens=enc.size,
            )
        return results

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelResponse:
        res: ModelResponse = await _on_torch_thread(self._generate, request)
        return res

    def _generate(self, request: ModelRequest) -> ModelResponse:
        p = request.params
        with self._lock:
            torch, tok, model = self._ensure_loaded()
            start = time.perf_counter()
            if request.messages is not None:
                ids = list(tok.encode(self.render_chat(request.messages), add_special_tokens=False))
            else:
                ids = self._tok_encode(request.prompt or "") or [self._prefix_token()]
            config = _generation_config(model, tok, p.max_tokens, p.temperature, p.top_p)
            if p.temperature > 0:
                torch.manual_seed(p.seed or 0)
            inputs = torch.tensor([ids])
            extra = {"stop_strings": list(p.stop), "tokenizer": tok} if p.stop else {}
            try:
                with torch.inference_mode():
                    out = model.generate(
                        inputs,
                        attention_mask=torch.ones_like(inputs),
                        generation_config=config,
                        **extra,
                    )
            except (RuntimeError, ValueError) as e:
                raise ModelCallError(f"transformers generate failed ({e}).") from None
            new = out[0, len(ids) :].tolist()
            latency = time.perf_counter() - start
        ended = bool(new) and new[-1] in _eos_ids(model, tok)
        if ended:  # the end-of-sequence token is not part of the answer (nor counted)
            new = new[:-1]
        text = tok.decode(new, skip_special_tokens=True)
        cut = [text.index(s) for s in p.stop if s in text]
        finish = "stop" if cut or ended else "length"
        return ModelResponse(
            text=text[: min(cut)] if cut else text,
            input_tokens=len(ids),
            output_tokens=len(new),
            latency_s=latency,
            finish_reason=finish,
        )

    # -- token statistics --------------------------------------------------------------------

    async def token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        res: TokenStatsResult = await _on_torch_thread(self._token_stats, request)
        return res

    def _token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        with self._lock:
            torch, tok, model = self._ensure_loaded()
            start = time.perf_counter()
            enc = encode_request(self._tok_encode, self._prefix_token(), "", [request.text])
            toks = enc.continuations[0]
            seq = enc.context + toks
            limit = self._max_positions(model)
            if limit is not None and len(seq) > limit:
                raise ModelCallError(
                    f"The text is {len(toks)} tokens; with the prefix token "
                    f"that exceeds the model's {limit} positions.",
                    hint="Score shorter texts.",
                )
            stats = _next_token_stats(torch, model, seq) if toks else []
            pieces = [tok.decode([t]) for t in toks]
            latency = time.perf_counter() - start
        return TokenStatsResult(
            tokens=tuple(pieces),
            logprobs=tuple(s[0] for s in stats),
            mean_logprob=tuple(s[1] for s in stats),
            std_logprob=tuple(s[2] for s in stats),
            tokens_evaluated=len(seq) if toks else 0,
            latency_s=latency,
        )


def _eos_ids(model: Any, tok: Any) -> set[int]:
    ids = getattr(model.generation_config, "eos_token_id", None)
    out = set(ids if isinstance(ids, list) else [ids] if ids is not None else [])
    if tok.eos_token_id is not None:
        out.add(int(tok.eos_token_id))
    return out


def _generation_config(
    model: Any, tok: Any, max_tokens: int, temperature: float, top_p: float
) -> Any:
    """Only what ``GenerateParams`` records shapes decoding: no top-k, no repetition penalty,
    whatever the checkpoint's generation_config.json says."""
    from transformers import GenerationConfig

    eos = sorted(_eos_ids(model, tok))
    pad = tok.pad_token_id if tok.pad_token_id is not None else (eos[0] if eos else 0)
    sampled = temperature > 0
    return GenerationConfig(  # type: ignore[no-untyped-call, unused-ignore]
        max_new_tokens=max_tokens,
        do_sample=sampled,
        temperature=temperature if sampled else None,
        top_p=top_p if sampled else None,
        top_k=0 if sampled else None,
        repetition_penalty=1.0,
        eos_token_id=eos or None,
        pad_token_id=pad,
    )


def _next_token_stats(torch: Any, model: Any, seq: list[int]) -> list[tuple[float, float, float]]:
    """``(log p(next), E log p(z), sd log p(z))`` for every token after the first, in float64
    over the whole vocabulary, ``_STATS_BLOCK`` rows at a time."""
    out: list[tuple[float, float, float]] = []
    with torch.inference_mode():
        hidden = model.base_model(input_ids=torch.tensor([seq]), use_cache=False)
        flat = hidden.last_hidden_state[0]
        for lo in range(0, len(seq) - 1, _STATS_BLOCK):
            hi = min(lo + _STATS_BLOCK, len(seq) - 1)
            logits = head_logits(model, flat[lo:hi]).double()
            lsm = torch.log_softmax(logits, dim=-1)
            p = lsm.exp()
            mu = (p * lsm).sum(-1)
            sd = (p * (lsm - mu[:, None]).square()).sum(-1).clamp(min=0).sqrt()
            lp = lsm.gather(1, torch.tensor(seq[lo + 1 : hi + 1])[:, None])[:, 0]
            out += zip(lp.tolist(), mu.tolist(), sd.tolist(), strict=True)
    return out
