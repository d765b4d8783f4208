"""An episode's steps in the HTML and Markdown reports and on the dashboard's run page: each
model reply with its tool calls and arguments, each tool result and error, the user turns,
and why an episode stopped."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from markupsafe import escape

from calipers.models import FakeModel
from calipers.reports import episode_steps, episode_text, render_html, render_markdown
from calipers.runner import run
from calipers.store import Store
from calipers.tasks import register_task
from calipers.types import ModelRequest, ModelResponse, Sample
from calipers.web import create_app
from tests._episodes import agent, call, counter_task


def test_steps_of_a_failing_episode_in_reports_and_the_dashboard(tmp_path: Path) -> None:
    def hangs(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="", tool_calls=(call("add", n=7), call("hang")))

    ok = Sample(id="ok", input="Make it 4.", target=4)  # agent reaches 3: a failing item
    stuck = Sample(id="stuck", input="Make it 3.", target=3, metadata={"hang": True})

    def model(request: ModelRequest) -> ModelResponse:
        first = (request.messages or ())[1].content
        return hangs(request) if first == "Make it 3." else agent(request)

    task = counter_task([ok, stuck], name="counter_report")
    register_task(task.name, lambda: task)
    db = tmp_path / "s.db"
    with Store.open(f"sqlite:///{db}") as store:
        result = run(FakeModel(model), task.name, store=store)
        rec = store.get_run(result.run_id)
        samples = store.get_samples(result.run_id)
    by = {s.sample_id: s for s in samples}

    steps = episode_steps(by["ok"])
    assert [s.who for s in steps[:4]] == ["model", "tool add", "model", "tool add"]
    assert steps[0].calls == ("add(n=2)",)
    assert steps[4].calls == ("add(<unparsed: '{n: 1'>)",)
    assert steps[3].error == "n must be an integer"
    assert episode_steps(by["stuck"])[-1].who == "stopped"

    page = render_html(rec, samples)
    assert "add(n=2)" in page and str(escape("add(<unparsed: '{n: 1'>)")) in page
    assert "n must be an integer" in page
    assert "did not answer within 0.2 s" in page  # the stuck tool, in the errors section

    md = render_markdown(rec, samples)
    assert "→ add(n=2)" in md and "error: n must be an integer" in md
    text = episode_text(by["ok"])
    assert text.splitlines()[0].startswith("[0] model")

    with TestClient(create_app(str(db)), base_url="http://127.0.0.1") as client:
        r = client.get(f"/runs/{result.run_id}?task={task.name}&show=all")
        assert r.status_code == 200
        assert "steps (11)" in r.text and "n must be an integer" in r.text
