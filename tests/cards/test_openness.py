"""The openness rule, applied by hand to each built-in card and to edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from calipers.cards import CardCatalog, Openness, classify_openness

DIMS = (
    "weights",
    "architecture",
    "training_methods",
    "training_data",
    "inference_code",
    "documentation",
    "licence",
)


def openness(**levels: str) -> Openness:
    data: dict[str, Any] = {d: {"level": lv, "evidence": "test"} for d, lv in levels.items()}
    return Openness.model_validate(data)


# Levels of the built-in cards, read off the cards, and the class the written rule gives by
# hand: all seven open -> fully open; else weights not closed -> inspectable; else
# documentation not closed and one of architecture/methods/data not closed -> described;
# else opaque.
BUILTIN = {
    "smollm2-135m-instruct": ("open",) * 7,
    "olmo-2-7b": ("open",) * 7,
    "llama-3.1-8b-instruct": ("open", "open", "partial", "closed", "open", "open", "partial"),
    "mistral-7b-v0.1": ("open", "open", "closed", "closed", "open", "partial", "open"),
    "gpt-4o": ("closed", "closed", "closed", "closed", "closed", "partial", "closed"),
}
EXPECTED = {
    "smollm2-135m-instruct": "fully open",
    "olmo-2-7b": "fully open",
    "llama-3.1-8b-instruct": "inspectable",
    "mistral-7b-v0.1": "inspectable",
    "gpt-4o": "opaque",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_builtin_cards_classify_as_computed_by_hand(name: str) -> None:
    entry = CardCatalog.load(user=False).get(name)
    levels = tuple(getattr(entry.card.openness, d).level for d in DIMS)
    assert levels == BUILTIN[name]
    assert classify_openness(entry.card.openness).openness_class == EXPECTED[name]


def test_fully_open_needs_every_dimension_open() -> None:
    v = classify_openness(openness(**dict.fromkeys(DIMS, "open")))
    assert v.openness_class == "fully open" and v.decided_by == DIMS
    v = classify_openness(openness(**{**dict.fromkeys(DIMS, "open"), "licence": "partial"}))
    assert v.openness_class == "inspectable"
    assert (
        v.decided_by == ("weights", "licence")
        and "licence (use and modification) partial" in v.reason
    )


def test_partial_weights_are_inspectable_and_say_why() -> None:
    v = classify_openness(openness(weights="partial", documentation="open"))
    assert v.openness_class == "inspectable"
    assert v.decided_by[0] == "weights" and "training data not assessed" in v.reason


def test_described_needs_documentation_and_something_described() -> None:
    v = classify_openness(
        openness(weights="closed", documentation="partial", training_methods="partial")
    )
    assert v.openness_class == "described"
    assert v.decided_by == ("weights", "documentation", "training_methods")
    # documentation alone is not enough
    v = classify_openness(openness(weights="closed", documentation="open"))
    assert v.openness_class == "opaque"
    # a described architecture without documentation is not enough either
    v = classify_openness(openness(weights="closed", architecture="open"))
    assert v.openness_class == "opaque"


def test_nothing_assessed_is_opaque_and_not_assessed_counts_as_closed() -> None:
    v = classify_openness(Openness())
    assert v.openness_class == "opaque" and set(v.levels.values()) == {None}
    assert "documentation not assessed" in v.reason
