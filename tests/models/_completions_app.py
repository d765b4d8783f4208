"""A small OpenAI-compatible ``/v1/completions`` server for log-likelihood tests: echo with
log-probabilities computed from a backend (a toy tokenizer with planted log-probabilities, or
llama_cpp.Llama on a GGUF), either correctly or shifted by one token the way
llama-cpp-python 0.3.36's server does for a model without a BOS token."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from calipers.models._base import common_prefix

__all__ = ["Backend", "LlamaBackend", "Recorder", "ToyBackend", "completions_app", "toy_logprob"]


class Backend(Protocol):
    def analyse(
        self, text: str
    ) -> tuple[list[str], Callable[[int, int], float], Callable[[int], float]]:
        """``(pieces, lp, top)``: the text's tokens, ``lp(row, i)`` the log-probability of
        token ``i`` under the distribution after tokens ``0..row``, ``top(row)`` that
        distribution's largest log-probability."""
        ...

    def generate(self, text: str, n: int) -> list[tuple[str, float, float]]:
        """``n`` greedy tokens after ``text``: ``(piece, logprob, top)``."""
        ...


# -- the toy backend: words are tokens, log-probabilities planted --------------------------------

_PIECE = re.compile(r"\s*\S+|\s+")


def toy_logprob(prefix: list[str], piece: str) -> float:
    """The planted log-probability of ``piece`` after ``prefix`` (tokens)."""
    return -(len(piece.strip()) + len(prefix) % 3) / 10


def toy_top(prefix: list[str]) -> float:
    """The largest log-probability after ``prefix``: a one-letter word's."""
    return -(1 + len(prefix) % 3) / 10


class ToyBackend:
    def analyse(
        self, text: str
    ) -> tuple[list[str], Callable[[int, int], float], Callable[[int], float]]:
        pieces = _PIECE.findall(text)
        return (
            pieces,
            lambda row, i: toy_logprob(pieces[: row + 1], pieces[i]),
            lambda row: toy_top(pieces[: row + 1]),
        )

    def generate(self, text: str, n: int) -> list[tuple[str, float, float]]:
        pieces = _PIECE.findall(text)
        out = []
        for _ in range(n):
            out.append((" z", toy_logprob(pieces, " z"), toy_top(pieces)))
            pieces.append(" z")
        return out


# -- llama.cpp in process: correct log-softmax over logits_all rows ----------------------------


class LlamaBackend:
    """Thread-safe: FastAPI runs sync endpoints on a thread pool."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.lock = threading.Lock()
        self.last: list[int] = []

    def _rows(self, ids: list[int]) -> Any:
        """Log-softmax rows of ``ids``; the prefix shared with the last call is kept in the KV
        cache (as a server with a prefix cache does), never leaving a 1-token batch."""
        import numpy as np

        keep = min(common_prefix(self.last, ids), len(ids) - 2)
        keep = max(keep, 0)
        self.llama._ctx.kv_cache_seq_rm(-1, keep, -1)
        self.llama.n_tokens = keep
        self.llama.eval(ids[keep:])
        self.last = list(ids)
        logits = np.asarray(self.llama.scores[: len(ids)], dtype=np.float64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def _pieces(self, ids: list[int]) -> list[str]:
        return [self.llama.detokenize([t]).decode("utf-8", errors="replace") for t in ids]

    def analyse(
        self, text: str
    ) -> tuple[list[str], Callable[[int, int], float], Callable[[int], float]]:
        with self.lock:
            return self._analyse(text)

    def _analyse(
        self, text: str
    ) -> tuple[list[str], Callable[[int, int], float], Callable[[int], float]]:
        ids = list(self.llama.tokenize(text.encode(), add_bos=True, special=False))
        bos = self.llama.token_bos()
        lsm = self._rows(ids)
        skip = 1 if ids and ids[0] == bos else 0  # a BOS is evaluated but not echoed
        shown = ids[skip:]
        return (
            self._pieces(shown),
            lambda row, i: float(lsm[row + skip, shown[i]]),
            lambda row: float(lsm[row + skip].max()),
        )

    def generate(self, text: str, n: int) -> list[tuple[str, float, float]]:
        with self.lock:
            return self._generate(text, n)

    def _generate(self, text: str, n: int) -> list[tuple[str, float, float]]:
        ids = list(self.llama.tokenize(text.encode(), add_bos=True, special=False))
        out = []
        for _ in range(n):
            row = self._rows(ids)[-1]
            tok = int(row.argmax())
            out.append((self._pieces([tok])[0], float(row[tok]), float(row.max())))
            ids.append(tok)
        return out


# -- the app -------------------------------------------------------------------------------------


@dataclass
class Recorder:
    """What the server was asked: each request's prompt as sent (a string or a list)."""

    prompts: list[Any] = field(default_factory=list)

    def lists(self) -> list[list[str]]:
        return [p for p in self.prompts if isinstance(p, list)]


