"""Context fill through the plan, counted by the fake model (its tokens are whitespace words)."""

from __future__ import annotations

import pytest

from calipers.errors import ConfigError
from calipers.models import FakeModel
from calipers.runner import RunConfig, make_plan
from calipers.scorers import alias_in
from calipers.tasks.rag import PromptBudget, RagArm, passages_of
from calipers.tasks.rag._arms import degrade
from calipers.types import ModelRequest, Sample
from tests.rag._arms_corpus import corpus, corpus_task

__all__ = ["corpus_task"]

WINDOW = 2000


def _plan(task: str, fill: float, **kw: object) -> list[tuple[Sample, str]]:
    config = RunConfig(model="fake:echo", tasks=(task,), limit=8, rag=RagArm(fill=fill), **kw)
    plan = make_plan(config, FakeModel(window=WINDOW))
    out = []
    for ps in plan.tasks[0].samples:
        req = ps.request
        assert isinstance(req, ModelRequest) and req.messages is not None
        out.append((ps.sample, req.messages[-1].content))
    return out


def _request_words(prompt: str, max_tokens: int) -> int:
    """The fake model's count, rebuilt: the chat wrapper's words plus the prompt's plus the
    reserved output (``<|user|>`` and ``<|assistant|>`` are one word each)."""
    return 2 + len(prompt.split()) + max_tokens


@pytest.mark.parametrize("fill", [0.1, 0.25, 0.5, 0.6, 0.75, 0.9])
def test_realised_fill_is_within_two_points_for_every_item(corpus_task: str, fill: float) -> None:
    items = _plan(corpus_task, fill, max_tokens=64)
    for s, prompt in items:
        arm = s.metadata["arm"]
        realised = _request_words(prompt, 64) / WINDOW
        assert realised == pytest.approx(arm["fill"]) and arm["tokens"] == realised * WINDOW
        assert fill - 0.02 <= realised <= fill + 0.02
        assert fill - realised <= 0.001  # aims tighter: within one word (2 words of 2000)
        kinds = [p.kind for p in passages_of(s)]
        assert kinds[-1] == "gold" and set(kinds[:-1]) <= {"filler"}
        assert not any(alias_in(p.text, s.metadata["answers"]) for p in passages_of(s)[:-1])


def test_items_share_the_filler_prefix_and_levels_extend_it(corpus_task: str) -> None:
    low = _plan(corpus_task, 0.25, max_tokens=64)
    high = _plan(corpus_task, 0.75, max_tokens=64)
    whole = [
        [p.id for p in passages_of(s)][: s.metadata["arm"]["filler_passages"] - 1]
        for s, _ in low + high
    ]
    shortest = min(whole, key=len)
    assert len(shortest) >= 5 and all(w[: len(shortest)] == shortest for w in whole)
    prompts = [p for _, p in low]  # the prompts themselves start alike, up to the cut passage
    cut = prompts[0].index(f"[{len(shortest)}]")
    assert len({p[:cut] for p in prompts}) == 1
    own = {f"p{i}" for i in range(8)}  # the run's items: their passages are never filler
    assert not own & {i for w in whole for i in w}


def test_an_item_above_the_target_is_refused_not_truncated() -> None:
    budget = PromptBudget(1000, lambda s: len(str(s.fields["context"]).split()) + 400)
    pool = corpus(20)
    # q0's context: "[1] Fest0" and its 40-word passage = 42 words, + 400 reserved
    with pytest.raises(ConfigError, match=r"'q0' needs 442 tokens .* 300 tokens"):
        degrade(pool[:1], pool, RagArm(fill=0.3), budget)


def test_a_pool_too_small_to_fill_is_an_error() -> None:
    pool = corpus(3)
    budget = PromptBudget(1000, lambda s: len(str(s.fields["context"]).split()))
    with pytest.raises(ConfigError, match="too few passages"):
        degrade(pool[:1], pool, RagArm(fill=0.9), budget)
