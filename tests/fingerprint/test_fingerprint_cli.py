"""`calipers fingerprint` end to end with sampling fake models: record, list, show, check's
verdicts and exit codes (0 same, 1 changed, 2 inconclusive, 3 error), and clear errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.models import resolve_model
from calipers.types import ChatMessage, Fingerprint, GenerateParams, ModelRequest

ABCD = "fake:sample={h}-alpha|{h}-bravo|{h}-charlie|{h}-delta"
OTHER = "fake:sample={h}-yankee|{h}-zulu"
FAST = ("--power-reps", "10", "--permutations", "99", "--seed", "7")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def record(name: str = "ref", model: str = ABCD, *extra: str) -> Fingerprint:
    code, _, err = invoke("fingerprint", "record", model, "--name", name, "--seed", "1", *extra)
    assert code == 0, err
    return _load(name)


def _load(name: str) -> Fingerprint:
    code, out, _ = invoke("fingerprint", "show", name, "--json")
    assert code == 0
    return Fingerprint.model_validate_json(out)


def test_the_fake_sampler_samples_by_seed() -> None:
    model = resolve_model(ABCD)

    def answer(seed: int) -> str:
        msg = (ChatMessage(role="user", content="Name a colour."),)
        req = ModelRequest(messages=msg, params=GenerateParams(temperature=1.0, seed=seed))
        return asyncio.run(model.generate(req)).text

    answers = [answer(s) for s in range(40)]
    assert answer(3) == answers[3]  # the same request, the same answer
    assert {a.split("-")[1] for a in answers} == {"alpha", "bravo", "charlie", "delta"}
    assert len({a.split("-")[0] for a in answers}) == 1  # {h}: one prompt, one hash


def test_record_list_show(calipers_home: Path) -> None:
    fp = record("ref", ABCD, "--samples", "6", "--system", "Be brief.")
    assert (calipers_home / "fingerprints" / "ref.json").is_file()
    assert fp.probe_set == "fp-v1" and len(fp.probes) == 40
    assert fp.settings.samples_per_probe == 6 and fp.settings.system == "Be brief."
    assert all(len(v) == 6 for v in fp.completions.values())
    assert len({t for v in fp.completions.values() for t in v}) > 40  # sampled, per probe
    code, out, _ = invoke("fingerprint", "list", "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["ref"]
    code, out, _ = invoke("fingerprint", "show", "ref")
    assert code == 0 and "continue-story" in out and "Be brief." in out


def test_record_to_a_file_and_refuse_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "refs" / "mine.json"
    code, _, err = invoke("fingerprint", "record", ABCD, "-o", str(path), "--samples", "2")
    assert code == 0, err
    assert path.is_file()
    code, _, err = invoke("fingerprint", "record", ABCD, "-o", str(path), "--samples", "2")
    assert code == 2 and "already exists" in err and "--force" in err
    code, _, err = invoke("fingerprint", "record", ABCD, "-o", "x.json", "--name", "x")
    assert code == 2 and "not both" in err


def test_check_same_model_is_never_changed_and_says_same_with_power() -> None:
    record("ref", ABCD, "--samples", "10")
    code, out, err = invoke(
        "fingerprint", "check", ABCD, "--against", "ref", "--effect", "0.5", "--json", *FAST
    )
    data = json.loads(out)
    assert code == 0, err
    assert data["verdict"] == "same" and data["exit_code"] == 0 and data["moved"] == []
    assert data["probes_tested"] == 40 and data["samples_per_probe"] == 10
    half = next(r for r in data["power"] if r["epsilon"] == 0.5)
    assert half["power"]["value"] >= 0.8 and half["power"]["method"] == "wilson"
    assert data["identity_changed"] is False


def test_check_inconclusive_names_the_samples_needed() -> None:
    record("ref", ABCD, "--samples", "3")
    code, out, _ = invoke(
        "fingerprint", "check", ABCD, "--against", "ref", "--effect", "0.1", "--json", *FAST
    )
    data = json.loads(out)
    assert code == 2 and data["verdict"] == "inconclusive"
    assert "more" in data["summary"]
    assert data["needs_per_probe"] is None or data["needs_per_probe"] > 3


def test_check_another_model_is_changed_with_the_probes_that_moved() -> None:
    record("ref", ABCD, "--samples", "8")
    full = ("--power-reps", "10", "--seed", "7")  # 2000 permutations: enough for Holm over 40
    code, out, err = invoke("fingerprint", "check", OTHER, "--against", "ref", *full)
    assert code == 1, err
    assert "CHANGED" in out and "Probes that moved" in out
    code, out, _ = invoke("fingerprint", "check", OTHER, "--against", "ref", "--json", *full)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "changed" and data["identity_changed"] is True
    moved = data["moved"]
    assert len(moved) == 40  # every probe moved
    first = moved[0]
    assert first["reference_example"].split("-")[1] in {"alpha", "bravo", "charlie", "delta"}
    assert first["candidate_example"].split("-")[1] in {"yankee", "zulu"}


def test_check_errors_exit_3_never_a_verdict(tmp_path: Path) -> None:
    record("ref", ABCD, "--samples", "2")
    code, _, err = invoke("fingerprint", "check", ABCD, "--against", "nope")
    assert code == 3 and "No fingerprint 'nope'" in err and "ref" in err
    code, _, err = invoke("fingerprint", "check", ABCD, "--against", "ref", "--bogus")
    assert code == 3 and "--bogus" in err
    code, _, err = invoke("fingerprint", "check", ABCD, "--against", "ref", "--probe-set", "v9")
    assert code == 3 and "recorded on probe set 'fp-v1'" in err
    fp = _load("ref")
    edited = fp.model_copy(update={"probes": fp.probes[:-1]})
    edited.save(tmp_path / "edited.json")
    code, _, err = invoke("fingerprint", "check", ABCD, "--against", str(tmp_path / "edited.json"))
    assert code == 3 and "not those of 'fp-v1'" in err
    (tmp_path / "bad.json").write_text("{}")
    code, _, err = invoke("fingerprint", "check", ABCD, "--against", str(tmp_path / "bad.json"))
    assert code == 3 and "cannot be read as a fingerprint" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--temperature", "0"), "not temperature 0"),
        (("--probe-set", "fp-v0"), "no probe set 'fp-v0'"),
        (("--name", "../x"), "not a plain name"),
    ],
)
def test_record_errors(args: tuple[str, ...], message: str) -> None:
    code, _, err = invoke("fingerprint", "record", ABCD, *args)
    assert code == 2 and message in err


def test_a_model_that_does_not_sample_is_noted() -> None:
    code, _, err = invoke("fingerprint", "record", "fake:const=hello", "--samples", "2")
    assert code == 0 and "does not seem to sample" in err
