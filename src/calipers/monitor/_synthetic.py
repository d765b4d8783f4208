"""Synthetic gateway traffic with known properties, for the false-alarm simulation, tests and
the runnable examples in ``docs/monitor.md``.

A :class:`TrafficProfile` fixes the mix of topics (each a small vocabulary), the prompt
length, the share of Spanish prompts, and the served model's error and refusal rates, latency
and tokens. Drawing twice from one profile is traffic with *no* drift; changing a field of the
profile injects exactly that drift. A profile with ``rag`` set draws RAG traffic instead
(:mod:`calipers.monitor._synthetic_rag`): questions with retrieved passages in
``calipers_rag``, answered from them when the retriever found the answer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from calipers.monitor._synthetic_rag import RagProfile, RagQuestion, rag_question
from calipers.store import TrafficRecord

__all__ = ["TOPICS", "TrafficProfile", "synthetic_traffic"]

TOPICS: dict[str, tuple[str, ...]] = {
    "billing": (
        "invoice",
        "refund",
        "charge",
        "payment",
        "card",
        "subscription",
        "billing",
        "receipt",
        "price",
        "discount",
    ),
    "shipping": (
        "package",
        "delivery",
        "tracking",
        "courier",
        "address",
        "shipment",
        "parcel",
        "arrival",
        "warehouse",
        "delay",
    ),
    "account": (
        "password",
        "login",
        "email",
        "profile",
        "username",
        "security",
        "reset",
        "verification",
        "settings",
        "account",
    ),
    "product": (
        "battery",
        "screen",
        "charger",
        "warranty",
        "model",
        "size",
        "color",
        "manual",
        "feature",
        "update",
    ),
    "cooking": (
        "recipe",
        "oven",
        "flour",
        "sugar",
        "bake",
        "pasta",
        "sauce",
        "garlic",
        "dough",
        "spices",
    ),
}
_EN = ("how", "do", "i", "my", "the", "is", "what", "can", "you", "with", "please", "for")
_ES = ("como", "el", "la", "de", "que", "por", "favor", "mi", "para", "con", "una", "es")
_SYSTEM = "You are the support assistant of an online shop."
_REFUSAL = "I'm sorry, but I can't help with that request."


@dataclass(frozen=True)
class TrafficProfile:
    """What one period of traffic looks like. ``topics``: topic -> share (normalised)."""

    topics: dict[str, float] = field(
        default_factory=lambda: {"billing": 0.4, "shipping": 0.3, "account": 0.2, "product": 0.1}
    )
    mean_words: float = 8.0
    spanish: float = 0.1
    error_rate: float = 0.02
    refusal_rate: float = 0.05
    response_words: float = 30.0
    latency_ms: float = 400.0
    rag: RagProfile | None = None
    """RAG traffic: the retriever's recall and the model's behaviour (``None``: no passages)."""

    def replace(self, **changes: object) -> TrafficProfile:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _prompt(rng: np.random.Generator, topic: str, p: TrafficProfile) -> str:
    filler = _ES if rng.random() < p.spanish else _EN
    n = 3 + int(rng.poisson(max(p.mean_words - 3, 0.5)))
    vocab = TOPICS[topic]
    pick, own, other = (
        rng.random(n) < 0.6,
        rng.integers(len(vocab), size=n),
        rng.integers(len(filler), size=n),
    )
    words = [vocab[o] if k else filler[f] for k, o, f in zip(pick, own, other, strict=True)]
    return " ".join(words).capitalize() + "?"


def _response(
    rng: np.random.Generator, prompt: str, p: TrafficProfile, rag: RagQuestion | None
) -> str:
    if rng.random() < p.refusal_rate:
        return _REFUSAL
    if rag is not None:
        return rag.reply(rng, p.rag or RagProfile())
    words = prompt.rstrip("?").lower().split()
    n = 1 + int(rng.poisson(p.response_words))
    return "Sure: " + " ".join(words[i] for i in rng.integers(len(words), size=n)) + "."


def _call(
    rng: np.random.Generator,
    pair_id: str,
    ts: datetime,
    role: str,
    served: bool,
    prompt: str,
    p: TrafficProfile,
    mode: str,
    rag: RagQuestion | None = None,
) -> TrafficRecord:
    failed = rng.random() < p.error_rate
    response = None if failed else _response(rng, prompt, p, rag)
    request = (
        rag.request()
        if rag is not None
        else {
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": prompt},
            ],
            "max_tokens": 128,
        }
    )
    return TrafficRecord(
        pair_id=pair_id,
        role=role,
        served=served,
        mode=mode,
        endpoint="/v1/chat/completions",
        upstream=f"http://{role}.invalid/v1",
        request=request,
        ts=ts,
        model=f"{role}-model",
        response=response,
        status=500 if failed else 200,
        error="upstream 500" if failed else None,
        latency_ms=float(rng.lognormal(np.log(p.latency_ms), 0.4)),
        input_tokens=None if failed else len(prompt.split()) + 8,
        output_tokens=None if failed else len((response or "").split()),
        finish_reason=None if failed else "stop",
    )


def synthetic_traffic(
    n: int,
    *,
    start: datetime,
    end: datetime,
    rng: np.random.Generator,
    profile: TrafficProfile | None = None,
    candidate: TrafficProfile | None = None,
    mode: str = "shadow",
    prefix: str = "",
) -> list[TrafficRecord]:
    """``n`` requests at uniform random times in ``[start, end)``, in shadow mode (the
    baseline serves every request, the candidate answers a copy), each with its baseline and
    candidate calls. ``candidate`` gives the candidate its own profile (default: the same)."""
    p = profile or TrafficProfile()
    c = candidate or p
    names = list(p.topics)
    share = np.array([p.topics[t] for t in names], dtype=np.float64)
    span = (end - start).total_seconds()
    times = sorted(float(t) for t in rng.uniform(0.0, span, n))
    out: list[TrafficRecord] = []
    for i, t in enumerate(times):
        ts = start + timedelta(seconds=t)
        pair_id = f"{prefix}{i:06d}-{int(rng.integers(1 << 40)):010x}"
        rag = None if p.rag is None else rag_question(rng, p.rag)
        if rag is None:
            prompt = _prompt(rng, str(rng.choice(names, p=share / share.sum())), p)
        else:
            prompt = rag.request()["messages"][-1]["content"]
        out.append(_call(rng, pair_id, ts, "baseline", True, prompt, p, mode, rag))
        out.append(_call(rng, pair_id, ts, "candidate", False, prompt, c, mode, rag))
    return out
