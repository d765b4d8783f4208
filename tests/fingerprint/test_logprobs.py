"""fingerprint record --logprobs through the openai provider against a local server: the
per-token log-probabilities it sends are the ones stored, in sample order; a server that gives
none records None; requests without --logprobs do not ask (their cache keys are unchanged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from fastapi import FastAPI

from calipers.cli import cli
from calipers.types import Fingerprint, GenerateParams, ModelRequest
from tests._servers import ServerThread


def _server(give: bool, seen: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        seed = int(body.get("seed", 0))
        text = f"answer {seed % 3}"
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": text},
        }
        if give and body.get("logprobs"):
            lps = [-(seed % 7) / 10, -0.5]  # a function of the seed, checked below
            choice["logprobs"] = {
                "content": [
                    {"token": t, "logprob": lp} for t, lp in zip(text.split(), lps, strict=True)
                ]
            }
        return {"choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}

    return app


def _record(tmp_path: Path, url: str, *extra: str) -> Fingerprint:
    out = tmp_path / "fp.json"
    r = CliRunner().invoke(
        cli,
        ["fingerprint", "record", "openai:m", "--base-url", f"{url}/v1", "--samples", "2",
         "-o", str(out), "--seed", "1", "--force", *extra],
        catch_exceptions=False,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return Fingerprint.load(out)


def test_logprobs_are_recorded_as_the_server_sent_them(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    seen: list[dict[str, Any]] = []
    server = ServerThread(_server(True, seen)).start()
    try:
        fp = _record(tmp_path, server.url, "--logprobs")
        assert all(b["logprobs"] is True for b in seen)
        assert fp.logprobs is not None and set(fp.logprobs) == set(fp.completions)
        # each completion's log-probabilities are those its own request (its seed) was sent
        by_text_seed = {(f"answer {b['seed'] % 3}", b["seed"]) for b in seen}
        for probe, lps in fp.logprobs.items():
            assert len(lps) == 2 and all(len(x) == 2 and x[1] == -0.5 for x in lps)
            for text, lp in zip(fp.completions[probe], lps, strict=True):
                assert any(t == text and -(s % 7) / 10 == lp[0] for t, s in by_text_seed)

        seen.clear()
        fp = _record(tmp_path, server.url)  # not asked: not sent, not recorded
        assert fp.logprobs is None and not any("logprobs" in b for b in seen)
    finally:
        server.stop()


def test_a_server_that_gives_none_records_none(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    server = ServerThread(_server(False, [])).start()
    try:
        assert _record(tmp_path, server.url, "--logprobs").logprobs is None
    finally:
        server.stop()


def test_asking_for_logprobs_leaves_other_requests_serialized_as_before() -> None:
    plain = ModelRequest(prompt="x", params=GenerateParams()).model_dump(mode="json")
    assert "logprobs" not in json.dumps(plain)
    asked = ModelRequest(prompt="x", params=GenerateParams(logprobs=True)).model_dump(mode="json")
    assert asked["params"]["logprobs"] is True
