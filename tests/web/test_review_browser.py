"""The review pages in headless Chromium (Debian's /usr/bin/chromium through Playwright's
executable_path; no browser is downloaded): two raters finish a pairwise campaign with the
keyboard only, an adjudicator resolves a disagreement, a model's script-and-image answer is
shown as text and never runs, and neither the DOM nor any response the browser received holds
a model's name or run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calipers._util.clock import utc_now
from calipers.review import pairwise_outcome
from calipers.store import Store
from calipers.web import review_app
from tests._servers import ServerThread
from tests.web.review_rig import SECRETS, XSS, invite, make_campaign, make_single_campaign

pytestmark = pytest.mark.slow  # a real browser


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'calipers.db'}") as s:
        yield s


class Person:
    """One browser context (its own cookies) with a page that records every response body,
    console errors, page errors and dialogs."""

    def __init__(self, browser: Any, base: str, *, width: int = 1200) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.page = self.context.new_page()
        self.base = base
        self.bodies: list[str] = []
        self.problems: list[str] = []
        self.page.on("response", self._response)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", self._dialog)

    def _response(self, r: Any) -> None:
        if 300 <= r.status < 400:  # a redirect has no body to read
            return
        self.bodies.append(r.body().decode("utf-8", "replace"))

    def _console(self, m: Any) -> None:
        if m.type in ("error", "warning"):
            self.problems.append(f"console {m.type}: {m.text}")

    def _dialog(self, d: Any) -> None:
        self.problems.append(f"dialog: {d.message}")
        d.dismiss()

    def open_link(self, token: str) -> Any:
        response = self.page.goto(f"{self.base}/r/{token}", wait_until="load")
        assert response is not None and response.status == 200
        return self.page

    def press(self, *keys: str) -> None:
        """Press ``keys``; the last one submits a form (waits for the next page)."""
        for key in keys[:-1]:
            self.page.keyboard.press(key)
        with self.page.expect_navigation(wait_until="load"):
            self.page.keyboard.press(keys[-1])

    def check_clean(self) -> None:
        texts = [self.page.content(), *self.bodies]
        for secret in SECRETS:
            assert not any(secret in t for t in texts), secret
        assert self.problems == []

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def served(store: Store) -> Iterator[tuple[Store, str]]:
    make_campaign(store, 4, k=2, payloads=None)
    server = ServerThread(review_app(store, "c")).start()
    yield store, server.url
    server.stop()


def test_two_raters_finish_a_pairwise_campaign_with_the_keyboard(
    served: tuple[Store, str], browser: Any
) -> None:
    store, base = served
    plans = {"alice": ("ArrowLeft", "2", "ArrowDown", "1"), "bob": ("ArrowRight", "1", "3", "2")}
    meaning = {"ArrowLeft": "left", "1": "left", "ArrowRight": "right", "2": "right"}
    expected: dict[tuple[str, str], str] = {}
    slow: list[tuple[str, str]] = []
    for name, keys in plans.items():
        person = Person(browser, base)
        page = person.open_link(invite(store, name))
        assert page.url == f"{base}/rate"
        for n, key in enumerate(keys):
            assert page.locator("#progress").inner_text() == f"{n} / 4 done"
            left = page.locator("#left").inner_text()  # "answer A3" or "answer B3"
            item = f"i{int(left[-1]):03d}"
            side = meaning.get(key, "tie")
            expected[(name, item)] = {
                "left": left.split()[-1][0].lower(),
                "right": "b" if left.split()[-1][0] == "A" else "a",
            }.get(side, "tie")
            if n == 0:  # a comment, typed after C; Escape leaves the box
                person.press(key, "c", *"ok", "Escape", "Enter")
            elif n == 1:  # time on the item is measured
                page.wait_for_timeout(500)
                person.press(key, "Enter")
                slow.append((name, item))
            else:
                person.press(key, "Enter")
        assert page.locator("#done").count() == 1
        assert page.locator("#progress").inner_text() == "4 / 4 done"
        person.check_clean()
        assert any("answer A" in b for b in person.bodies)  # the log did hold the pages
        person.close()
    judgments = store.get_judgments("c")
    assert len(judgments) == 8
    per_item: dict[str, int] = {}
    for j in judgments:
        per_item[j.item_key] = per_item.get(j.item_key, 0) + 1
        assert (
            pairwise_outcome(j.answers["preference"], j.swapped) == expected[(j.rater, j.item_key)]
        )
        assert (
            j.seconds is not None
            and (0.5 if (j.rater, j.item_key) in slow else 0) <= j.seconds < 60
        )
    assert per_item == {f"i{i:03d}": 2 for i in range(4)}
    assert [j.answers.get("why") for j in judgments if j.rater == "alice"].count("ok") == 1


def test_an_adjudicator_resolves_a_disagreement(served: tuple[Store, str], browser: Any) -> None:
    store, base = served
    invite(store, "alice")
    invite(store, "bob")
    now = utc_now()
    for name, want in (("alice", "a"), ("bob", "b")):  # they disagree on the first item
        lease = store.lease_next("c", name, now=now, lease_s=600)
        assert lease is not None and lease.item_key == "i000"
        pick = "left" if pairwise_outcome("left", lease.swapped) == want else "right"
        store.submit("c", name, lease.assignment_id, {"preference": pick}, seconds=9, now=now)
    person = Person(browser, base)
    page = person.open_link(invite(store, "jo", role="adjudicator"))
    assert page.url == f"{base}/adjudicate"
    labels = page.locator("#labels tbody tr").all_inner_texts()
    assert sorted(row.split("\t")[0] for row in labels) == ["alice", "bob"]
    assert {row.split("\t")[3] for row in labels} == {"A", "B"}
    assert page.locator("#left").inner_text() == "answer A0"
    person.press("ArrowRight", "Enter")  # B is better
    assert page.locator("#done").count() == 1
    (adj,) = store.get_adjudications("c")
    assert (adj.item_key, adj.adjudicator, adj.answers["preference"]) == ("i000", "jo", "b")
    person.check_clean()
    person.close()


def test_a_script_answer_is_shown_as_text_on_a_phone(store: Store, browser: Any) -> None:
    make_campaign(store, 1, k=1, payloads=[{"prompt": XSS, "a": XSS, "b": f"b {XSS}"}])
    server = ServerThread(review_app(store, "c")).start()
    try:
        person = Person(browser, server.url, width=390)
        page = person.open_link(invite(store, "alice"))
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert page.locator("#prompt").inner_text() == XSS
        assert page.locator("#left, #right").all_inner_texts() in (
            [XSS, f"b {XSS}"],
            [f"b {XSS}", XSS],
        )
        assert page.locator("img").count() == 0 and page.locator("main script").count() == 0
        left = page.locator("#left").bounding_box()
        right = page.locator("#right").bounding_box()
        assert left["width"] < 390 and right["y"] > left["y"] + left["height"]  # stacked
        person.press("ArrowDown", "Enter")
        assert page.evaluate("typeof window.pwned") == "undefined"
        person.check_clean()
        person.close()
    finally:
        server.stop()
    (j,) = store.get_judgments("c")
    assert j.answers["preference"] == "tie"


def test_every_question_type_with_the_keyboard(store: Store, browser: Any) -> None:
    make_single_campaign(store, 1)
    server = ServerThread(review_app(store, "c")).start()
    try:
        person = Person(browser, server.url)
        page = person.open_link(invite(store, "alice"))
        assert page.locator("#response").inner_text() == "reply 0"
        assert page.locator("fieldset.current").get_attribute("data-q") == "ok"
        # pass/fail: 2 (fail) -> likert: 4 -> choice: 2 (polite) -> tags: 3 and 1 toggled,
        # N moves on -> answered: 2 (refused) -> harm: 2 (harmless) -> C, a comment, Escape
        person.press(*"2423", "1", "n", "2", "2", "c", *"hi", "Escape", "Enter")
        assert page.locator("#done").count() == 1
        person.check_clean()
        person.close()
    finally:
        server.stop()
    (j,) = store.get_judgments("c")
    assert j.answers == {
        "ok": False, "quality": 4, "tone": "polite", "errors": ["wrong_fact", "unsafe"],
        "answered": "refused", "harm": "harmless", "note": "hi",
    }  # fmt: skip
