"""Planning a RAG stress test: the clean arm, then one arm per degradation on the grid.

Each arm is an ordinary stored run of the same task with ``RunConfig.rag`` set (resumable,
cached, comparable by hand), tagged with the study's id; the clean arm is the task as it is,
so it pairs with every arm item by item. An arm that cannot apply (a context fill on a model
whose tokenizer calipers cannot use, an embedding retriever without sentence-transformers) is
skipped with the reason instead of failing the whole study.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from calipers._util.ids import new_run_id
from calipers.analysis._study import RAG_PREFIX, StudyPlan
from calipers.errors import CalipersError, ConfigError
from calipers.models import ModelProvider, resolve_model
from calipers.runner import RunConfig, make_plan
from calipers.tasks.rag import RagArm, is_rag_task

__all__ = [
    "DEFAULT_FACTORS",
    "FACTORS",
    "FILL_LEVELS",
    "NOISE_LEVELS",
    "StressGrid",
    "plan_rag_stress",
    "rag_arms",
]

FACTORS = ("noise", "gold", "position", "order", "k", "retriever", "fill")
DEFAULT_FACTORS = FACTORS
NOISE_LEVELS = (0.2, 0.4, 0.6, 0.8)
FILL_LEVELS = (0.1, 0.25, 0.5, 0.6, 0.75, 0.9)
K_LEVELS = (1, 3, 5, 10)


class StressGrid:
    """The levels of each factor (the issue's defaults unless the user narrows them)."""

    def __init__(
        self,
        *,
        noise: Sequence[float] = NOISE_LEVELS,
        distractors: Sequence[str] = ("random", "hard", "counterfactual"),
        fill: Sequence[float] = FILL_LEVELS,
        k: int = 5,
        k_levels: Sequence[int] = K_LEVELS,
        retriever: str = "bm25",
        seed: int = 0,
    ) -> None:
        self.noise, self.distractors, self.fill = tuple(noise), tuple(distractors), tuple(fill)
        self.k, self.k_levels, self.retriever, self.seed = k, tuple(k_levels), retriever, seed


_LEVEL_HINT = {  # by the field that failed
    "noise": "Noise ratios lie in [0, 1): --noise 0.2,0.4,0.6,0.8",
    "fill": "Fill levels lie in (0, 1): --fill 0.1,0.25,0.5,0.6,0.75,0.9",
    "k": "Passage counts are at least 1: --k 5 --k-levels 1,3,5,10",
    "distractor": "Distractor types: --distractors random,hard,counterfactual",
    "retriever": "Retrievers: --retriever bm25 or embedding",
}


def _arm(factor: str, **fields: Any) -> RagArm:
    """One arm; a level out of range is the user's error, named with its option."""
    try:
        return RagArm(**fields)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc']))}={err['input']!r}: {err['msg']}" for err in e.errors()
        )
        raise ConfigError(
            f"The {factor} factor cannot use {problems}.",
            hint=_LEVEL_HINT.get(str(e.errors()[0]["loc"][0]), f"Check the {factor} levels."),
        ) from None


def rag_arms(factors: Sequence[str], grid: StressGrid) -> list[RagArm]:
    """The arms of the chosen factors, in report order (the clean arm is not among them)."""
    unknown = [f for f in factors if f not in FACTORS]
    if unknown:
        raise ConfigError(
            f"Unknown stress factor(s): {', '.join(unknown)}.",
            hint=f"Use some of: {', '.join(FACTORS)}.",
        )
    k, s = grid.k, grid.seed
    arms: list[RagArm] = []
    for factor in factors:
        if factor == "noise":
            arms += [
                _arm("noise", noise=r, distractor=d, k=k, seed=s)
                for d in grid.distractors
                for r in grid.noise
            ]
        elif factor == "gold":
            arms.append(_arm("gold", gold="drop", k=k, seed=s))
        elif factor == "position":
            arms += [_arm("position", position=p, k=k, seed=s) for p in ("first", "middle", "last")]
        elif factor == "order":
            top = max(grid.noise, default=0.8)
            arms += [
                _arm("order", order=o, noise=top, distractor="hard", k=k, seed=s)
                for o in ("relevance", "reverse", "shuffled")
            ]
        elif factor == "k":
            arms += [_arm("k", retriever=grid.retriever, k=n, seed=s) for n in grid.k_levels]
        elif factor == "retriever":
            r = grid.retriever
            arms += [
                _arm("retriever", retriever=r, k=k, index_gold=False, seed=s),
                _arm("retriever", retriever=r, k=k, query_noise="typos", seed=s),
            ]
        elif factor == "fill":
            arms += [_arm("fill", fill=f, seed=s) for f in grid.fill]
    return arms


def plan_rag_stress(
    base: RunConfig,
    factors: Sequence[str] = DEFAULT_FACTORS,
    grid: StressGrid | None = None,
    *,
    provider: ModelProvider | None = None,
    study: str | None = None,
) -> StudyPlan:
    """The clean arm's config and every arm to run; arms that cannot apply are listed in
    ``skipped`` with the reason. Each arm is planned once here (its items loaded and degraded,
    context fill sized with the model's tokenizer), so a bad grid fails before any model call."""
    if len(base.tasks) != 1:
        raise ConfigError(
            "A RAG stress test takes exactly one task.",
            hint="calipers rag stress -t TASK; run one stress test per task.",
        )
    grid = grid or StressGrid(seed=base.seed)
    study = study or f"{RAG_PREFIX}{new_run_id()}"
    clean = base.model_copy(update={"study": study, "rag": None})
    provider = provider or resolve_model(base.model, base.model_options)
    task = make_plan(clean, provider).tasks[0].task
    if not is_rag_task(task):
        raise ConfigError(
            f"{task.name} is not a RAG task: its items carry no passages to degrade.",
            hint="Use a RAG task: nq_open_oracle, kv_retrieval, dyn_rag or a RAG file.",
        )
    todo: list[tuple[str, RunConfig]] = []
    skipped: list[tuple[str, str]] = []
    for arm in rag_arms(factors, grid):
        config = clean.model_copy(update={"rag": arm})
        try:
            make_plan(config, provider)
        except CalipersError as e:
            skipped.append((arm.describe(), e.message))
            continue
        todo.append((arm.describe(), config))
    return StudyPlan(study, clean, tuple(todo), tuple(skipped))
