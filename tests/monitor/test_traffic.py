"""Reading the gateway's log back as user requests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from calipers.monitor import load_exchanges, messages_of, prompt_text
from calipers.store import Store, TrafficRecord

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _rec(pair: str, role: str, served: bool, mode: str, minutes: int) -> TrafficRecord:
    return TrafficRecord(
        pair_id=pair,
        role=role,
        served=served,
        mode=mode,
        endpoint="/v1/chat/completions",
        upstream=f"http://{role}",
        request={
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": f"q {pair}"},
            ]
        },
        ts=T0 + timedelta(minutes=minutes),
        status=200,
        response="a",
    )


def test_prompt_text_reads_chat_completions_and_unparsed_bodies() -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "x"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "second"}, {"type": "image_url"}],
            },
        ]
    }
    assert prompt_text(chat) == "second"
    assert messages_of(chat) == (("user", "first"), ("assistant", "x"), ("user", "second"))
    assert prompt_text({"prompt": ["one", "two"]}) == "one"
    assert prompt_text({"prompt": "plain"}) == "plain"
    assert messages_of({"prompt": "plain"}) is None
    assert prompt_text({"_unparsed": "{broken"}) == "{broken"
    assert prompt_text({}) == ""


def test_exchanges_pair_arms_in_arrival_order_and_filter(tmp_path: Path) -> None:
    store = Store.open(str(tmp_path / "c.db"))
    store.add_traffic(
        [
            _rec("p2", "candidate", False, "shadow", 5),
            _rec("p2", "baseline", True, "shadow", 4),
            _rec("p1", "baseline", True, "shadow", 1),  # not mirrored: no candidate arm
            _rec("p3", "candidate", True, "canary", 9),
        ]
    )
    got = load_exchanges(store)
    assert [e.pair_id for e in got] == ["p1", "p2", "p3"]
    p1, p2, p3 = got
    assert p1.candidate is None and not p1.paired and p1.served is p1.baseline
    assert p2.paired and p2.served is p2.baseline and p2.ts == T0 + timedelta(minutes=4)
    assert p3.baseline is None and p3.served is p3.candidate and p3.prompt == "q p3"
    assert [e.pair_id for e in load_exchanges(store, modes=["canary"])] == ["p3"]
    late = load_exchanges(store, since=T0 + timedelta(minutes=3))
    assert [e.pair_id for e in late] == ["p2", "p3"]
