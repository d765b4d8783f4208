"""Running a sensitivity study: the reference run, then one run per formulation on the grid.

Each formulation is an ordinary stored run (resumable, cached, comparable by hand), tagged
with the study's id in its config. A formulation that would send exactly the requests of the
reference (no instruction line to drop, no options to relabel) is skipped with that reason
instead of being run and reported as "no change".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from calipers._util.ids import new_run_id
from calipers.analysis._align import StoredRun
from calipers.errors import CalipersError, ConfigError
from calipers.models import ModelProvider, resolve_model
from calipers.runner import Progress, RunConfig, arun, make_plan
from calipers.store import Store
from calipers.tasks import PERTURBATIONS, Variant, formulations

__all__ = [
    "AXES",
    "CONTENT_AXES",
    "DEFAULT_AXES",
    "StudyPlan",
    "list_studies",
    "load_study",
    "plan_study",
    "run_study",
]

AXES = (
    "labels",
    "separators",
    "instruction",
    "chat",
    "system",
    "fewshot",
    "formulation",
    "rotations",
    "permutations",
    "robustness",
    "perturbation_gap",
)
# Not format changes: the question or an option reads differently.
CONTENT_AXES = ("robustness", "perturbation_gap")
DEFAULT_AXES = (
    "labels",
    "separators",
    "instruction",
    "chat",
    "system",
    "fewshot",
    "formulation",
    "rotations",
)
NEUTRAL_SYSTEM_PROMPT = "You are a helpful assistant."


@dataclass(frozen=True)
class StudyPlan:
    study: str
    reference: RunConfig
    formulations: tuple[tuple[str, RunConfig], ...]
    skipped: tuple[tuple[str, str], ...]  # (formulation, why)


def _variant(base: RunConfig, **change: object) -> Variant:
    data = base.variant.model_dump() if base.variant else {}
    return Variant.model_validate({**data, **change})


def _grid(
    base: RunConfig, axes: Sequence[str], n_options: int, permutations: int, task: str
) -> list[tuple[str, RunConfig]]:
    out: list[tuple[str, RunConfig]] = []

    def add(label: str, **update: object) -> None:
        out.append((label, base.model_copy(update=update)))

    for axis in axes:
        if axis == "labels":
            for style in ("(A)", "[A]", "A)", "1."):
                add(f"labels {style}", variant=_variant(base, labels=style))
        elif axis == "separators":
            add("options on one line", variant=_variant(base, option_separator=" "))
            add("single newline between examples", variant=_variant(base, fewshot_separator="\n"))
        elif axis == "instruction":
            add("no instruction line", variant=_variant(base, instruction=False))
        elif axis == "chat":
            add(
                "chat template " + ("off" if base.chat_template else "on"),
                chat_template=not base.chat_template,
            )
        elif axis == "system":
            prompt = None if base.system_prompt else NEUTRAL_SYSTEM_PROMPT
            add("no system prompt" if prompt is None else "system prompt", system_prompt=prompt)
        elif axis == "fewshot":
            add("0-shot", few_shot=0)
            for seed in (1, 2):
                add(f"5-shot, draw {seed}", few_shot=5, few_shot_seed=seed)
        elif axis == "formulation":
            for f in formulations(task):
                if f != (base.formulation or formulations(task)[0]):
                    add(f"formulation {f}", formulation=f)
        elif axis == "rotations":
            for r in range(1, n_options):
                add(f"rotate {r}", variant=_variant(base, rotate=r))
        elif axis == "permutations":
            for s in range(1, permutations + 1):
                add(f"permutation {s}", variant=_variant(base, permute_seed=s))
        elif axis == "robustness":
            for kind in PERTURBATIONS:
                add(kind.replace("_", " "), variant=_variant(base, perturb=kind, perturb_seed=1))
        elif axis == "perturbation_gap":
            add("options shuffled", variant=_variant(base, permute_seed=1))
            add(
                'a wrong option replaced by "None of the other choices"',
                variant=_variant(base, none_of_the_other=True),
            )
            add("fresh numbers", variant=_variant(base, fresh_numbers=True, perturb_seed=1))
        else:
            raise ConfigError(
                f"Unknown sensitivity axis {axis!r}.", hint=f"Use some of: {', '.join(AXES)}."
            )
    return out


def _requests(config: RunConfig, provider: ModelProvider) -> list[object]:
    plan = make_plan(config, provider)
    return [ps.request for pt in plan.tasks for ps in pt.samples]


def plan_study(
    base: RunConfig,
    axes: Sequence[str] = DEFAULT_AXES,
    *,
    permutations: int = 3,
    provider: ModelProvider | None = None,
    study: str | None = None,
) -> StudyPlan:
    """The reference config and every formulation to run; formulations that cannot apply or
    change nothing are listed in ``skipped`` with the reason."""
    if len(base.tasks) != 1:
        raise ConfigError(
            "A sensitivity study takes exactly one task.",
            hint="calipers sensitivity -t TASK; run one study per task.",
        )
    study = study or f"study-{new_run_id()}"
    base = base.model_copy(update={"study": study})
    provider = provider or resolve_model(base.model, base.model_options)
    ref_plan = make_plan(base, provider)
    ref_requests = [ps.request for pt in ref_plan.tasks for ps in pt.samples]
    n_options = max(
        (len(ps.sample.choices or ()) for pt in ref_plan.tasks for ps in pt.samples), default=0
    )
    task = ref_plan.tasks[0].task.name
    if "rotations" in axes and n_options < 2:
        axes = [a for a in axes if a != "rotations"]
    todo: list[tuple[str, RunConfig]] = []
    skipped: list[tuple[str, str]] = []
    for label, config in _grid(base, axes, n_options, permutations, base.tasks[0]):
        try:
            requests = _requests(config, provider)
        except CalipersError as e:
            skipped.append((label, e.message))
            continue
        if requests == ref_requests:
            skipped.append((label, f"sends exactly the reference's requests on {task}"))
        else:
            todo.append((label, config))
    return StudyPlan(study, base, tuple(todo), tuple(skipped))


def run_study(
    plan: StudyPlan,
    store: Store,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
    on_run: Callable[[str, str], None] | None = None,
) -> list[str]:
    """Run the reference and every formulation; returns the run ids, reference first."""
    ids = []
    for label, config in [("reference", plan.reference), *plan.formulations]:
        result = asyncio.run(arun(config, store, provider=provider, progress=progress))
        ids.append(result.run_id)
        if on_run:
            on_run(label, result.run_id)
    return ids


def load_study(store: Store, study: str) -> list[StoredRun]:
    """The finished runs of a study, the reference (no formulation change) first."""
    records = [
        r
        for r in store.list_runs(limit=100_000)
        if (r.config or {}).get("study") == study and r.status == "finished"
    ]
    if not records:
        raise ConfigError(
            f"No finished runs of study {study!r} in {store.url}.",
            hint="`calipers sensitivity --list` and `calipers rag list` show the stored studies.",
        )
    records.sort(key=lambda r: r.created_at)
    return [StoredRun(r, tuple(store.get_samples(r.id))) for r in records]


RAG_PREFIX = "rag-"  # the study ids of RAG stress tests (calipers rag stress)
AGENT_PREFIX = "agent-"  # the study ids of agent studies (calipers agent run)


def list_studies(store: Store, *, rag: bool = False) -> list[dict[str, Any]]:
    """One row per stored study (study, model, task, runs, created_at of its newest run), newest
    first: RAG stress tests with ``rag``, sensitivity and robustness studies without."""
    studies: dict[str, dict[str, Any]] = {}
    for r in store.list_runs(limit=100_000):
        study = (r.config or {}).get("study")
        if not study or study.startswith(RAG_PREFIX) != rag or study.startswith(AGENT_PREFIX):
            continue
        row = studies.setdefault(
            study,
            {
                "study": study,
                "model": r.model_name,
                "task": r.tasks[0],
                "runs": 0,
                "created_at": str(r.created_at),
            },
        )
        row["runs"] += 1
    return list(studies.values())
