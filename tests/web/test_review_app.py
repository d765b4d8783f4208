"""The review pages over HTTP (TestClient): personal links and sessions, the cookie's flags,
CSRF on every form, the Host check, another rater's lease (403), an expired lease (409), left
and right as the lease says, model output as text, and no model identity in any page."""

from __future__ import annotations

import html as html_lib
import time
from collections.abc import Iterator
from datetime import timedelta
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from calipers._util.clock import utc_now
from calipers.review import pairwise_outcome
from calipers.store import Store
from calipers.web import REVIEW_CSP, review_app
from tests.web.review_rig import (
    LOOPBACK,
    SECRETS,
    XSS,
    assignment_of,
    field,
    invite,
    make_campaign,
    make_single_campaign,
    pair_payload,
    pre,
    signed_in,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'calipers.db'}") as s:
        yield s


def _rate(client: TestClient, choice: str = "left") -> int:
    """Answer the item on the rater's page; return the response status."""
    page = client.get("/rate").text
    aid = assignment_of(page)
    r = client.post(
        f"/rate/{aid}",
        data={"csrf": field(page, "csrf"), "q.preference": choice, "seconds": "7.5"},
        follow_redirects=False,
    )
    return r.status_code


def test_the_personal_link_sets_a_strict_cookie_and_leaves_the_address(store: Store) -> None:
    make_campaign(store, 2)
    token = invite(store, "alice")
    client = TestClient(review_app(store, "c"), base_url=LOOPBACK)
    r = client.get(f"/r/{token}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/rate"
    assert r.headers["referrer-policy"] == "no-referrer"
    jar: SimpleCookie = SimpleCookie()
    jar.load(r.headers["set-cookie"])
    (morsel,) = jar.values()
    assert morsel["httponly"] is True and morsel["samesite"] == "strict" and morsel["path"] == "/"
    assert not morsel["secure"]  # plain http on loopback
    assert token not in r.headers["set-cookie"] and len(morsel.value) >= 40
    assert client.get("/rate").status_code == 200
    secure = TestClient(review_app(store, "c", secure_cookies=True), base_url=LOOPBACK)
    r = secure.get(f"/r/{token}", follow_redirects=False)
    assert "secure" in r.headers["set-cookie"].lower().split("; ")


def test_a_bad_link_is_refused_without_detail(store: Store) -> None:
    make_campaign(store, 2)
    token = invite(store, "alice")
    make_campaign(store, 1, name="other")
    stranger = invite(store, "eve", campaign="other")
    client = TestClient(review_app(store, "c"), base_url=LOOPBACK)
    key, secret = token.split(".")
    wrong = f"{key}.{secret[::-1]}"
    for bad in (wrong, "garbage", f"{'x' * 12}.{secret}", stranger):
        r = client.get(f"/r/{bad}", follow_redirects=False)
        assert r.status_code == 403, bad
        assert "set-cookie" not in r.headers and "argon" not in r.text.lower()
        assert secret not in r.text and bad not in r.text
    assert client.get("/rate").status_code == 401  # no session was made


def test_roles_and_security_headers(store: Store) -> None:
    make_campaign(store, 2)
    app = review_app(store, "c")
    rater = signed_in(app, invite(store, "alice"))
    owner = signed_in(app, invite(store, "olga", role="owner"))
    r = rater.get("/rate")
    assert r.headers["content-security-policy"] == REVIEW_CSP
    assert "default-src 'self'" in REVIEW_CSP and "script-src" not in REVIEW_CSP
    assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer"
    assert rater.get("/owner").status_code == 403 and rater.get("/adjudicate").status_code == 403
    assert owner.get("/owner").status_code == 200 and owner.get("/adjudicate").status_code == 200
    assert owner.get("/", follow_redirects=False).headers["location"] == "/owner"
    anon = TestClient(app, base_url=LOOPBACK)
    for path in ("/rate", "/owner", "/adjudicate", "/"):
        assert anon.get(path, follow_redirects=False).status_code == 401, path
    js = anon.get("/static/review.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "<script" not in r.text.replace('<script src="/static/review.js" defer></script>', "")


def test_a_foreign_host_is_refused(store: Store) -> None:
    make_campaign(store, 1)
    token = invite(store, "alice")
    client = TestClient(review_app(store, "c"), base_url="http://evil.example")
    r = client.get(f"/r/{token}", follow_redirects=False)
    assert r.status_code == 421 and "set-cookie" not in r.headers
    ok = TestClient(review_app(store, "c", allowed_hosts=["review.example.org"]))
    assert ok.get("/", headers={"host": "review.example.org"}).status_code == 401
    assert ok.get("/", headers={"host": "evil.example"}).status_code == 421


def test_every_form_needs_the_sessions_csrf_token(store: Store) -> None:
    make_campaign(store, 2)
    app = review_app(store, "c")
    alice = signed_in(app, invite(store, "alice"))
    owner = signed_in(app, invite(store, "olga", role="owner"))
    page = alice.get("/rate").text
    aid = assignment_of(page)
    good = field(page, "csrf")
    answer = {"q.preference": "left"}
    assert alice.post(f"/rate/{aid}", data=answer).status_code == 403  # missing
    assert alice.post(f"/rate/{aid}", data={**answer, "csrf": "x" * 43}).status_code == 403
    assert alice.post(f"/rate/{aid}/skip", data={"csrf": ""}).status_code == 403
    other = field(owner.get("/owner").text, "csrf")  # a real token, of another session
    assert alice.post(f"/rate/{aid}", data={**answer, "csrf": other}).status_code == 403
    cross = alice.post(
        f"/rate/{aid}", data={**answer, "csrf": good}, headers={"origin": "http://evil.example"}
    )
    assert cross.status_code == 403
    fetched = {"sec-fetch-site": "cross-site", "origin": "null"}
    cross = alice.post(f"/rate/{aid}", data={**answer, "csrf": good}, headers=fetched)
    assert cross.status_code == 403
    no_csrf = {"rater": "alice", "action": "exclude"}
    assert owner.post("/owner/raters", data=no_csrf).status_code == 403
    assert owner.post("/logout", data={}).status_code == 403
    assert store.get_judgments("c") == [] and not store.get_rater("c", "alice").excluded
    ok = alice.post(f"/rate/{aid}", data={**answer, "csrf": good}, follow_redirects=False)
    assert ok.status_code == 303 and len(store.get_judgments("c")) == 1


def test_another_raters_lease_is_403_and_an_expired_one_409(store: Store) -> None:
    make_campaign(store, 3)
    app = review_app(store, "c", lease_s=60)
    alice = signed_in(app, invite(store, "alice"))
    bob = signed_in(app, invite(store, "bob"))
    alices = assignment_of(alice.get("/rate").text)
    bob_page = bob.get("/rate").text
    data = {"csrf": field(bob_page, "csrf"), "q.preference": "right"}
    assert bob.post(f"/rate/{alices}", data=data).status_code == 403
    assert bob.post(f"/rate/{alices}/skip", data={"csrf": data["csrf"]}).status_code == 403
    assert store.get_judgments("c") == []
    # bob's own lease runs out: his answer is refused with 409 and nothing is stored
    assert store.expire_leases("c", now=utc_now() + timedelta(seconds=61)) >= 1
    r = bob.post(f"/rate/{assignment_of(bob_page)}", data=data, follow_redirects=False)
    assert r.status_code == 409 and "went back to the pool" in r.text and 'href="/rate"' in r.text
    assert store.get_judgments("c") == []
    assert bob.get("/rate").status_code == 200  # and he goes on with a new lease


def test_left_and_right_follow_the_lease_and_identities_never_show(store: Store) -> None:
    make_campaign(store, 6, k=2)
    app = review_app(store, "c")
    bodies: list[str] = []
    for name in ("alice", "bob"):
        client = signed_in(app, invite(store, name))
        for i in range(6):
            page = client.get("/rate").text
            bodies.append(page)
            left = html_lib.unescape(pre(page, "left"))
            shown_i = int(left[-1])
            assert html_lib.unescape(pre(page, "prompt")) == pair_payload(shown_i)["prompt"]
            pick = "left" if i % 2 else "right"
            aid = assignment_of(page)
            r = client.post(
                f"/rate/{aid}",
                data={"csrf": field(page, "csrf"), "q.preference": pick, "seconds": "4"},
                follow_redirects=False,
            )
            assert r.status_code == 303
            (j,) = store.get_judgments("c", assignment_id=aid)
            # the letter shown on the left is the one the store says was on the left
            left_letter = left.split()[-1][0].lower()
            assert left_letter == ("b" if j.swapped else "a")
            picked = left_letter if pick == "left" else {"a": "b", "b": "a"}[left_letter]
            assert pairwise_outcome(j.answers["preference"], j.swapped) == picked
            assert j.seconds == 4.0
        done = client.get("/rate").text
        assert 'id="done"' in done and "6 / 6 done" in done
        bodies.append(done)
    swaps = [j.swapped for j in store.get_judgments("c")]
    assert True in swaps and False in swaps  # both orders occur
    owner = signed_in(app, invite(store, "olga", role="owner"))
    judge = signed_in(app, invite(store, "jo", role="adjudicator"))
    bodies += [owner.get("/owner").text, judge.get("/adjudicate").text]
    for body in bodies:
        for secret in SECRETS:
            assert secret not in body


def test_model_output_is_shown_as_text(store: Store) -> None:
    payloads = [{"prompt": XSS, "a": XSS, "b": "<b>bold</b> & more"}]
    make_campaign(store, 1, payloads=payloads)
    client = signed_in(review_app(store, "c"), invite(store, "alice"))
    page = client.get("/rate").text
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert html_lib.escape(XSS, quote=False) in page.replace("&#34;", '"')
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in page


def test_an_incomplete_answer_is_400_and_a_skip_is_no_label(store: Store) -> None:
    make_campaign(store, 2, k=1)
    client = signed_in(review_app(store, "c"), invite(store, "alice"))
    page = client.get("/rate").text
    aid, csrf = assignment_of(page), field(page, "csrf")
    r = client.post(f"/rate/{aid}", data={"csrf": csrf, "q.why": "hmm"})
    assert r.status_code == 400 and "preference" in r.text and assignment_of(r.text) == aid
    r = client.post(f"/rate/{aid}", data={"csrf": csrf, "q.preference": "sideways"})
    assert r.status_code == 400
    skipped = client.post(f"/rate/{aid}/skip", data={"csrf": csrf}, follow_redirects=False)
    assert skipped.status_code == 303
    assert store.get_judgments("c") == []
    assert assignment_of(client.get("/rate").text) != aid  # the skipped item is not offered again
    assert _rate(client) == 303
    assert 'id="done"' in client.get("/rate").text


def test_waiting_for_other_raters(store: Store) -> None:
    make_campaign(store, 1, k=2)
    app = review_app(store, "c")
    alice = signed_in(app, invite(store, "alice"))
    bob = signed_in(app, invite(store, "bob"))
    carol = signed_in(app, invite(store, "carol"))
    alice.get("/rate")
    bob.get("/rate")
    page = carol.get("/rate").text  # both slots are leased: carol waits
    assert 'id="waiting"' in page and 'http-equiv="refresh"' in page and "0 / 1 done" in page


def test_owner_excludes_and_includes_a_rater(store: Store) -> None:
    make_campaign(store, 3)
    app = review_app(store, "c")
    bob = signed_in(app, invite(store, "bob"))
    owner = signed_in(app, invite(store, "olga", role="owner"))
    page = bob.get("/rate").text
    csrf = field(owner.get("/owner").text, "csrf")
    out = {"csrf": csrf, "rater": "bob", "action": "exclude", "reason": "random clicks"}
    r = owner.post("/owner/raters", data=out, follow_redirects=False)
    assert r.status_code == 303 and store.get_rater("c", "bob").excluded
    assert "random clicks" in owner.get("/owner").text
    tie = {"csrf": field(page, "csrf"), "q.preference": "tie"}
    r = bob.post(f"/rate/{assignment_of(page)}", data=tie)
    assert r.status_code == 403 and "excluded" in r.text
    assert bob.get("/rate").status_code == 403 and store.get_judgments("c") == []
    owner.post("/owner/raters", data={"csrf": csrf, "rater": "bob", "action": "include"})
    assert not store.get_rater("c", "bob").excluded
    assert _rate(bob) == 303
    nobody = {"csrf": csrf, "rater": "nobody", "action": "exclude"}
    assert owner.post("/owner/raters", data=nobody).status_code == 404


def test_an_adjudicator_decides_a_disagreement(store: Store) -> None:
    make_campaign(store, 1, k=2)
    app = review_app(store, "c")
    alice = signed_in(app, invite(store, "alice"))
    bob = signed_in(app, invite(store, "bob"))
    judge = signed_in(app, invite(store, "jo", role="adjudicator"))
    assert 'id="done"' in judge.get("/adjudicate").text  # nothing yet
    assert _rate(alice, "left") == 303
    (first,) = store.get_judgments("c")
    alice_pick = pairwise_outcome("left", first.swapped)
    bob_left = html_lib.unescape(pre(bob.get("/rate").text, "left")).split()[-1][0].lower()
    # bob picks the other answer, whichever side it is on
    assert _rate(bob, "right" if bob_left == alice_pick else "left") == 303
    picks = {pairwise_outcome(j.answers["preference"], j.swapped) for j in store.get_judgments("c")}
    assert picks == {"a", "b"}
    page = judge.get("/adjudicate").text
    assert "alice" in page and "bob" in page and "i000" in page
    labels = page[page.index('id="labels"') :]
    assert labels.index(">A<") > 0 and labels.index(">B<") > 0  # each rater's pick, as A or B
    assert html_lib.unescape(pre(page, "left")) == "answer A0"  # A on the left
    r = judge.post(
        "/adjudicate",
        data={"csrf": field(page, "csrf"), "item": "i000", "q.preference": "right", "note": "B"},
        follow_redirects=False,
    )
    assert r.status_code == 303
    (adj,) = store.get_adjudications("c")
    assert (adj.item_key, adj.adjudicator, adj.answers["preference"], adj.note) == (
        "i000", "jo", "b", "B",
    )  # fmt: skip
    assert 'id="done"' in judge.get("/adjudicate").text
    for body in (page, judge.get("/adjudicate").text):
        assert not any(s in body for s in SECRETS)


def test_sessions_survive_a_restart_and_end_on_sign_out(store: Store) -> None:
    make_campaign(store, 2)
    client = signed_in(review_app(store, "c"), invite(store, "alice"))
    csrf = field(client.get("/rate").text, "csrf")
    again = TestClient(review_app(store, "c"), base_url=LOOPBACK, cookies=client.cookies)
    assert again.get("/rate").status_code == 200  # a new app over the same store
    assert again.post("/logout", data={"csrf": csrf}).status_code == 200
    replay = TestClient(review_app(store, "c"), base_url=LOOPBACK, cookies=client.cookies)
    assert replay.get("/rate").status_code == 401


def test_a_single_item_with_every_question_type(store: Store) -> None:
    make_single_campaign(store, 2)
    client = signed_in(review_app(store, "c"), invite(store, "alice"))
    page = client.get("/rate").text
    assert html_lib.unescape(pre(page, "response")) == "reply 0" and "ref" in pre(page, "reference")
    assert 'id="left"' not in page and not any(s in page for s in SECRETS)
    for qid in ("ok", "quality", "tone", "errors", "answered", "harm", "note"):
        assert f'data-q="{qid}"' in page
    assert page.count('type="checkbox" name="q.errors"') == 3 and "poor" in page
    data = {"csrf": field(page, "csrf"), "q.ok": "fail", "q.quality": "4", "q.tone": "polite",
            "q.answered": "refused", "q.harm": "harmless", "q.note": "  too curt  "}  # fmt: skip
    body = "&".join(f"{k}={v}" for k, v in data.items()) + "&q.errors=unsafe&q.errors=wrong_fact"
    r = client.post(
        f"/rate/{assignment_of(page)}",
        content=body.replace(" ", "+"),
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    (j,) = store.get_judgments("c")
    assert j.answers == {
        "ok": False, "quality": 4, "tone": "polite", "errors": ["wrong_fact", "unsafe"],
        "answered": "refused", "harm": "harmless", "note": "too curt",
    }  # fmt: skip
    page = client.get("/rate").text
    bad = {"csrf": field(page, "csrf"), "q.ok": "pass", "q.quality": "9"}
    r = client.post(f"/rate/{assignment_of(page)}", data=bad)
    assert r.status_code == 400 and "quality" in r.text.lower()


def test_the_owner_sees_progress_and_flags(store: Store) -> None:
    make_campaign(store, 12, k=2)
    app = review_app(store, "c")
    alice = signed_in(app, invite(store, "alice"))
    bob = signed_in(app, invite(store, "bob"))
    for i in range(12):
        for client, pick, secs in ((alice, "left", "1"), (bob, ("left", "right")[i % 2], "20")):
            page = client.get("/rate").text
            data = {"csrf": field(page, "csrf"), "q.preference": pick, "seconds": secs}
            assert client.post(f"/rate/{assignment_of(page)}", data=data).status_code == 200
    owner = signed_in(app, invite(store, "olga", role="owner"))
    page = owner.get("/owner").text
    assert "12 of 12 items have their 2 judgments (24 of 24 judgments)" in page

    def row(name: str) -> str:
        start = page.index(f'data-rater="{name}"')
        return page[start : page.index("</tr>", start)]

    # 12 of 12 left: Wilson 95% interval [0.758, 1.0] excludes one half; 6 of 12 does not
    assert "picks left 100% of the time" in row("alice") and "<td>1.0</td>" in row("alice")
    assert "fast" in row("alice")  # 1 s an item, under the default minimum of 5 s
    assert "100% [76, 100]" in row("alice")
    assert '<td class="flags">–</td>' in row("bob") and "50% [25, 75]" in row("bob")


def test_a_lease_that_ran_out_cannot_be_answered(store: Store) -> None:
    make_campaign(store, 2, k=1)
    alice = signed_in(review_app(store, "c", lease_s=0.3), invite(store, "alice"))
    page = alice.get("/rate").text
    time.sleep(0.4)  # nobody marked it expired: the answer itself finds it past its time
    data = {"csrf": field(page, "csrf"), "q.preference": "left"}
    r = alice.post(f"/rate/{assignment_of(page)}", data=data, follow_redirects=False)
    assert r.status_code == 409 and store.get_judgments("c") == []
