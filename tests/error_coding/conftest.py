"""A scripted judge for open coding: it reads the ANSWER block of the note prompt and answers
with the note planted for that answer (``NOTES``), or fails on purpose."""

from __future__ import annotations

import json
import re

from calipers.errors import ModelCallError
from calipers.models import FakeModel, ModelOptions, ModelProvider, register_provider
from calipers.store import SampleRecord
from calipers.types import ModelRequest

NOTES: dict[str, str] = {}  # response text -> the note the judge writes about it
NAMES: dict[str, str] = {}  # a category's first term -> the name the judge gives it
CALLS: list[ModelRequest] = []
_ANSWER = re.compile(r"<<<ANSWER (\w+)>>>\n(.*)\n<<<END ANSWER \1>>>", re.S)
_TERMS = re.compile(r"Distinctive words of the category: ([^,.]+)")


def respond(req: ModelRequest) -> str:
    CALLS.append(req)
    assert req.messages is not None
    user = req.messages[1].content
    if (m := _TERMS.search(user)) is not None:  # a naming request
        name = NAMES.get(m.group(1), "Not A Name!")
        return json.dumps({"name": name, "description": f"failures about {m.group(1)}"})
    m = _ANSWER.search(user)
    assert m is not None, user
    note = NOTES[m.group(2)]
    if note == "<raise>":
        raise ModelCallError("judge down")
    if note == "<garbage>":
        return "I think the answer is wrong."  # no JSON, also after the reminder
    return json.dumps({"note": note})


def _factory(rest: str, options: ModelOptions) -> ModelProvider:
    return FakeModel(respond, name=f"coder-{rest}")


register_provider("codingtest", _factory, usage="codingtest:NAME", description="test coder")


def failing_samples(
    notes: list[str], *, run_id: str = "run1", task: str = "t"
) -> list[SampleRecord]:
    """One failing sample per note; the judge will write that note about it."""
    out = []
    for i, note in enumerate(notes):
        response = f"answer number {i}"
        NOTES[response] = note
        out.append(
            SampleRecord(
                run_id=run_id,
                task=task,
                sample_id=f"s{i:03d}",
                position=i,
                prompt={"messages": [{"role": "user", "content": f"question {i}"}]},
                response=response,
                target=f"reference {i}",
                scores={"acc": 0.0},
            )
        )
    return out
