"""Seeding shared by the dynamic generators.

Item ``i`` of seed ``s`` is drawn from its own generator, ``random.Random("calipers/<task>/
<split>/<s>/<i>")`` (string seeds are hashed with SHA-512, so this is stable across Python
processes and versions). Hence the same seed gives the same items, ``n=10`` gives the first ten
items of ``n=50``, and the few-shot split draws from different streams than the evaluation
split. In a run, ``s`` (``LoadContext.seed``) is the run's items stream, passed down by the
planner (``RunSeeds.items``, the user's ``--seed``); nothing here reads a run's config.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from calipers.errors import ConfigError
from calipers.tasks._task import LoadContext
from calipers.types import Sample

__all__ = ["FEWSHOT_POOL", "ItemMaker", "fewshot_loader", "generate", "item_rng", "loader"]

ItemMaker = Callable[[random.Random, str], Sample]
"""Makes one sample from its own random generator and its id."""

FEWSHOT_POOL = 10
"""How many few-shot examples a dynamic task offers per seed."""


def item_rng(task: str, split: str, seed: int, index: int) -> random.Random:
    return random.Random(f"calipers/{task}/{split}/{seed}/{index}")


def generate(task: str, make: ItemMaker, seed: int, n: int) -> list[Sample]:
    """The first ``n`` evaluation items of ``task`` for ``seed``; ids are ``"<seed>-<i>"``."""
    if n < 0:
        raise ConfigError(f"Cannot generate {n} items for {task!r}; n must be >= 0.")
    return [make(item_rng(task, "eval", seed, i), f"{seed}-{i}") for i in range(n)]


def loader(task: str, make: ItemMaker, default_n: int) -> Callable[[LoadContext], list[Sample]]:
    """A ``Task.load``: ``ctx.n`` items (the task default when None) for ``ctx.seed``."""

    def load(ctx: LoadContext) -> list[Sample]:
        return generate(task, make, ctx.seed, default_n if ctx.n is None else ctx.n)

    return load


def fewshot_loader(
    task: str, make: ItemMaker, default_n: int, pool: int = FEWSHOT_POOL
) -> Callable[[LoadContext], list[Sample]]:
    """A ``Task.fewshot``: ``pool`` items from the few-shot streams of ``ctx.seed`` (ids
    ``"<seed>-fs<j>"``), skipping any whose question equals one of the evaluation items
    (the first ``max(ctx.n, default_n)``) or an earlier example, so a few-shot example is
    never an item. A generator with too few distinct questions yields a smaller pool."""

    def load(ctx: LoadContext) -> list[Sample]:
        bound = max(default_n, ctx.n or 0)
        taken: set[str] = {s.input for s in generate(task, make, ctx.seed, bound)}
        out: list[Sample] = []
        j = 0
        while len(out) < pool and j < 100 * pool:
            s = make(item_rng(task, "fewshot", ctx.seed, j), f"{ctx.seed}-fs{j}")
            j += 1
            if s.input not in taken:
                taken.add(s.input)
                out.append(s)
        return out

    return load
