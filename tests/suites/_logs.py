"""Synthetic production logs for the suite tests: planted intents, typos, duplicates,
multi-turn chats and secrets, so every count a test checks is known in advance."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

INTENTS: dict[str, list[str]] = {
    "password": [
        "password",
        "reset",
        "login",
        "locked",
        "account",
        "sign",
        "credentials",
        "forgot",
        "username",
        "verification",
        "code",
        "email",
    ],
    "refund": [
        "refund",
        "money",
        "charge",
        "return",
        "charged",
        "twice",
        "credit",
        "reimburse",
        "payment",
        "receipt",
        "damaged",
        "item",
    ],
    "shipping": [
        "package",
        "delivery",
        "tracking",
        "shipped",
        "courier",
        "arrive",
        "late",
        "parcel",
        "address",
        "warehouse",
        "dispatch",
        "lost",
    ],
    "cancel": [
        "cancel",
        "subscription",
        "plan",
        "renewal",
        "membership",
        "premium",
        "billing",
        "monthly",
        "terminate",
        "trial",
        "downgrade",
        "stop",
    ],
}
FILLER = [
    "please",
    "help",
    "I",
    "need",
    "my",
    "the",
    "can",
    "you",
    "with",
    "a",
    "hi",
    "urgent",
    "thanks",
    "how",
    "why",
    "is",
    "what",
    "do",
]

# Secrets planted in logs: none of these strings may appear anywhere in a suite folder.
SECRETS = {
    "EMAIL": "jane.roe@example.org",
    "PHONE": "+44 20 7946 0958",
    "CARD": "4111 1111 1111 1111",
    "API_KEY": "sk-proj-Zx81kLmNoPqRsTuVwXyZ0123456789",
    "TOKEN": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz",
}


def corpus(n_per: int = 25, seed: int = 0) -> tuple[list[str], list[int]]:
    """Queries of 4 clearly different intents: 4 intent words and 4 shared filler words."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i, words in enumerate(INTENTS.values()):
        for _ in range(n_per):
            w = rng.sample(words, 4) + rng.sample(FILLER, 4)
            rng.shuffle(w)
            texts.append(" ".join(w))
            labels.append(i)
    return texts, labels


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """An OTLP JSON export holding ``spans``."""
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "support-bot"}}]
                },
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def span(
    span_id: str,
    trace: str,
    start: int,
    attrs: dict[str, Any],
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span_id,
        "name": "chat",
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10),
        "attributes": [attr(k, v) for k, v in attrs.items()],
        "events": events or [],
    }


def event(name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "timeUnixNano": "1", "attributes": [attr(k, v) for k, v in attrs.items()]}


def production_log(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """48 single-turn queries of 4 intents, 6 exact and 4 near duplicates of some of them,
    5 multi-turn chats, secrets in 5 records; record n's answer was accepted (n % 3 == 0),
    rejected (n % 3 == 2) or has no feedback."""
    texts, _labels = corpus(n_per=12, seed=4)
    rows: list[dict[str, Any]] = [{"question": t} for t in texts]
    rows += [{"question": texts[i].upper() + "?"} for i in (0, 1, 12, 13, 24, 36)]
    rows += [{"question": texts[i] + " today"} for i in (2, 14, 26, 38)]
    for i, intent_first in enumerate((3, 15, 27, 39, 40)):
        rows.append(
            {
                "conversation": [
                    {"role": "user", "content": "hello there"},
                    {"role": "assistant", "content": "Hi, how can I help?"},
                    {"role": "user", "content": texts[intent_first] + f" follow up {i}"},
                ]
            }
        )
    for row, (kind, secret) in zip((6, 17, 29, 43, 46), SECRETS.items(), strict=True):
        rows[row]["question"] += f" ({kind.lower()}: {secret})"
    for n, r in enumerate(rows):
        r["req_id"] = f"req-{n}"
        r["answer"] = f"logged answer {n}"
        if n % 3 != 1:  # accepted, (not logged), rejected, accepted, ...
            r["thumbs_up"] = n % 3 == 0
    return write_jsonl(tmp_path / "prod.jsonl", rows), rows
