"""MOF classes from component lists (arXiv:2403.13784; MOT's required/optional split)."""

from __future__ import annotations

from typing import Any

import pytest

from calipers.cards import MOF_COMPONENTS, CardCatalog, MofComponent, mof_classify

CLASS_III = [
    "model_architecture",
    "model_parameters_final",
    "technical_report",
    "evaluation_results",
    "model_card",
    "data_card",
]
CLASS_II = ["training_code", "inference_code", "evaluation_code", "evaluation_data"]
CLASS_I = ["research_paper", "datasets", "data_preprocessing_code", "model_parameters_intermediate"]
OPTIONAL = ["sample_model_outputs", "supporting_libraries", "model_metadata"]


def comps(keys: list[str], **override: dict[str, Any]) -> dict[str, MofComponent]:
    out = {k: MofComponent(released=True, open_licence=True) for k in keys}
    out.update({k: MofComponent.model_validate(v) for k, v in override.items()})
    return out


def test_the_component_table_matches_the_published_lists() -> None:
    required = {
        c: [s.key for s in MOF_COMPONENTS if s.mof_class == c and s.required]
        for c in ("Class III", "Class II", "Class I")
    }
    assert sorted(required["Class III"]) == sorted(CLASS_III)
    assert sorted(required["Class II"]) == sorted(CLASS_II)
    assert sorted(required["Class I"]) == sorted(CLASS_I)
    assert sorted(s.key for s in MOF_COMPONENTS if not s.required) == sorted(OPTIONAL)
    assert len(MOF_COMPONENTS) == 17


def test_classes_are_cumulative() -> None:
    assert mof_classify(comps(CLASS_III + CLASS_II + CLASS_I)).mof_class == "Class I"
    r = mof_classify(comps(CLASS_III + CLASS_II))
    assert r.mof_class == "Class II" and r.next_class == "Class I"
    assert sorted(g.key for g in r.missing_for_next) == sorted(CLASS_I)
    assert {g.reason for g in r.missing_for_next} == {"not assessed"}
    # Class I components without Class II ones do not make Class I
    r = mof_classify(comps(CLASS_III + CLASS_I))
    assert r.mof_class == "Class III"
    assert [g.key for g in r.missing_for_next] == CLASS_II


def test_missing_components_say_why() -> None:
    r = mof_classify(
        comps(
            CLASS_III,
            model_parameters_final={"released": True, "open_licence": False},
            data_card={"released": False},
            model_card={"released": True, "open_licence": None},
        )
    )
    assert r.mof_class is None and r.next_class == "Class III"
    assert [(g.key, g.reason) for g in r.missing_for_next] == [
        ("model_parameters_final", "licence not open"),
        ("model_card", "licence not established"),
        ("data_card", "not released"),
    ]
    assert r.potential_class is None  # weights not open and no data card, whatever happens


def test_research_paper_stands_in_for_the_technical_report() -> None:
    keys = [k for k in CLASS_III if k != "technical_report"]
    assert mof_classify(comps(keys)).mof_class is None
    assert mof_classify(comps([*keys, "research_paper"])).mof_class == "Class III"


def test_optional_components_are_not_needed() -> None:
    r = mof_classify(comps(CLASS_III + CLASS_II + CLASS_I))
    assert not set(OPTIONAL) & set(r.satisfied)


def test_potential_class_and_conditional_note() -> None:
    r = mof_classify(
        comps(CLASS_III + CLASS_II, technical_report={"released": True, "open_licence": None})
    )
    assert r.mof_class is None and r.potential_class == "Class II"
    assert r.unestablished == ("technical_report",)
    assert any("conditional" in n for n in r.notes)
    assert any(n.startswith("Class II (open tooling) if the licences") for n in r.notes)


@pytest.mark.parametrize(
    ("name", "cls", "potential", "missing"),
    [
        (
            "smollm2-135m-instruct",
            None,
            "Class II",
            [("technical_report", "licence not established")],
        ),
        ("olmo-2-7b", None, "Class I", [("technical_report", "licence not established")]),
        (
            "mistral-7b-v0.1",
            None,
            None,
            [
                ("technical_report", "licence not established"),
                ("evaluation_results", "licence not established"),
                ("data_card", "not released"),
            ],
        ),
        (
            "gpt-4o",
            None,
            None,
            [
                ("model_architecture", "not released"),
                ("model_parameters_final", "not released"),
                ("technical_report", "licence not established"),
                ("evaluation_results", "licence not established"),
                ("model_card", "not released"),
                ("data_card", "not released"),
            ],
        ),
    ],
)
def test_builtin_cards(
    name: str, cls: str | None, potential: str | None, missing: list[tuple[str, str]]
) -> None:
    r = CardCatalog.load(user=False).get(name).mof
    assert r.mof_class == cls and r.potential_class == potential
    assert [(g.key, g.reason) for g in r.missing_for_next] == missing
