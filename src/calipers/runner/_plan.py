"""Plan: resolve the model and tasks, derive the run's seeds (once: ``RunSeeds``), load items,
draw few-shot examples, build every request.

Planning does no model calls (the provider loads its weights lazily), so a plan is cheap and
its methodology card is known before the first sample runs.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, overload

from calipers._util.hashing import json_hash
from calipers.datasets import data_source
from calipers.errors import ConfigError
from calipers.models import ModelProvider, resolve_model
from calipers.runner._config import RunConfig
from calipers.runner._fallback import fit_to_provider
from calipers.runner._methodology import Methodology, TaskMethodology, chat_hash, prompt_hash
from calipers.runner._seeds import RunSeeds
from calipers.scorers import ScorerSpec, build_scorer
from calipers.tasks import LoadContext, Task, apply_variant, data_hash, resolve_task
from calipers.tasks.rag import PromptBudget, apply_rag_arm, is_rag_task
from calipers.types import (
    ChatMessage,
    Environment,
    EpisodeLimits,
    GenerateParams,
    LoglikelihoodRequest,
    ModelRequest,
    Sample,
)

__all__ = ["Plan", "PlannedSample", "PlannedSamples", "PlannedTask", "make_plan"]


@dataclass(frozen=True)
class PlannedSample:
    task: str
    position: int
    sample: Sample
    request: ModelRequest | LoglikelihoodRequest
    prompt_text: str | None  # for log-likelihood: the full rendered context
    epoch: int = 0  # the n-th generation for this item (``--epochs``), seeded apart
    seed: int | None = None  # the run's items stream (``RunSeeds.items``), stored on its row
    # an episode task's item: a fresh environment for each episode (``request`` holds its
    # opening messages and tools, as stored on the sample's row)
    environment: Callable[[], Environment] | None = None
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)


class PlannedSamples(Sequence[PlannedSample]):
    """A large task's planned samples, built as they are iterated (the dataset is read
    again each time) instead of held: a million planned requests would not fit in memory.
    ``len`` is known from planning; indexing builds up to the index."""

    def __init__(self, build: Callable[[], Iterator[PlannedSample]], n: int) -> None:
        self._build = build
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[PlannedSample]:
        return self._build()

    @overload
    def __getitem__(self, i: int) -> PlannedSample: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[PlannedSample]: ...
    def __getitem__(self, i: int | slice) -> PlannedSample | Sequence[PlannedSample]:
        if isinstance(i, slice):
            return tuple(self)[i]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return next(islice(self._build(), i % self._n, None))


STREAM_ABOVE = 10_000
"""Items: a task with more is planned lazily (:class:`PlannedSamples`); smaller ones are
planned up front as before."""


@dataclass(frozen=True)
class PlannedTask:
    task: Task
    samples: Sequence[PlannedSample]  # a tuple, or PlannedSamples for a large task
    methodology: TaskMethodology


@dataclass(frozen=True)
class Plan:
    config: RunConfig
    provider: ModelProvider
    tasks: tuple[PlannedTask, ...]
    methodology: Methodology

    @property
    def total(self) -> int:
        return sum(len(t.samples) for t in self.tasks)


def _data_dir(config: RunConfig) -> Path | None:
    d = config.data_dir or os.environ.get("CALIPERS_DATA")
    return Path(d) if d else None


def _decoding(task: Task, config: RunConfig) -> GenerateParams:
    upd: dict[str, object] = {}
    if config.max_tokens is not None:
        upd["max_tokens"] = config.max_tokens
    if config.temperature is not None:
        upd["temperature"] = config.temperature
    base = task.chat_params if (config.chat_template and task.chat_params) else task.params
    return base.model_copy(update=upd) if upd else base


def _draw_shots(
    pool: list[Sample], sample: Sample, k: int, seed: int, sampling: str, match: str | None
) -> list[Sample]:
    """``per_item``: a draw seeded by (seed, item id). ``fixed``: the pool in one seeded
    order, the first k that are not the item itself, so almost every item gets the same shots
    (and shares its prompt prefix)."""
    if k == 0:
        return []
    candidates = [s for s in pool if s.id != sample.id and s.input != sample.input]
    if match == "category":  # e.g. MMLU: shots from the item's own subject
        candidates = [s for s in candidates if s.category == sample.category]
    if len(candidates) < k:
        raise _too_few_shots(pool, sample, k, len(candidates), match)
    if sampling == "fixed":
        order = sorted(candidates, key=lambda s: json_hash([seed, "fixed", s.id]))
        return order[:k]
    rng = random.Random(json_hash([seed, sample.id]))
    return rng.sample(candidates, k)


def _examples(n: int) -> str:
    return f"{n} example" if n == 1 else f"{n} examples"


def _too_few_shots(
    pool: list[Sample], sample: Sample, k: int, usable: int, match: str | None
) -> ConfigError:
    """The shortage as the user counts it: the pool's size first, then what is left out."""
    hint = f"Use --few-shot {usable} or fewer, or give a larger few-shot pool."
    if len(pool) < k:
        return ConfigError(
            f"Few-shot k={k} but the pool has only {_examples(len(pool))}.", hint=hint
        )
    same = sum(1 for s in pool if s.id == sample.id or s.input == sample.input)
    why = []
    if same:
        why.append(f"{same} {'is' if same == 1 else 'are'} the item itself (same id or input)")
    if match == "category":
        why.append(
            f"only {usable} of the rest {'is' if usable == 1 else 'are'} in its "
            f"category {sample.category!r}"
        )
    return ConfigError(
        f"Few-shot k={k} but item {sample.id!r} can use only {_examples(usable)} of the pool's "
        f"{len(pool)}: {' and '.join(why)}.",
        hint=hint,
    )


