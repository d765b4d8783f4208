"""Review web test rig: a pairwise campaign whose items' sources name models and runs that must
never reach a rater's page, people invited with real argon2 tokens, and a signed-in client."""

from __future__ import annotations

import re
from typing import Any

from starlette.testclient import TestClient

from calipers.review import issue_token
from calipers.store import RaterRole, ReviewCampaignRecord, ReviewItemRecord, Store

# strings that identify the models and runs: in every item's source, never on a rater's page
SECRETS = ("model-zeta-9000", "model-omega-7b", "run-20260101-secret1", "run-20260102-secret2")
PAIR_QUESTIONS: list[dict[str, Any]] = [
    {"type": "preference", "id": "preference", "prompt": "Which answer is better?"},
    {"type": "comment", "id": "why", "prompt": "Why? (optional)"},
]
XSS = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
LOOPBACK = "http://127.0.0.1"


def pair_payload(i: int) -> dict[str, Any]:
    return {"prompt": f"prompt {i}", "a": f"answer A{i}", "b": f"answer B{i}"}


def make_campaign(
    store: Store,
    n: int,
    *,
    name: str = "c",
    k: int = 2,
    questions: list[dict[str, Any]] | None = None,
    payloads: list[dict[str, Any]] | None = None,
) -> None:
    """A pairwise campaign of ``n`` items; item ``i``'s source names both models and runs."""
    store.create_campaign(
        ReviewCampaignRecord(
            name=name, kind="pairwise", questions=questions or PAIR_QUESTIONS, k=k, seed=7
        )
    )
    store.add_review_items(
        name,
        [
            ReviewItemRecord(
                item_key=f"i{i:03d}",
                payload=payloads[i] if payloads else pair_payload(i),
                source={
                    "a": {"model": SECRETS[0], "run_id": SECRETS[2]},
                    "b": {"model": SECRETS[1], "run_id": SECRETS[3]},
                },
            )
            for i in range(n)
        ],
    )


def invite(store: Store, name: str, *, role: RaterRole = "rater", campaign: str = "c") -> str:
    """Invite ``name``; return the token text (the person's link is ``/r/TEXT``)."""
    token = issue_token()
    store.add_rater(campaign, name, token.hash, role=role, token_key=token.key)
    return token.text


def signed_in(app: Any, token: str) -> TestClient:
    """A client that opened its personal link (and so holds a session cookie)."""
    client = TestClient(app, base_url=LOOPBACK)
    r = client.get(f"/r/{token}", follow_redirects=False)
    assert r.status_code == 303, r.text
    return client


def field(html: str, name: str) -> str:
    m = re.search(rf'name="{re.escape(name)}" value="([^"]*)"', html)
    assert m is not None, f"no field {name}"
    return m.group(1)


def assignment_of(html: str) -> int:
    m = re.search(r'action="/rate/(\d+)"', html)
    assert m is not None, "no item on the page"
    return int(m.group(1))


def pre(html: str, ident: str) -> str:
    m = re.search(rf'<pre class="text" id="{ident}">(.*?)</pre>', html, re.S)
    assert m is not None, f"no {ident}"
    return m.group(1)


SINGLE_QUESTIONS: list[dict[str, Any]] = [
    {"type": "pass_fail", "id": "ok", "prompt": "Is the answer acceptable?"},
    {"type": "likert", "id": "quality", "prompt": "Quality", "low": "poor", "high": "great"},
    {"type": "choice", "id": "tone", "prompt": "Tone", "options": ["curt", "polite", "gushing"]},
    {
        "type": "tags",
        "id": "errors",
        "prompt": "Errors",
        "taxonomy": [{"id": "wrong_fact"}, {"id": "off_topic"}, {"id": "unsafe"}],
    },
    {"type": "refusal"},
    {"type": "comment", "id": "note", "prompt": "Anything else?"},
]


def make_single_campaign(store: Store, n: int, *, k: int = 1) -> None:
    """A single-answer campaign of ``n`` items using every question type."""
    store.create_campaign(
        ReviewCampaignRecord(name="c", kind="single", questions=SINGLE_QUESTIONS, k=k)
    )
    store.add_review_items(
        "c",
        [
            ReviewItemRecord(
                item_key=f"s{i:03d}",
                payload={"prompt": f"question {i}", "response": f"reply {i}", "reference": "ref"},
                source={"model": SECRETS[0], "run_id": SECRETS[2]},
            )
            for i in range(n)
        ],
    )
