"""The Linux Foundation Model Openness Framework (MOF) classes, from a card's component list.

White et al., "The Model Openness Framework: Promoting Completeness and Openness for
Reproducibility, Transparency, and Usability in Artificial Intelligence", arXiv:2403.13784.
The component table below follows the paper's 17 components and the required/optional split of
the Linux Foundation's reference implementation, the Model Openness Tool
(github.com/lfai/model_openness_tool, ``web/modules/mof/config/install/mof.settings.yml``).

Classes are cumulative: Class III (open model) is the entry class, Class II (open tooling)
needs everything of Class III plus its own components, Class I (open science) everything of
both. A required component counts only when it is released *and* under an open licence fit for
its kind (OSI-approved for code, an open data licence for data, an open content licence such as
CC-BY for documents); an unknown licence does not count. As in the Model Openness Tool, a
research paper also satisfies Class III's technical report. The tool's "conditional" Class III
pass (final weights under an open licence while other Class III parts are missing) is not a
class here; it is reported as a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from calipers.cards._card import MofComponent

__all__ = [
    "MOF_CLASSES",
    "MOF_COMPONENTS",
    "MofClass",
    "MofComponentSpec",
    "MofGap",
    "MofResult",
    "mof_classify",
]

MofClass = Literal["Class III", "Class II", "Class I"]
MOF_CLASSES: tuple[MofClass, ...] = ("Class III", "Class II", "Class I")
_CLASS_NAMES = {"Class III": "open model", "Class II": "open tooling", "Class I": "open science"}

Kind = Literal["code", "data", "document"]


@dataclass(frozen=True)
class MofComponentSpec:
    key: str
    name: str
    kind: Kind
    mof_class: MofClass
    required: bool


def _c(key: str, name: str, kind: Kind, cls: MofClass, required: bool = True) -> MofComponentSpec:
    return MofComponentSpec(key, name, kind, cls, required)


MOF_COMPONENTS: tuple[MofComponentSpec, ...] = (
    # Class III: open model
    _c("model_architecture", "Model architecture", "code", "Class III"),
    _c("model_parameters_final", "Model parameters (final)", "data", "Class III"),
    _c("technical_report", "Technical report", "document", "Class III"),
    _c("evaluation_results", "Evaluation results", "document", "Class III"),
    _c("model_card", "Model card", "document", "Class III"),
    _c("data_card", "Data card", "document", "Class III"),
    _c("sample_model_outputs", "Sample model outputs", "document", "Class III", required=False),
    # Class II: open tooling
    _c("training_code", "Training, validation and testing code", "code", "Class II"),
    _c("inference_code", "Inference code", "code", "Class II"),
    _c("evaluation_code", "Evaluation code", "code", "Class II"),
    _c("evaluation_data", "Evaluation data", "data", "Class II"),
    _c(
        "supporting_libraries", "Supporting libraries and tools", "code", "Class II", required=False
    ),
    # Class I: open science
    _c("research_paper", "Research paper", "document", "Class I"),
    _c("datasets", "Datasets", "data", "Class I"),
    _c("data_preprocessing_code", "Data preprocessing code", "code", "Class I"),
    _c(
        "model_parameters_intermediate",
        "Model parameters (intermediate checkpoints)",
        "data",
        "Class I",
    ),
    _c("model_metadata", "Model metadata", "data", "Class I", required=False),
)
_BY_KEY = {c.key: c for c in MOF_COMPONENTS}
MOF_COMPONENT_KEYS = tuple(_BY_KEY)


@dataclass(frozen=True)
class MofGap:
    """A required component that keeps a model out of a class, and why."""

    key: str
    name: str
    mof_class: MofClass
    reason: str  # "not released", "licence not open", "licence not established", "not assessed"


@dataclass(frozen=True)
class MofResult:
    mof_class: MofClass | None
    label: str
    next_class: MofClass | None
    missing_for_next: tuple[MofGap, ...]
    satisfied: tuple[str, ...]
    potential_class: MofClass | None  # if every licence not established were open
    unestablished: tuple[str, ...]  # released components whose licence is not established
    notes: tuple[str, ...]


def _gap(comp: MofComponent | None, assume_open: bool = False) -> str | None:
    """Why ``comp`` does not count for its class (None: it counts). With ``assume_open``, a
    licence not established is taken to be open."""
    if comp is None:
        return "not assessed"
    if not comp.released:
        return "not released"
    if comp.open_licence is None:
        return None if assume_open else "licence not established"
    return None if comp.open_licence else "licence not open"


def _gaps(
    components: dict[str, MofComponent], cls: MofClass, assume_open: bool = False
) -> list[MofGap]:
    out = []
    paper_counts = _gap(components.get("research_paper"), assume_open) is None
    for spec in MOF_COMPONENTS:
        if spec.mof_class != cls or not spec.required:
            continue
        reason = _gap(components.get(spec.key), assume_open)
        if reason and spec.key == "technical_report" and paper_counts:
            reason = None  # a research paper stands in for the technical report
        if reason:
            out.append(MofGap(spec.key, spec.name, cls, reason))
    return out


def _label(cls: MofClass | None) -> str:
    if cls is None:
        return "unclassified (not even Class III)"
    return f"{cls} ({_CLASS_NAMES[cls]})"


def _reached(components: dict[str, MofComponent], assume_open: bool) -> MofClass | None:
    reached: MofClass | None = None
    for cls in MOF_CLASSES:
        if _gaps(components, cls, assume_open):
            break
        reached = cls
    return reached


def mof_classify(components: dict[str, MofComponent]) -> MofResult:
    """The highest MOF class whose required components (cumulatively) all count, what is
    missing for the next class up, and the class the model would reach if every licence not
    yet established turned out to be open (``potential_class``)."""
    reached = _reached(components, assume_open=False)
    potential = _reached(components, assume_open=True)
    nxt: MofClass | None
    if reached is None:
        nxt = "Class III"
    else:
        i = MOF_CLASSES.index(reached)
        nxt = MOF_CLASSES[i + 1] if i + 1 < len(MOF_CLASSES) else None
    missing = tuple(_gaps(components, nxt)) if nxt else ()
    satisfied = tuple(s.key for s in MOF_COMPONENTS if _gap(components.get(s.key)) is None)
    notes: list[str] = []
    weights = components.get("model_parameters_final")
    if reached is None and weights is not None and weights.released and weights.open_licence:
        notes.append(
            "The final weights are under an open licence: the Model Openness Tool would give a "
            "'conditional' Class III pass; by the paper's component list it is not yet Class III."
        )
    unestablished = tuple(k for k, c in components.items() if c.released and c.open_licence is None)
    if potential != reached:
        notes.append(
            f"{_label(potential)} if the licences not yet established "
            f"({', '.join(_BY_KEY[k].name.lower() for k in unestablished)}) are open."
        )
    return MofResult(
        reached, _label(reached), nxt, missing, satisfied, potential, unestablished, tuple(notes)
    )
