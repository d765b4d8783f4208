"""A built suite as a task: ``calipers run -t suite:NAME`` (latest version) or
``suite:NAME@v2``.

The prompt is the conversation itself (every logged turn, multi-turn kept, as chat messages;
as ``User:`` / ``Assistant:`` lines without a chat template). The category of an item is its
cluster's name, so reports break scores down by intent. Items with a reference are scored by
``reference_match`` (SQuAD-normalised equality with the reference); an item without one
scores NaN, which is excluded from every aggregate, never counted as wrong. A suite with no
reference at all has no scorer: the run stores every response (for review or annotation) and
reports no score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from calipers.errors import ConfigError
from calipers.scorers import Scorer, build_scorer, scorer
from calipers.suites._suite import Manifest, SuiteItem, load_suite
from calipers.tasks import LoadContext, PromptTemplate, Task, register_resolver
from calipers.types import ChatMessage, Sample, SampleOutput, Score

__all__ = [
    "PREFIX",
    "ConversationPrompt",
    "parse_suite_ref",
    "reference_match",
    "register",
    "suite_task",
]

PREFIX = "suite:"
_REF = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]*?)(?:@v?(?P<v>\d+))?$")
ScoreFn = Callable[[Sample, SampleOutput], Awaitable[Score]]
_SPEAKER = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


class ConversationPrompt(PromptTemplate):
    """The logged conversation as the prompt. ``turns`` in the methodology card says so."""

    turns: Literal["conversation"] = "conversation"

    def chat(
        self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None
    ) -> tuple[ChatMessage, ...]:
        msgs: list[ChatMessage] = []
        if system_prompt:
            msgs.append(ChatMessage(role="system", content=system_prompt))
        for t in sample.fields.get("turns") or [{"role": "user", "content": sample.input}]:
            if t["role"] == "tool":  # chat templates take no bare tool turns
                msgs.append(ChatMessage(role="user", content=f"Tool result:\n{t['content']}"))
            else:
                msgs.append(ChatMessage(role=t["role"], content=t["content"]))
        return tuple(msgs)

    def plain(self, sample: Sample, shots: Sequence[Sample], system_prompt: str | None) -> str:
        lines = [f"System: {system_prompt}"] if system_prompt else []
        for t in sample.fields.get("turns") or [{"role": "user", "content": sample.input}]:
            lines.append(f"{_SPEAKER[t['role']]}: {t['content']}")
        return "\n\n".join([*lines, "Assistant:"])


@scorer("reference_match", metrics=("match",))
def reference_match() -> ScoreFn:
    """SQuAD-normalised output equals the reference; NaN (unscored) where there is none."""
    inner = build_scorer("normalized_match")

    async def score(sample: Sample, output: SampleOutput) -> Score:
        if sample.target is None:
            return Score(
                values={"match": math.nan},
                answer=output.text.strip(),
                explanation="no reference yet",
            )
        return await inner(sample, output)

    return score


def parse_suite_ref(spec: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME@v3`` or ``NAME@3`` (with or without the ``suite:`` prefix)."""
    body = spec.removeprefix(PREFIX)
    m = _REF.match(body)
    if not m:
        raise ConfigError(
            f"Bad suite reference {spec!r}.", hint="Write suite:NAME or suite:NAME@v2."
        )
    return m["name"], int(m["v"]) if m["v"] else None


def _sample(item: SuiteItem) -> Sample:
    return Sample(
        id=item.id,
        input=item.query,
        target=item.reference,
        category=item.cluster.name,
        fields={"turns": [t.model_dump() for t in item.turns]},
        metadata={
            "cluster_id": item.cluster.id,
            "source": item.source.model_dump(),
            "duplicates": item.duplicates,
            "reference_source": item.reference_source,
        },
    )


def _describe(m: Manifest, n_ref: int) -> str:
    parts = [
        f"Suite {m.name} v{m.version} ({m.n_items} items from production logs, "
        f"{len(m.clusters)} clusters, content {m.content_hash[:12]})."
    ]
    if n_ref == 0:
        parts.append(
            "No references yet: responses are stored, scores cannot be computed "
            "until references are added."
        )
    elif n_ref < m.n_items:
        parts.append(
            f"{n_ref} of {m.n_items} items have a reference; the others score NaN "
            "(excluded, not wrong)."
        )
    if m.size.too_small:
        parts.append("Flagged: " + "; ".join(m.size.notes) + ".")
    return " ".join(parts)


def suite_task(spec: str) -> Task:
    """The task for ``suite:NAME[@vN]``."""
    name, version = parse_suite_ref(spec)
    manifest, items = load_suite(name, version)
    samples = [_sample(i) for i in items]
    n_ref = sum(s.target is not None for s in samples)
    scorers: tuple[Scorer, ...] = (reference_match(),) if n_ref else ()

    def load(ctx: LoadContext) -> list[Sample]:
        return samples

    return Task(
        name=f"{PREFIX}{name}",
        version=f"v{manifest.version}",
        description=_describe(manifest, n_ref),
        kind="generate",
        load=load,
        scorers=scorers,
        prompt=ConversationPrompt(),
        source=f"suite {name} v{manifest.version}",
        license="private (production logs)",
        tags=("suite", "production"),
    )


def _resolve(spec: str, formulation: str | None) -> list[Task]:
    if formulation is not None:
        raise ConfigError("--formulation applies to built-in tasks, not suites from logs.")
    return [suite_task(spec)]


def register() -> None:
    """``suite:NAME[@vN]`` resolves through this package (entry point ``suite`` of group
    ``calipers.tasks``), so tasks, a lower layer, never import suites."""
    register_resolver(PREFIX.rstrip(":"), _resolve)