def _epochs(ps: PlannedSample, epochs: int) -> list[PlannedSample]:
    """``epochs`` generations of one item; each epoch's sampling seed differs, so the
    response cache keeps them apart and a rerun reproduces each one."""
    if epochs == 1 or not isinstance(ps.request, ModelRequest):
        return [ps]
    base = ps.request.params.seed or 0
    return [
        replace(
            ps,
            epoch=e,
            request=ps.request.model_copy(
                update={"params": ps.request.params.model_copy(update={"seed": base + e})}
            ),
        )
        for e in range(epochs)
    ]


def _check_epochs(task: Task, config: RunConfig, params: GenerateParams) -> None:
    if config.epochs == 1:
        return
    if task.kind == "multiple_choice":
        raise ConfigError(
            f"--epochs {config.epochs}: {task.name} is scored by log-likelihood, which is "
            "deterministic; every epoch would be the same.",
            hint="Drop --epochs.",
        )
    if params.temperature == 0:
        raise ConfigError(
            f"--epochs {config.epochs} with greedy decoding (temperature 0) on {task.name} "
            "gives the same answer every time.",
            hint="Sample: --temperature 0.8 (HumanEval pass@k uses 0.8).",
        )


def _items(task: Task, ctx: LoadContext, limit: int | None) -> tuple[Sequence[Sample], int]:
    """The task's items (capped at ``limit``) and how many: a list, or for a large task the
    loader's own sequence, iterated lazily (``islice``) wherever it is read."""
    loaded = task.load(ctx)
    n = len(loaded) if limit is None else min(limit, len(loaded))
    if n <= STREAM_ABOVE:
        return list(islice(loaded, n)), n
    return loaded, n


