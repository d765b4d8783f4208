"""Planning a RAG stress test: the clean arm, then one arm per degradation on the grid.

Each arm is an ordinary stored run of the same task with ``RunConfig.rag`` set (resumable,
cached, comparable by hand), tagged with the study's id; the clean arm is the task as it is,
so it pairs with every arm item by item. An arm that cannot apply (a context fill on a model
whose tokenizer calipers cannot use, an embedding retriever without sentence-transformers) is
skipped with the reason instead of failing the whole study.
"""

from __future__ import annotations

from collections.abc import Sequence

from calipers._util.ids import new_run_id
from calipers.analysis._study import StudyPlan
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
                RagArm(noise=r, distractor=d, k=k, seed=s)
                for d in grid.distractors
                for r in grid.noise
            ]
        elif factor == "gold":
            arms.append(RagArm(gold="drop", k=k, seed=s))
        elif factor == "position":
            arms += [RagArm(position=p, k=k, seed=s) for p in ("first", "middle", "last")]
        elif factor == "order":
            top = max(grid.noise, default=0.8)
            arms += [
                RagArm(order=o, noise=top, distractor="hard", k=k, seed=s)
                for o in ("relevance", "reverse", "shuffled")
            ]
        elif factor == "k":
            arms += [RagArm(retriever=grid.retriever, k=n, seed=s) for n in grid.k_levels]
        elif factor == "retriever":
            r = grid.retriever
            arms += [
                RagArm(retriever=r, k=k, index_gold=False, seed=s),
                RagArm(retriever=r, k=k, query_noise="typos", seed=s),
            ]
        elif factor == "fill":
            arms += [RagArm(fill=f, seed=s) for f in grid.fill]
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
    study = study or f"rag-{new_run_id()}"
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