def _choice(index: int, pieces: list[str], lps: list[Any], tops: list[Any], start: int) -> Any:
    offsets, at = [], start
    for p in pieces:
        offsets.append(at)
        at += len(p)
    return {
        "index": index,
        "text": "".join(pieces),
        "finish_reason": "length",
        "logprobs": {
            "tokens": pieces,
            "text_offset": offsets,
            "token_logprobs": lps,
            "top_logprobs": [
                None if t is None else {"(top)": t, **({} if lp is None else {p: lp})}
                for p, lp, t in zip(pieces, lps, tops, strict=True)
            ],
        },
    }


def _prompt_logprobs(pieces: list[str], lps: list[Any], tops: list[Any]) -> list[Any]:
    """vLLM's form: per token ``{id: {logprob, rank, decoded_token}}`` with the top token
    added when it is another one (ids here are made up: the position, or -1 for the top)."""
    out: list[Any] = [None]
    for i in range(1, len(pieces)):
        own = {"logprob": lps[i], "rank": 1 if lps[i] >= tops[i] else 2}
        entry = {str(i): {**own, "decoded_token": pieces[i]}}
        if lps[i] < tops[i]:
            entry["-1"] = {"logprob": tops[i], "rank": 1, "decoded_token": "(top)"}
        out.append(entry)
    return out


def completions_app(
    backend: Backend,
    *,
    shifted: bool = False,
    lists: bool = True,
    echo: bool = True,
    model: str = "toy",
) -> tuple[FastAPI, Recorder]:
    """The app and what it records. ``shifted``: echoed token ``i`` gets the log-probability
    of the row that predicts token ``i + 1`` (llama-cpp-python 0.3.36 without BOS);
    ``lists=False``: a list of prompts is answered with HTTP 500, as that server does;
    ``echo=False``: echo is refused with HTTP 400, and vLLM's ``prompt_logprobs`` works."""
    app = FastAPI()
    seen = Recorder()

    @app.get("/v1/models")
    def models() -> Any:
        return {"object": "list", "data": [{"id": model, "object": "model"}]}

    @app.post("/v1/completions")
    def completions(body: dict[str, Any]) -> Any:
        prompt = body["prompt"]
        seen.prompts.append(prompt)
        if isinstance(prompt, list) and not lists:
            return JSONResponse({"error": {"message": ""}}, status_code=500)
        if body.get("echo") and not echo:
            return JSONResponse({"error": {"message": "echo is not supported"}}, status_code=400)
        prompts = prompt if isinstance(prompt, list) else [prompt]
        n = max(1, int(body.get("max_tokens") or 1))
        choices, used = [], 0
        for k, text in enumerate(prompts):
            if body.get("echo") or body.get("prompt_logprobs") is not None:
                pieces, lp, top = backend.analyse(text)
                used += len(pieces)
                d = 0 if shifted else 1
                lps = [None] + [lp(i - d, i) for i in range(1, len(pieces))]
                tops = [None] + [top(i - d) for i in range(1, len(pieces))]
                # like llama-cpp-python, the generated token is not echoed
                choices.append(_choice(k, pieces, lps, tops, 0))
                if not body.get("echo"):  # vLLM: the prompt apart, the generated token's own
                    choices[-1] = {
                        **_choice(k, [" z"], [-9.0], [-9.0], len(text)),
                        "prompt_logprobs": _prompt_logprobs(pieces, lps, tops),
                    }
            else:
                gen = backend.generate(text, n)
                g_pieces = [g[0] for g in gen]
                choices.append(
                    _choice(k, g_pieces, [g[1] for g in gen], [g[2] for g in gen], len(text))
                )
        return {
            "object": "text_completion",
            "model": model,
            "choices": choices,
            "usage": {"prompt_tokens": used},
        }

    return app, seen


def main() -> None:
    """``python -m tests.models._completions_app [PORT]``: a correct server for the bundled
    SmolLM2 on 127.0.0.1 (docs/models.md uses it)."""
    import sys

    import uvicorn
    from llama_cpp import Llama

    from calipers.models._gguf import bundled_smollm2

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8001
    llama = Llama(
        model_path=str(bundled_smollm2()),
        n_ctx=1024,
        n_threads=1,
        n_threads_batch=1,
        logits_all=True,
        verbose=False,
    )
    app, _ = completions_app(LlamaBackend(llama), model="smollm2")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
