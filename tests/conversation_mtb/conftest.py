"""Fake judges for MT-Bench-101 and self-contradiction, registered as model providers
``mtbjudge:NAME`` and ``contrajudge:NAME``; they read the judge prompt's nonce blocks the way a
model would."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from calipers.models import FakeModel, ModelOptions, ModelProvider, register_provider
from calipers.scorers import planted_conversations
from calipers.types import ModelRequest
from tests._data import DATA

MTB_FILE = "mt_bench_101/data/subjective/mtbench101.jsonl"
RAW = DATA / MTB_FILE
BLOCK = r"<<<([A-Z0-9 ]+) {nonce}>>>\n(.*?)\n<<<END \1 {nonce}>>>"


def blocks(req: ModelRequest) -> dict[str, str]:
    """{block name: content} of a judge request (first attempt)."""
    assert req.messages is not None
    system, user = req.messages[0].content, req.messages[1].content
    m = re.search(r"<<<NAME ([0-9a-f]+)>>>", system)
    assert m, "the system prompt names the marker form with its nonce"
    rx = re.compile(BLOCK.format(nonce=m.group(1)), re.S)
    return {b.group(1): b.group(2) for b in rx.finditer(user)}


def unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def turn_score(user_turn: str, answer: str) -> int:
    """What the ``hashed`` MT-Bench judge gives a turn: 1-10 from a hash of the turn and reply."""
    return 1 + int(unit(user_turn + "\x00" + answer) * 10)


CALLS: list[ModelRequest] = []


def hashed(req: ModelRequest) -> str:
    CALLS.append(req)
    b = blocks(req)
    score = turn_score(b["CURRENT USER TURN"], b["ANSWER"])
    return json.dumps({"reasoning": "hashed", "score": score})


def mtb_garbage(req: ModelRequest) -> str:
    return "A fine answer, I'd say eight out of ten."


# ---- contradiction judges: truth looked up from the planted set -------------------------
PLANTED_N, PLANTED_SEED = 400, 7
TRUTH = {
    (c.turns[c.pair[0]][1], c.turns[c.pair[1]][1]): c.contradicts
    for c in planted_conversations(PLANTED_N, PLANTED_SEED)
}
for _c in planted_conversations(40, 0):  # the CLI's default seed, a small set
    TRUTH[(_c.turns[_c.pair[0]][1], _c.turns[_c.pair[1]][1])] = _c.contradicts


def _says(v: bool) -> str:
    return json.dumps({"reasoning": "compared", "contradiction": v})


def honest(req: ModelRequest) -> str:
    b = blocks(req)
    return _says(TRUTH[(b["ANSWER 1"], b["ANSWER 2"])])


def acc80(req: ModelRequest) -> str:
    """Right on a hash-chosen 80% of pairs, wrong on the rest, whatever the truth."""
    b = blocks(req)
    truth = TRUTH[(b["ANSWER 1"], b["ANSWER 2"])]
    right = unit(b["ANSWER 1"] + "|" + b["ANSWER 2"]) < 0.8
    return _says(truth if right else not truth)


def contra_garbage(req: ModelRequest) -> str:
    return "They seem fine to me."


JUDGES: dict[str, Callable[[ModelRequest], str]] = {
    "hashed": hashed,
    "garbage": mtb_garbage,
}
CONTRA: dict[str, Callable[[ModelRequest], str]] = {
    "honest": honest,
    "acc80": acc80,
    "garbage": contra_garbage,
}


def _mtb(rest: str, options: ModelOptions) -> ModelProvider:
    return FakeModel(JUDGES[rest], name=f"mtbjudge-{rest}")


def _contra(rest: str, options: ModelOptions) -> ModelProvider:
    return FakeModel(CONTRA[rest], name=f"contrajudge-{rest}")


register_provider("mtbjudge", _mtb, usage="mtbjudge:NAME", description="test judges")
register_provider("contrajudge", _contra, usage="contrajudge:NAME", description="test judges")
