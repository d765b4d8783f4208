"""Model card files: strict validation with file, line and field in every error."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from calipers.cards import CardCatalog, CardError, builtin_card_names, load_card, parse_card
from calipers.errors import ConfigError, UnknownNameError

GOOD = """\
name: my-model
provider: Example Labs
spec: openai:my-model
as_of: 2026-11-30
parameters: 7.3B
pricing:
  input_usd_per_mtok: 0.5
  output_usd_per_mtok: 1.5
openness:
  weights: {level: open, evidence: https://example.org/weights}
"""


def write(tmp_path: Path, text: str, name: str = "card.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_a_good_card_loads_and_missing_values_stay_missing(tmp_path: Path) -> None:
    card = load_card(write(tmp_path, GOOD))
    assert card.name == "my-model" and card.parameters == 7_300_000_000
    assert card.pricing.input_usd_per_mtok == 0.5
    # never 0: what the card does not say is None
    assert card.context_length is None and card.licence is None
    assert card.pricing.hardware_usd_per_hour is None
    assert card.openness.training_data is None and card.mof == {}


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (
            GOOD.replace("level: open", "level: mostly"),
            10,
            "openness.weights.level",
            "'closed', 'partial' or 'open'",
        ),
        (GOOD + "colour: blue\n", 11, "colour", "Extra inputs are not permitted"),
        (
            GOOD.replace("input_usd_per_mtok: 0.5", "input_usd_per_mtok: -0.5"),
            7,
            "pricing.input_usd_per_mtok",
            "greater than or equal to 0",
        ),
        (GOOD.replace("parameters: 7.3B", "parameters: lots"), 5, "parameters", "135M"),
        (
            GOOD + "mof:\n  model_weights: {released: true}\n",
            12,
            "mof",
            "unknown MOF component(s) model_weights",
        ),
    ],
)
def test_errors_name_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CardError) as e:
        load_card(path)
    assert isinstance(e.value, ConfigError)
    assert f"{path}:{line}: field '{field}'" in e.value.message
    assert words in e.value.message


def test_every_problem_is_listed(tmp_path: Path) -> None:
    text = GOOD.replace("0.5", "-1").replace("level: open", "level: wide") + "x: 1\n"
    with pytest.raises(CardError) as e:
        load_card(write(tmp_path, text))
    fields = sorted(f for _w, f, _m in e.value.problems)
    assert fields == ["openness.weights.level", "pricing.input_usd_per_mtok", "x"]
    assert "(and 2 more problem(s))" in e.value.message


def test_json_cards_and_non_mapping_cards(tmp_path: Path) -> None:
    raw = {"name": "j", "provider": "p", "as_of": "2026-01-01", "context_length": 0}
    with pytest.raises(CardError, match=r"card\.json: field 'context_length'"):
        load_card(write(tmp_path, json.dumps(raw), "card.json"))
    with pytest.raises(CardError, match="expected a mapping"):
        parse_card(["a", "list"], source="x.yaml")
    with pytest.raises(CardError, match="not valid YAML"):
        load_card(write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(CardError, match="does not exist"):
        load_card(tmp_path / "nope.yaml")


def test_builtin_cards_are_package_data() -> None:
    folder = resources.files("calipers.cards").joinpath("builtin")
    files = sorted(t.name for t in folder.iterdir() if t.name.endswith(".yaml"))
    assert len(files) == 5
    assert set(builtin_card_names()) == {
        "smollm2-135m-instruct",
        "olmo-2-7b",
        "llama-3.1-8b-instruct",
        "mistral-7b-v0.1",
        "gpt-4o",
    }


def test_every_builtin_card_is_dated_and_sourced() -> None:
    for e in CardCatalog.load(user=False).entries():
        assert e.card.as_of.year >= 2024 and e.card.sources, e.card.name
        for d in ("weights", "licence", "training_data"):
            assert getattr(e.card.openness, d) is not None, (e.card.name, d)


def test_lookup_by_alias_spec_display_name_and_part(calipers_home: Path) -> None:
    cat = CardCatalog.load()
    assert cat.get("smollm2").card.name == "smollm2-135m-instruct"
    assert cat.get("SmolLM2 135M Instruct").card.name == "smollm2-135m-instruct"
    assert cat.get("openai:gpt-4o").card.name == "gpt-4o"
    assert cat.get("olmo").card.name == "olmo-2-7b"
    with pytest.raises(UnknownNameError, match="Did you mean 'gpt-4o'"):
        cat.get("gpt-5o")
    assert cat.for_model("smollm2", "SmolLM2 135M Instruct") is not None
    assert cat.for_model("fake:echo", "echo") is None


def test_user_cards_override_builtin_and_extra_folders_override_user(
    calipers_home: Path, tmp_path: Path
) -> None:
    user = calipers_home / "models"
    user.mkdir(parents=True)
    write(user, GOOD.replace("my-model", "gpt-4o"), "gpt4o.yaml")
    extra = tmp_path / "extra"
    extra.mkdir()
    write(extra, GOOD, "mine.yaml")
    cat = CardCatalog.load([extra])
    assert cat.get("gpt-4o").source == str(user / "gpt4o.yaml")
    assert cat.get("gpt-4o").card.provider == "Example Labs"
    assert cat.get("my-model").source == str(extra / "mine.yaml")
    write(extra, GOOD, "twin.yaml")
    with pytest.raises(ConfigError, match=r"Two cards in .* are named 'my-model'"):
        CardCatalog.load([extra])
    with pytest.raises(ConfigError, match="does not exist"):
        CardCatalog.load([tmp_path / "nowhere"])
