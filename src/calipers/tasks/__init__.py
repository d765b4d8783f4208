"""Tasks: samples + prompt formulation + scorers + version; registry and spec files."""

from calipers.tasks._perturb import PERTURBATIONS, list_perturbations, register_perturbation
from calipers.tasks._prompt import PromptTemplate, template_fields
from calipers.tasks._registry import (
    formulations,
    generative_formulation,
    get_task,
    list_suites,
    list_tasks,
    register_resolver,
    register_suite,
    register_task,
    resolve_task,
)
from calipers.tasks._task import (
    Derived,
    EnvironmentFactory,
    LoadContext,
    Task,
    TaskKind,
    data_hash,
)
from calipers.tasks._variants import Variant, apply_variant, permutation_for

DEFAULT_TASK = "dynamic"

__all__ = [
    "DEFAULT_TASK",
    "PERTURBATIONS",
    "Derived",
    "EnvironmentFactory",
    "LoadContext",
    "PromptTemplate",
    "Task",
    "TaskKind",
    "Variant",
    "apply_variant",
    "data_hash",
    "formulations",
    "generative_formulation",
    "get_task",
    "list_perturbations",
    "list_suites",
    "list_tasks",
    "permutation_for",
    "register_perturbation",
    "register_resolver",
    "register_suite",
    "register_task",
    "resolve_task",
    "template_fields",
]
