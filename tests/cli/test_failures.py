"""Runs that fail after planning, against real HTTP servers on 127.0.0.1: a server that answers
HTML, one that accepts a request and never answers (``--timeout``, ``--deadline``), and one
that rate-limits each prompt once (retries counted and shown)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.store import Store
from tests._servers import ServerThread

N = 6
HTML = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
Send = Callable[[dict[str, Any]], Any]


class Upstream:
    """A scripted OpenAI-compatible server. ``html``: every answer is an HTML page.
    ``hang(text)``: never answer a chat request whose last message is ``text``.
    ``limit(text)``: answer such a request 429 (``Retry-After: 0``) the first time."""

    def __init__(self) -> None:
        self.html = False
        self.hang: Callable[[str], bool] = lambda _t: False
        self.limit: Callable[[str], bool] = lambda _t: False
        self.seen: dict[str, int] = {}
        self.posts = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if self.html:
            return await _answer(send, 200, HTML, "text/html")
        if scope["method"] == "GET":
            return await _answer(send, 200, json.dumps({"data": [{"id": "m"}]}).encode())
        self.posts += 1
        text = json.loads(body)["messages"][-1]["content"]
        self.seen[text] = self.seen.get(text, 0) + 1
        if self.hang(text):  # until the client gives up and disconnects
            while (await receive())["type"] != "http.disconnect":
                pass
            return None
        if self.limit(text) and self.seen[text] == 1:
            err = {"error": {"message": "rate limit reached"}}
            return await _answer(send, 429, json.dumps(err).encode(),
                                 headers=[(b"retry-after", b"0")])
        ok = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 2, "completion_tokens": 2}}
        await _answer(send, 200, json.dumps(ok).encode())


async def _answer(send: Send, status: int, body: bytes, ctype: str = "application/json",
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype.encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    app = Upstream()
    server = ServerThread(app, graceful_s=1, lifespan="off").start()
    yield app, f"{server.url}/v1"
    server.stop()


@pytest.fixture
def items(tmp_path: Path) -> Path:
    rows = [{"id": f"i{i}", "input": f"item {i}", "target": f"item {i}"} for i in range(N)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "items.yaml"
    spec.write_text("name: items\ndata: items.jsonl\nscorers: [exact_match]\n"
                    "fields: {id: id, input: input, target: target}\n")
    return spec


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_args(url: str, items: Path, *more: str) -> list[str]:
    return ["run", "-m", "openai:m", "--base-url", url, "-t", str(items), "--no-cache", *more]


def test_every_sample_failing_exits_non_zero_with_the_commonest_error(
    upstream: tuple[Upstream, str], items: Path, calipers_home: Path
) -> None:
    app, url = upstream
    app.html = True  # e.g. --base-url without /v1 in front of a web server
    code, out, err = invoke(*run_args(url, items))
    assert code == 3, (out, err)
    assert "commonest error" in out and f"all {N}×" in out and "HTML" in out
    assert "Every sample of items failed" in err and "/v1" in err
    code, out, _ = invoke("show", "latest")
    assert code == 0 and f"all {N}×" in out and "HTML" in out
    md = next((calipers_home / "reports").glob("*.md")).read_text()
    assert f"Commonest: `{N}× model: ModelCallError:" in md


def test_some_errors_still_exit_zero(upstream: tuple[Upstream, str], items: Path) -> None:
    """Only a task that measured nothing fails the run; a few errors are reported, not fatal."""
    app, url = upstream
    app.hang = lambda t: t == "item 0"
    code, out, err = invoke(*run_args(url, items, "--timeout", "0.3", "--max-retries", "0"))
    assert code == 0, (out, err)
    assert "1 sample(s) failed" in out and "1×" in out and "0.3 s timeout" in out


def test_timeout_bounds_a_request_that_hangs(upstream: tuple[Upstream, str], items: Path) -> None:
    app, url = upstream
    app.hang = lambda _t: True
    start = time.monotonic()
    code, out, err = invoke(*run_args(url, items, "-n", "2", "--timeout", "0.4",
                                      "--max-retries", "1", "--json"))
    elapsed = time.monotonic() - start
    assert code == 3, (out, err)
    task = json.loads(out)["tasks"]["items"]
    assert task["n_errors"] == 2
    assert ("failed after 2 attempts: no answer within the 0.4 s timeout (--timeout)"
            in task["top_error"]["message"])
    # two attempts of 0.4 s and one backoff (0.5-0.625 s) per sample, both samples at once
    assert app.posts == 4 and elapsed < 6, elapsed
    assert task["calls"] == {"retries": 2, "samples_retried": 2, "rate_limited": 0,
                             "wait_s": pytest.approx(task["calls"]["wait_s"])}
    assert 2 * 0.5 <= task["calls"]["wait_s"] <= 2 * 0.625


def test_deadline_leaves_the_rest_pending_and_resume_finishes(
    upstream: tuple[Upstream, str], items: Path
) -> None:
    app, url = upstream
    app.hang = lambda t: t == "item 3"  # in item order, one at a time: 3 are done before it
    start = time.monotonic()
    code, out, err = invoke(*run_args(url, items, "--concurrency", "1", "--deadline", "1.5s"))
    assert code == 4, (out, err)
    assert time.monotonic() - start < 10
    said = " ".join(err.split())
    assert f"with {N - 3} of {N} samples not done" in said and "calipers run --resume" in said
    with Store.open() as store:
        run = store.list_runs()[0]
        assert run.status == "interrupted" and run.summary is None
        assert sorted(s.sample_id for s in store.get_samples(run.id)) == ["i0", "i1", "i2"]
    app.hang = lambda _t: False
    code, out, err = invoke("run", "--resume", run.id, "--json", "--deadline", "60")
    assert code == 0, (out, err)
    task = json.loads(out)["tasks"]["items"]
    assert task["n_samples"] == N and task["n_errors"] == 0
    assert task["metrics"]["exact_match"]["value"] == 1.0
    assert app.seen == {f"item {i}": 2 if i == 3 else 1 for i in range(N)}


def test_retries_are_counted_and_shown(
    upstream: tuple[Upstream, str], items: Path, calipers_home: Path
) -> None:
    app, url = upstream
    limited = {f"item {i}" for i in range(N) if i % 2 == 0}  # 3 of 6, each 429 once
    app.limit = lambda t: t in limited
    code, out, err = invoke(*run_args(url, items))
    assert code == 0, (out, err)
    assert "3 (3 rate-limited," in out  # the table's retries column
    with Store.open() as store:
        run = store.list_runs()[0]
        samples = store.get_samples(run.id)
    calls = {s.sample_id: (s.score_details or {}).get("calls") for s in samples}
    for i in range(N):
        c = calls[f"i{i}"]
        if i % 2:
            assert c is None
        else:
            assert c is not None
            assert (c["attempts"], c["retries"], c["rate_limited"]) == (2, 1, 1)
            assert 0.5 <= c["wait_s"] <= 0.625  # 0.5 s backoff (+ jitter) over Retry-After 0
    assert run.summary is not None
    totals = run.summary["calls"]
    assert (totals["retries"], totals["samples_retried"], totals["rate_limited"]) == (3, 3, 3)
    assert totals["wait_s"] == pytest.approx(sum(c["wait_s"] for c in calls.values() if c))
    assert run.summary["tasks"]["items"]["calls"] == totals
    assert run.summary["tasks"]["items"]["metrics"]["exact_match"]["value"] == 1.0
    code, out, _ = invoke("show", run.id)
    assert code == 0 and "3 (3 rate-limited," in out
    assert "3 retries on 3 samples, 3 rate-limited (HTTP 429)" in out  # the methodology card
    report = calipers_home / "reports" / run.id
    for ext in ("md", "html"):
        text = report.with_suffix(f".{ext}").read_text()
        assert "3 retries on 3 samples, 3 rate-limited (HTTP 429)" in text
        assert "latencies are of the successful attempt" in text


def test_bad_durations_are_refused(items: Path) -> None:
    code, _, err = invoke("run", "-m", "fake:echo", "-t", str(items), "--deadline", "soon")
    assert code == 2 and "'soon' is not a duration" in err
    code, _, err = invoke("run", "-m", "fake:echo", "-t", str(items), "--deadline", "0m")
    assert code == 2 and "more than 0 seconds" in err
    code, _, err = invoke("run", "-m", "fake:echo", "-t", str(items), "--timeout", "0")
    assert code == 2 and "--timeout" in err
