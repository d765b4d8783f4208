"""``calipers ab`` through click: exit codes 0/1/2 are decisions, 3 errors; JSON is strict."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.cli._ab import parse_time
from calipers.errors import ConfigError
from calipers.store import Store
from tests.monitor._ab_fixtures import T0, Arm, judge_script, shadow_traffic


def _store(tmp_path: Path, *arms: Arm, n: int = 400) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Store.open(url) as store:
        store.add_traffic(shadow_traffic(n, *arms, seed=21))
    return url


def test_roll_back_exits_1_with_the_evidence(tmp_path: Path) -> None:
    url = _store(tmp_path, Arm(error=0.01), Arm(error=0.15))
    res = CliRunner().invoke(
        cli,
        [
            "ab",
            "--store",
            url,
            "--since",
            T0.isoformat(),
            "--price",
            "baseline=0.15,0.6",
            "--price",
            "candidate=0.15,0.6",
        ],
    )
    assert res.exit_code == 1, res.output
    assert "ROLL BACK" in res.output and "error_rate" in res.output
    assert "FAILING" in res.output and "mode shadow: 400 requests" in res.output
    assert "error_rate: worse by more than 0.01" in res.output


def test_json_keep_watching_exits_2_and_is_strict_json(tmp_path: Path) -> None:
    url = _store(tmp_path, Arm(), Arm(), n=150)
    res = CliRunner().invoke(
        cli,
        [
            "ab",
            "--store",
            url,
            "--json",
            "--scorer",
            "llm_judge:helpfulness",
            "--judge-model",
            judge_script(tmp_path),
            "--sample",
            "120",
            "--guardrail",
            "error_rate=0.02",
        ],
    )
    assert res.exit_code == 2, res.output
    data = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert data["decision"] == "keep_watching" and data["mode"] == "shadow"
    assert data["primary"]["name"] == "llm_judge:helpfulness"
    assert data["primary"]["effect"]["n"] == 120
    rails = {g["name"]: g for g in data["guardrails"]}
    assert rails["error_rate"]["tolerance"] == 0.02
    assert rails["cost"]["status"] == "skipped"
    assert data["counts"]["used"] == 150 and len(data["path"]) <= 200
    scoring = {s["scorer"]: s for s in data["scoring"]}
    assert scoring["llm_judge:helpfulness"]["scored"] == 240
    assert data["primary"]["uncalibrated"] is True  # a model judge's online score
    assert not any(g["uncalibrated"] for g in data["guardrails"])


def test_promote_exits_0(tmp_path: Path) -> None:
    url = _store(tmp_path, Arm(good=0.3), Arm(good=0.8, latency_log_mean=5.8), n=700)
    res = CliRunner().invoke(
        cli,
        ["ab", "--store", url, "--scorer", "llm_judge", "--judge-model", judge_script(tmp_path)],
    )
    assert res.exit_code == 0, res.output
    assert "PROMOTE" in res.output
    said = " ".join(res.output.split())  # a model judge's score, unchecked against people
    assert "(uncalibrated)" in said and "uncalibrated: a model judge gave the llm_judge" in said


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "No gateway traffic"),
        (["--price", "baseline=cheap"], "Bad --price"),
        (["--guardrail", "latency_p99=0.1"], "unknown guardrail"),
        (["--since", "yesterday"], "Bad time"),
        (["--mode", "sideways"], "Invalid value for '--mode'"),
    ],
)
def test_errors_exit_3_never_a_decision(tmp_path: Path, args: list[str], message: str) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    res = CliRunner().invoke(cli, ["ab", "--store", url, *args])
    assert res.exit_code == 3, res.output
    assert message in res.output


def test_parse_time_reads_iso_and_spans_back_from_now() -> None:
    now = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
    assert parse_time("24h", now=now) == now - timedelta(hours=24)
    assert parse_time("90m", now=now) == now - timedelta(minutes=90)
    assert parse_time("2026-11-01T08:00") == datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert parse_time("2026-11-01T10:00+02:00") == datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert parse_time("2026-11-01T08:00Z") == datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert parse_time("now", now=now) == now
    with pytest.raises(ConfigError):
        parse_time("soon")
