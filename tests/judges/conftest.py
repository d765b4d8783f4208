"""Fake judges: deterministic responders that read the judge prompt the way a model would,
registered as model provider ``judgetest:NAME`` so scorer specs can name them."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.models import FakeModel, ModelOptions, ModelProvider, register_provider
from calipers.runner import RunConfig, arun
from calipers.scorers import Scorer
from calipers.store import SampleRecord, Store
from calipers.types import (
    ModelRequest,
    ModelResponse,
    RunSummary,
    Sample,
    SampleOutput,
    Score,
)

BLOCK = r"<<<([A-Z0-9 ]+) {nonce}>>>\n(.*?)\n<<<END \1 {nonce}>>>"


def parse_prompt(req: ModelRequest) -> tuple[str, dict[str, str], str]:
    """(nonce, {block name: content}, the user message with the blocks cut out)."""
    assert req.messages is not None
    system, user = req.messages[0].content, req.messages[1].content
    m = re.search(r"<<<NAME ([0-9a-f]+)>>>", system)
    assert m, "the system prompt names the marker form with its nonce"
    rx = re.compile(BLOCK.format(nonce=m.group(1)), re.S)
    return m.group(1), {b.group(1): b.group(2) for b in rx.finditer(user)}, rx.sub("", user)


def _verdict(score: Any, why: str = "checked against the reference") -> str:
    return json.dumps({"reasoning": why, "score": score})


def _is_pass_fail(req: ModelRequest) -> bool:
    assert req.messages is not None
    return '"pass" | "fail"' in req.messages[0].content


def grader(req: ModelRequest) -> str:
    """Scale: 5 when the reference is in the answer, else 1 (pass/fail: pass, fail)."""
    _n, blocks, _out = parse_prompt(req)
    if "REFERENCE ANSWER" not in blocks:
        return _verdict(3, "no reference to check against")
    ok = blocks["REFERENCE ANSWER"].casefold() in blocks["ANSWER"].casefold()
    if _is_pass_fail(req):
        return _verdict("pass" if ok else "fail")
    return _verdict(5 if ok else 1)


def gullible(req: ModelRequest) -> str:
    """Obeys 'output score N' found in the instructions (outside the data blocks)."""
    _n, _b, outside = parse_prompt(req)
    m = re.search(r"output score (\d)", outside)
    return _verdict(int(m.group(1)), "as instructed") if m else grader(req)


def prose(req: ModelRequest) -> str:
    return "Let me think.\n```json\n" + grader(req) + "\n```\nThat is my verdict {not json}."


def retry(req: ModelRequest) -> str:
    assert req.messages is not None
    return grader(req) if len(req.messages) > 2 else "The answer looks fine, I'd say 4/5."


def garbage(req: ModelRequest) -> str:
    return "I refuse to use JSON."


def out_of_range(req: ModelRequest) -> str:
    return _verdict(9)


def _winner(w: str) -> str:
    return json.dumps({"reasoning": f"answer {w} is better", "winner": w})


def first(req: ModelRequest) -> str:
    """Always prefers whatever is shown first: pure position bias."""
    return _winner("1")


def fair(req: ModelRequest) -> str:
    """Prefers the answer containing GOOD; a tie when both or neither do."""
    _n, b, _o = parse_prompt(req)
    g1, g2 = "GOOD" in b["ANSWER 1"], "GOOD" in b["ANSWER 2"]
    return _winner("1" if g1 and not g2 else "2" if g2 and not g1 else "tie")


def longer(req: ModelRequest) -> str:
    _n, b, _o = parse_prompt(req)
    a1, a2 = len(b["ANSWER 1"]), len(b["ANSWER 2"])
    return _winner("1" if a1 > a2 else "2" if a2 > a1 else "tie")


def refusal_judge(req: ModelRequest) -> str:
    _n, b, _o = parse_prompt(req)
    return _verdict("pass" if "no way" in b["ANSWER"].lower() else "fail")


JUDGES: dict[str, Callable[[ModelRequest], str]] = {
    f.__name__: f
    for f in (
        grader,
        gullible,
        prose,
        retry,
        garbage,
        out_of_range,
        first,
        fair,
        longer,
        refusal_judge,
    )
}
CALLS: list[ModelRequest] = []
CREATED: list[str] = []  # judge providers created, by name


def _recording(fn: Callable[[ModelRequest], str]) -> Callable[[ModelRequest], str]:
    def respond(req: ModelRequest) -> str:
        CALLS.append(req)
        return fn(req)

    return respond


def _factory(rest: str, options: ModelOptions) -> ModelProvider:
    CREATED.append(rest)
    return FakeModel(_recording(JUDGES[rest]), name=f"judge-{rest}")


register_provider("judgetest", _factory, usage="judgetest:NAME", description="test judges")


def on_text(scorer: Scorer, sample: Sample, text: str, **response: Any) -> Score:
    out = SampleOutput(response=ModelResponse(text=text, **response))
    return asyncio.run(scorer(sample, out))


def write_task(
    tmp: Path,
    name: str,
    rows: list[dict[str, Any]],
    scorers: list[Any],
    extra: list[str] | None = None,
) -> Path:
    data = tmp / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = {
        "name": name,
        "data": data.name,
        "fields": {"id": "id", "input": "question", "target": "answer", "extra": extra or []},
        "prompt": {"template": "{input}"},
        "scorers": scorers,
    }
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")  # JSON is YAML
    return path


def run_task(
    task: Path, answers: Callable[[str], str], **config: Any
) -> tuple[str, list[SampleRecord], RunSummary]:
    """Run ``task`` with a fake model answering ``answers(question)``; (run id, records,
    summary)."""

    def respond(req: ModelRequest) -> str:
        assert req.messages is not None
        return answers(req.messages[-1].content)

    cfg = RunConfig(model="fake:answers", tasks=(str(task),), **config)
    with Store.open() as store:
        result = asyncio.run(arun(cfg, store, provider=FakeModel(respond, name="answers")))
        return result.run_id, store.get_samples(result.run_id), result.summary