def _plan_task(
    task: Task,
    config: RunConfig,
    seeds: RunSeeds,
    provider: ModelProvider,
    fallback: str | None = None,
) -> PlannedTask:
    ctx = LoadContext(
        seed=seeds.items, n=config.limit or task.default_n, data_dir=_data_dir(config)
    )
    loaded, n_items = _items(task, ctx, config.limit)
    k = task.default_few_shot if config.few_shot is None else config.few_shot
    shot_seed = task.few_shot_seed if config.few_shot_seed is None else config.few_shot_seed
    pool = list(task.fewshot(ctx)) if (k and task.fewshot) else []
    if k and not task.fewshot:
        raise ConfigError(f"Task {task.name!r} has no few-shot pool; use --few-shot 0.")
    params = _decoding(task, config)
    _check_epochs(task, config, params)
    identity = provider.identity()
    limits = task.limits
    if config.max_steps is not None:  # --max-steps: the user's limit over the task's
        limits = limits.model_copy(update={"max_steps": config.max_steps})

    def one(i: int, s: Sample) -> list[PlannedSample]:
        env: Callable[[], Environment] | None = None
        shots = _draw_shots(pool, s, k, shot_seed, task.few_shot_sampling, task.few_shot_match)
        req: ModelRequest | LoglikelihoodRequest
        text: str | None = None
        if task.kind == "multiple_choice":
            if config.chat_template:
                text = provider.render_chat(task.prompt.chat(s, shots, config.system_prompt))
            else:
                text = task.prompt.plain(s, shots, config.system_prompt)
            req = LoglikelihoodRequest(
                context=text,
                continuations=task.prompt.continuations(s),
                contexts=task.prompt.contexts(s),  # after a chat template's rendered prompt
            )
        elif task.kind == "episode":
            req, env = _episode_request(task, s, params, config)
        elif config.chat_template:
            req = ModelRequest(
                messages=task.prompt.chat(s, shots, config.system_prompt), params=params
            )
        else:
            req = ModelRequest(
                prompt=task.prompt.plain(s, shots, config.system_prompt), params=params
            )
        ps = PlannedSample(
            task.name, i, s, req, text, seed=seeds.items, environment=env, limits=limits
        )
        return _epochs(ps, config.epochs)

    def each(items: Iterable[Sample]) -> Iterator[PlannedSample]:
        for i, s in enumerate(items):
            yield from one(i, s)

    planned: Sequence[PlannedSample]
    if isinstance(loaded, list) or task.kind == "episode":
        samples = list(islice(loaded, n_items))
        planned = tuple(each(samples))
        hashed, source = data_hash(samples), data_source(samples)
    else:  # a large task: one pass for the card (same hash), requests built when run
        if n_items:
            one(0, next(iter(loaded)))  # a misconfiguration fails now, not mid-run
        planned = PlannedSamples(lambda: each(islice(loaded, n_items)), n_items * config.epochs)
        hashed, source = _hash_and_source(islice(loaded, n_items))
    template = task.prompt.card()
    card = TaskMethodology(
        task=task.name,
        version=task.version,
        kind=task.kind,
        source=task.source,
        formulation=task.formulation,
        formulation_fallback=fallback,
        data_hash=hashed,
        n_items=n_items,
        dynamic=task.dynamic,
        limit=config.limit,
        prompt_template=template,
        prompt_hash=prompt_hash(template),
        chat_template=config.chat_template,
        chat_template_hash=chat_hash(config.chat_template, identity),
        system_prompt=config.system_prompt,
        few_shot=k,
        few_shot_seed=shot_seed,
        few_shot_sampling=task.few_shot_sampling,
        few_shot_match=task.few_shot_match,
        decoding=params,
        scorers=[s.spec.model_dump(mode="json") for s in task.scorers],
        variant=config.variant.model_dump(exclude_none=True) if config.variant else None,
        epochs=config.epochs,
        rag_arm=None
        if config.rag is None or config.rag.is_clean
        else config.rag.model_dump(exclude_defaults=True),
        episode=_episode_card(task, planned, provider, limits),
        data_source=source,
    )
    return PlannedTask(task, planned, card)


def _hash_and_source(items: Iterable[Sample]) -> tuple[str, str | None]:
    """:func:`data_hash` and :func:`data_source` of ``items`` in one pass over them."""
    sources: list[Sample] = []  # one item per distinct hub source, in first-seen order
    seen: set[str] = set()

    def feed() -> Iterator[Sample]:
        for s in items:
            uri = data_source([s])
            if uri is not None and uri not in seen:
                seen.add(uri)
                sources.append(s)
            yield s

    return data_hash(feed()), data_source(sources)


def _episode_request(
    task: Task, sample: Sample, params: GenerateParams, config: RunConfig
) -> tuple[ModelRequest, Callable[[], Environment]]:
    """An episode item's opening request (what its row stores as the prompt) and the factory
    of its fresh environment. Episodes are chat: the environment writes the opening messages
    (a run's ``--system-prompt`` goes first when the environment has none of its own)."""
    factory = task.environment
    assert factory is not None
    if not config.chat_template:
        raise ConfigError(
            f"Task {task.name!r} is a conversation or an agent's task: it needs the chat template.",
            hint="Drop --no-chat-template.",
        )
    env = factory(sample)
    opening = tuple(env.opening())
    if config.system_prompt and not (opening and opening[0].role == "system"):
        opening = (ChatMessage(role="system", content=config.system_prompt), *opening)
    req = ModelRequest(messages=opening, params=params, tools=tuple(env.tools) or None)
    return req, lambda: factory(sample)


