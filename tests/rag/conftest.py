"""Fake claim judges, registered as model provider ``claimjudge:NAME``: they read the judge's
prompt (the nonce-marked blocks) the way a model would and answer in the agreed JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from calipers.models import FakeModel, ModelOptions, ModelProvider, register_provider
from calipers.types import ModelRequest

BLOCK = r"<<<([A-Z ]+) {nonce}>>>\n(.*?)\n<<<END \1 {nonce}>>>"
CALLS: list[ModelRequest] = []
# claims the "erring" judge labels wrongly (the opposite of what the passages say)
WRONG: set[str] = set()


def blocks(req: ModelRequest) -> dict[str, str]:
    assert req.messages is not None
    system, user = req.messages[0].content, req.messages[1].content
    m = re.search(r"<<<NAME ([0-9a-f]+)>>>", system)
    assert m, "the system prompt names the marker form with its nonce"
    rx = re.compile(BLOCK.format(nonce=m.group(1)), re.S)
    return {b.group(1): b.group(2) for b in rx.finditer(user)}


def numbered_claims(text: str) -> list[str]:
    return [re.sub(r"^\d+\. ", "", line) for line in text.splitlines()]


def _extract(answer: str) -> str:
    """Sentences of the answer are its claims; "I don't know" makes none."""
    if "don't know" in answer:
        return json.dumps({"claims": []})
    return json.dumps({"claims": [c.strip() for c in answer.split(".") if c.strip()]})


def _label(passages: str, claim: str) -> bool:
    """Supported when the claim's words are in the passages as written."""
    return claim.casefold() in passages.casefold()


def honest(req: ModelRequest) -> str:
    b = blocks(req)
    if "ANSWER" in b:
        return _extract(b["ANSWER"])
    claims = numbered_claims(b["CLAIMS"])
    return json.dumps(
        {
            "verdicts": [
                {"claim": i + 1, "supported": _label(b["PASSAGES"], c)}
                for i, c in enumerate(claims)
            ]
        }
    )


def erring(req: ModelRequest) -> str:
    """Honest, except on the claims in WRONG (flipped) and on passages saying BROKEN (prose)."""
    b = blocks(req)
    if "ANSWER" in b:
        return _extract(b["ANSWER"])
    if "BROKEN" in b["PASSAGES"]:
        return "These claims look mostly fine to me."
    claims = numbered_claims(b["CLAIMS"])
    verdicts = [
        {"claim": i + 1, "supported": _label(b["PASSAGES"], c) != (c in WRONG)}
        for i, c in enumerate(claims)
    ]
    # in reverse order, with words for labels: still one verdict per claim, by number
    words = [{**v, "supported": "supported" if v["supported"] else "unsupported"} for v in verdicts]
    return "```json\n" + json.dumps({"verdicts": words[::-1]}) + "\n```"


def short_verdicts(req: ModelRequest) -> str:
    """Drops the last claim's verdict every time: never readable."""
    b = blocks(req)
    if "ANSWER" in b:
        return _extract(b["ANSWER"])
    claims = numbered_claims(b["CLAIMS"])
    return json.dumps(
        {"verdicts": [{"claim": i + 1, "supported": True} for i in range(len(claims) - 1)]}
    )


def twice(req: ModelRequest) -> str:
    """Names claim 1 twice."""
    b = blocks(req)
    if "ANSWER" in b:
        return _extract(b["ANSWER"])
    n = len(numbered_claims(b["CLAIMS"]))
    return json.dumps({"verdicts": [{"claim": 1, "supported": True} for _ in range(n)]})


def late(req: ModelRequest) -> str:
    """Prose first, the JSON only after the format reminder."""
    assert req.messages is not None
    return honest(req) if len(req.messages) > 2 else "Claim 1 is supported, I think."


JUDGES: dict[str, Callable[[ModelRequest], str]] = {
    f.__name__: f for f in (honest, erring, short_verdicts, twice, late)
}


def _factory(rest: str, options: ModelOptions) -> ModelProvider:
    fn = JUDGES[rest]

    def respond(req: ModelRequest) -> str:
        CALLS.append(req)
        return fn(req)

    return FakeModel(respond, name=f"claimjudge-{rest}")


register_provider("claimjudge", _factory, usage="claimjudge:NAME", description="test judges")
