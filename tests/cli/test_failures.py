"""Runs that fail after planning, against real HTTP servers on 127.0.0.1: a server that answers
HTML, one that accepts a request and never answers (``--timeout``, ``--deadline``), and one
that rate-limits each prompt once (retries counted and shown)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from calipers.cli import cli
from calipers.cli._duration import DURATION
from calipers.cli._progress import BarProgress
from calipers.errors import DeadlineError, ResumeError
from calipers.models import ModelOptions, Retry
from calipers.models._openai import OpenAIModel
from calipers.runner import RunConfig, aresume, arun, make_plan
from calipers.store import SampleRecord, Store
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
            return await _answer(
                send, 429, json.dumps(err).encode(), headers=[(b"retry-after", b"0")]
            )
        ok = {
            "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 2},
        }
        await _answer(send, 200, json.dumps(ok).encode())


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    ctype: str = "application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", ctype.encode()), *(headers or [])],
        }
    )
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
    spec.write_text(
        "name: items\ndata: items.jsonl\nscorers: [exact_match]\n"
        "fields: {id: id, input: input, target: target}\n"
    )
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
    code, out, err = invoke(
        *run_args(url, items, "-n", "2", "--timeout", "0.4", "--max-retries", "1", "--json")
    )
    elapsed = time.monotonic() - start
    assert code == 3, (out, err)
    task = json.loads(out)["tasks"]["items"]
    assert task["n_errors"] == 2
    assert (
        "failed after 2 attempts: no answer within the 0.4 s timeout (--timeout)"
        in task["top_error"]["message"]
    )
    # two attempts of 0.4 s and one backoff (0.5-0.625 s) per sample, both samples at once
    assert app.posts == 4 and elapsed < 6, elapsed
    calls = dict(task["calls"])
    assert 2 * 0.5 <= calls.pop("wait_s") <= 2 * 0.625
    assert calls == {"retries": 2, "samples_retried": 2, "rate_limited": 0}


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
    # item 3 still hangs: a shorter --timeout on resume gives up on it, the rest finish
    code, out, err = invoke(
        "run",
        "--resume",
        run.id,
        "--json",
        "--deadline",
        "60",
        "--timeout",
        "0.3",
        "--max-retries",
        "0",
    )
    assert code == 0, (out, err)
    task = json.loads(out)["tasks"]["items"]
    assert (task["n_samples"], task["n_scored"], task["n_errors"]) == (N, N - 1, 1)
    assert "0.3 s timeout" in task["top_error"]["message"]
    assert task["metrics"]["exact_match"]["value"] == 1.0
    assert app.seen == {f"item {i}": 2 if i == 3 else 1 for i in range(N)}
    with Store.open() as store:  # the stored configuration is not changed by the resume
        assert store.get_run(run.id).config["model_options"]["timeout_s"] == 120.0


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
    totals = run.summary.calls
    assert totals is not None
    assert (totals.retries, totals.samples_retried, totals.rate_limited) == (3, 3, 3)
    assert totals.wait_s == pytest.approx(sum(c["wait_s"] for c in calls.values() if c))
    assert run.summary.tasks["items"].calls == totals
    assert run.summary.tasks["items"].metrics["exact_match"].value == 1.0
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


def test_progress_hears_each_retry(upstream: tuple[Upstream, str], items: Path) -> None:
    """The runner tells the progress display about every retry before its wait; the CLI's bar
    shows the newest one."""
    app, url = upstream
    app.limit = lambda t: t == "item 2"
    heard: list[tuple[str, str, Retry]] = []

    class Recorder:
        def start_run(self, run_id: str) -> None: ...
        def note(self, message: str) -> None: ...
        def start_task(self, task: str, total: int, done: int) -> None: ...
        def advance(self, task: str, record: SampleRecord) -> None: ...
        def finish_task(self, task: str) -> None: ...

        def retrying(self, task: str, sample_id: str, retry: Retry) -> None:
            heard.append((task, sample_id, retry))

    config = RunConfig(
        model="openai:m",
        tasks=(str(items),),
        use_cache=False,
        model_options=ModelOptions(base_url=url),
    )
    with Store.open() as store:
        result = asyncio.run(arun(config, store, progress=Recorder()))
    assert result.summary.calls is not None and result.summary.calls.retries == 1
    [(task, sample_id, retry)] = heard
    assert (task, sample_id, retry.attempt, retry.max_attempts) == ("items", "i2", 1, 5)
    assert retry.rate_limited and retry.reason == "HTTP 429: rate limit reached"
    assert 0.5 <= retry.wait_s <= 0.625

    out = io.StringIO()
    bar = BarProgress(Console(file=out, force_terminal=True, width=200))
    with bar:
        bar.start_task("items", total=N, done=0)
        bar.retrying("items", "i2", Retry(2, 5, 4.0, "HTTP 503: busy"))
    assert "i2: retrying (attempt 3/5, waiting 4.0s: HTTP 503: busy)" in out.getvalue()


def test_durations() -> None:
    for text, seconds in [("90", 90), ("90s", 90), ("30m", 1800), ("1.5h", 5400), (".5", 0.5)]:
        assert DURATION.convert(text, None, None) == seconds


def test_deadline_in_the_library_and_what_a_resume_may_change(items: Path) -> None:
    config = RunConfig(model="fake:echo,delay=0.2", tasks=(str(items),), concurrency=1)
    with Store.open() as store:
        with pytest.raises(DeadlineError) as hit:
            asyncio.run(arun(config, store, deadline_s=0.5))
        assert 0 < hit.value.pending < N  # one sample takes 0.2 s, one at a time
        done = len(store.done_keys(hit.value.run_id))
        assert hit.value.pending == N - done
        with pytest.raises(ResumeError, match="cannot change base_url"):
            asyncio.run(aresume(hit.value.run_id, store, model_options={"base_url": "x"}))
        result = asyncio.run(aresume(hit.value.run_id, store, model_options={"timeout_s": 5}))
        assert result.summary.tasks["items"].n_scored == N


def test_an_endpoint_that_dies_after_planning_fails_every_sample(items: Path) -> None:
    app = Upstream()
    server = ServerThread(app, graceful_s=1, lifespan="off").start()
    url = f"{server.url}/v1"
    model = OpenAIModel("m", ModelOptions(base_url=url, max_retries=1))
    config = RunConfig(
        model="openai:m",
        tasks=(str(items),),
        limit=2,
        use_cache=False,
        model_options=ModelOptions(base_url=url, max_retries=1),
    )
    plan = make_plan(config, model)  # planning reaches the server (GET /models) ...
    assert plan.methodology.model.api_model == "m"
    server.stop()  # ... which then goes away
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=model))
    assert result.failed_tasks == ["items"]
    task = result.summary.tasks["items"]
    assert task.top_error is not None and task.calls is not None
    assert task.top_error.count == 2
    assert "failed after 2 attempts: connection error (ConnectError" in task.top_error.message
    assert (task.calls.retries, task.calls.samples_retried) == (2, 2)