def _episode_card(
    task: Task, planned: Sequence[PlannedSample], provider: ModelProvider, limits: EpisodeLimits
) -> dict[str, Any] | None:
    if task.kind != "episode":
        return None
    tools = sorted(
        {
            t.name: t
            for p in planned
            if isinstance(p.request, ModelRequest)
            for t in p.request.tools or ()
        }.values(),
        key=lambda t: t.name,
    )
    return {
        "limits": limits.model_dump(mode="json"),
        "tools": [t.name for t in tools],
        "tools_hash": json_hash([t.model_dump(mode="json") for t in tools]),
        **({"tool_format": provider.tool_format()} if tools and provider.tool_format() else {}),
        **task.episode_card,
    }


def _with_rag_judge(task: Task, judge: str | None) -> Task:
    """A RAG task with the claim-faithfulness judge added to its scorers (recorded in the
    methodology card with its judge); other tasks as they are."""
    if judge is None or not is_rag_task(task):
        return task
    if any(s.spec.name == "rag_faithfulness" for s in task.scorers):
        return task  # a task file that already names its judge keeps it
    resolve_model(judge)  # a bad judge spec fails here, not once per item (providers are lazy)
    claims = build_scorer(ScorerSpec(name="rag_faithfulness", args={"judge": judge}))
    return replace(task, scorers=(*task.scorers, claims))


def _budget(task: Task, config: RunConfig, provider: ModelProvider) -> PromptBudget | None:
    """The window and request sizer a context-fill arm needs: tokens of the rendered prompt
    (chat template included, as the model reads it) plus the reserved output."""
    if config.rag is None or config.rag.fill is None:
        return None
    window = provider.context_window()
    if window is None:
        raise ConfigError(
            f"Context fill needs the model's context window; the {provider.provider_name} "
            "provider does not say what it is.",
            hint="Run context fill on a llamacpp model (its window is --n-ctx).",
        )
    reserved = _decoding(task, config).max_tokens

    def count(sample: Sample) -> int:
        if config.chat_template:
            text = provider.render_chat(task.prompt.chat(sample, [], config.system_prompt))
        else:
            text = task.prompt.plain(sample, [], config.system_prompt)
        return provider.count_tokens(text) + reserved

    key = json_hash(
        [
            provider.identity().model_dump(mode="json"),
            config.chat_template,
            config.system_prompt,
            reserved,
            window,
            task.name,
            task.version,
        ]
    )
    return PromptBudget(window, count, provider.count_tokens, key)


def make_plan(config: RunConfig, provider: ModelProvider | None = None) -> Plan:
    """Resolve everything a run needs. ``provider`` overrides ``config.model`` (tests pass a
    FakeModel instance; the spec string is still recorded)."""
    provider = provider or resolve_model(config.model, config.model_options)
    tasks: list[Task] = []
    fallbacks: dict[str, str] = {}  # task -> why its generation formulation runs
    for name in config.tasks:
        for resolved in resolve_task(name, config.formulation):
            task, why = fit_to_provider(resolved, config, provider)
            task = apply_rag_arm(task, config.rag, _budget(task, config, provider))
            task = _with_rag_judge(task, config.rag_judge)
            tasks.append(apply_variant(task, config.variant))
            if why:
                fallbacks[task.name] = why
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ConfigError(f"A task is listed twice: {', '.join(names)}.")
    seeds = RunSeeds.derive(config.seed)  # the one place the user's seed becomes streams
    planned = tuple(_plan_task(t, config, seeds, provider, fallbacks.get(t.name)) for t in tasks)
    card = Methodology.create(
        provider.identity(),
        config.model,
        {p.task.name: p.methodology for p in planned},
        seeds,
        config.confidence,
        model_runtime=provider.runtime(),
    )
    return Plan(config, provider, planned, card)
