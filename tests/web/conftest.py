"""Dashboard test rig: one seeded store per module (runs of the fake model through the real
runner, with accuracies known by construction), and the real app under uvicorn on 127.0.0.1
in a thread for the browser tests."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.types import ModelRequest
from tests._servers import ServerThread

N = 30
CATS = ("a", "b", "c")
PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
ALPHA_RIGHT = range(18)  # 18/30 = 60%
BETA_RIGHT = range(27)  # 27/30 = 90%; beta right wherever alpha is, and on 9 more items
XSS_ERRORS = (0, 1)
LOOPBACK = "http://127.0.0.1"  # TestClient's base URL: the dashboard answers loopback names


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval by its textbook formula (Wilson 1927), computed here."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def pct(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _task(tmp: Path) -> Path:
    rows = [
        {"id": f"q{i}", "input": f"item {i}", "target": "yes", "cat": CATS[i % 3]} for i in range(N)
    ]
    (tmp / "yesno.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp / "yesno.yaml"
    spec.write_text(
        "name: yesno\ndata: yesno.jsonl\n"
        "fields: {id: id, input: input, target: target, category: cat}\n"
        "scorers: [exact_match]\n"
    )
    return spec


def _model(name: str, right: range, wrong: str = "no", errors: tuple[int, ...] = ()) -> FakeModel:
    def answer(req: ModelRequest) -> str:
        assert req.messages is not None
        i = int(req.messages[-1].content.split()[1])
        if i in errors:
            raise RuntimeError("server hiccup")
        return "yes" if i in right else wrong

    return FakeModel(answer, name=name)


@dataclass(frozen=True)
class Seeded:
    """A store holding four runs of the task ``yesno`` (N items, categories a/b/c):
    ``alpha`` (right on ALPHA_RIGHT), ``beta`` (right on BETA_RIGHT), ``xss`` (answers
    PAYLOAD, fails on XSS_ERRORS) and ``other``: alpha with a system prompt, so its
    methodology differs."""

    path: Path
    alpha: str
    beta: str
    xss: str
    other: str

    @property
    def url(self) -> str:
        return str(self.path)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    tmp = tmp_path_factory.mktemp("web")
    spec = str(_task(tmp))
    path = tmp / "calipers.db"

    def run(m: FakeModel, **cfg: Any) -> str:
        config = RunConfig(model=f"fake:{m.identity().name}", tasks=(spec,), **cfg)
        with Store.open(str(path)) as store:
            return asyncio.run(arun(config, store, provider=m)).run_id

    alpha = run(_model("alpha", ALPHA_RIGHT))
    beta = run(_model("beta", BETA_RIGHT))
    xss = run(_model("xss", range(0), wrong=PAYLOAD, errors=XSS_ERRORS))
    other = run(_model("alpha", ALPHA_RIGHT), system_prompt="Answer yes or no.")
    return Seeded(path, alpha, beta, xss, other)


class Tags(HTMLParser):
    """Start tags and their attributes, as a browser's tokenizer sees them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def names(self) -> set[str]:
        return {t for t, _ in self.tags}

    def attr(self, tag: str, name: str) -> list[str]:
        return [str(a[name]) for t, a in self.tags if t == tag and name in a]


@pytest.fixture(scope="module")
def served(seeded: Seeded) -> Iterator[ServerThread]:
    """The dashboard over the seeded runs plus six hours of gateway traffic with drift in the
    last hour (tests/web/traffic.py)."""
    from calipers.web import create_app
    from tests.web.traffic import add_monitor_traffic

    add_monitor_traffic(seeded.url)
    server = ServerThread(create_app(seeded.url), graceful_s=5).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian chromium through Playwright's ``executable_path`` (never a browser
    download); the test is skipped, with the reason, when either is missing."""
    import os
    import shutil

    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="pip install playwright (no browser download needed)"
    )
    chromium = (
        os.environ.get("CALIPERS_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if chromium is None:
        pytest.skip("no chromium executable (Debian: apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield b
        b.close()
