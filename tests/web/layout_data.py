"""A store that stresses the dashboard's layout, for the browser layout tests.

* runs of a fake model whose calls take minutes (long latency text), with a long model name;
* a day of shadow traffic (2025-06-02) that drifts from the third hour on in every window, so
  drift markers start near the left edge of the charts and crowd them;
* canary traffic (2026-11-01 08:00, one arm per request, so the charts have three series:
  served, baseline and candidate);
* A/B shadow traffic with judge scores: 60 requests (fewer than the test's burn-in of 100:
  no interval yet) in ``AB_EMPTY`` and 400 whose candidate fails 20% of calls in ``AB_HARM``
  (its primary metric has a chart with a band).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from calipers.models import FakeModel
from calipers.monitor import ABConfig, TrafficProfile, run_ab, synthetic_traffic
from calipers.runner import RunConfig, arun
from calipers.store import Store, TrafficRecord
from calipers.types import ModelRequest, ModelResponse
from tests.monitor._ab_fixtures import T0 as AB_T0
from tests.monitor._ab_fixtures import Arm, canary_traffic, judge_script, shadow_traffic

DAY = datetime(2025, 6, 2, tzinfo=UTC)
HOURS, PER_HOUR, DRIFT_FROM = 24, 60, 2
JUDGE = "llm_judge:helpfulness"
N_EMPTY, N_HARM, HARM_START = 60, 400, 1000  # shadow_traffic: request i is at T0 + 10 s * i
LONG_NAME = "org-with-a-long-name/model-with-an-even-longer-name-v2.5-instruct-q4_k_m"


def _range(since: datetime, until: datetime, **extra: str) -> str:
    return urlencode({"since": since.isoformat(), "until": until.isoformat(), **extra})


MONITOR_DRIFT = _range(
    DAY,
    DAY + timedelta(hours=HOURS),
    reference=f"{DAY.isoformat()}..{(DAY + timedelta(hours=2)).isoformat()}",
)
MONITOR_CANARY = _range(AB_T0, AB_T0 + timedelta(hours=2), window="10m", mode="canary")
AB_EMPTY = _range(AB_T0, AB_T0 + timedelta(seconds=10 * N_EMPTY), mode="shadow", scorer=JUDGE)
AB_HARM = _range(
    AB_T0 + timedelta(seconds=10 * HARM_START),
    AB_T0 + timedelta(seconds=10 * (HARM_START + N_HARM)),
    mode="shadow",
    scorer=JUDGE,
)


class SlowModel(FakeModel):
    """The fake model, but each call reports minutes of latency."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        r = await super().generate(request)
        assert request.messages is not None
        i = int(str(request.messages[-1].content).split()[1])
        return r.model_copy(update={"latency_s": 95.0 + 7.3 * i})


@dataclass(frozen=True)
class LayoutStore:
    path: Path
    slow_run: str

    @property
    def url(self) -> str:
        return str(self.path)


def _task(tmp: Path) -> str:
    rows = [
        {"id": f"q{i}", "input": f"item {i}", "target": "yes", "cat": "abc"[i % 3]}
        for i in range(30)
    ]
    (tmp / "yesno.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp / "yesno.yaml"
    spec.write_text(
        "name: yesno\ndata: yesno.jsonl\n"
        "fields: {id: id, input: input, target: target, category: cat}\n"
        "scorers: [exact_match]\n"
    )
    return str(spec)


def _drifting_day() -> list[TrafficRecord]:
    base = TrafficProfile()
    drifted = base.replace(
        topics={**base.topics, "cooking": 0.3},
        mean_words=12.0,
        response_words=45.0,
        refusal_rate=0.15,
    )
    rng = np.random.default_rng(1)
    out: list[TrafficRecord] = []
    for h in range(HOURS):
        out += synthetic_traffic(
            PER_HOUR,
            start=DAY + timedelta(hours=h),
            end=DAY + timedelta(hours=h + 1),
            rng=rng,
            profile=drifted if h >= DRIFT_FROM else base,
            prefix=f"d{h}-",
        )
    return out


def build_layout_store(tmp: Path) -> LayoutStore:
    path = tmp / "layout.db"
    spec = _task(tmp)

    def answer(req: ModelRequest) -> str:
        assert req.messages is not None
        return "yes" if int(str(req.messages[-1].content).split()[1]) % 4 else "no"

    model = SlowModel(answer, name=LONG_NAME)
    config = RunConfig(model=f"fake:{LONG_NAME}", tasks=(spec,))
    with Store.open(str(path)) as store:
        slow = asyncio.run(arun(config, store, provider=model)).run_id
        store.add_traffic(_drifting_day())
        store.add_traffic(canary_traffic(600, Arm(), Arm(latency_log_mean=6.4), seed=2))
        store.add_traffic(shadow_traffic(N_EMPTY, Arm(good=0.5), Arm(good=0.6), seed=4))
        store.add_traffic(
            shadow_traffic(N_HARM, Arm(error=0.01), Arm(error=0.2), seed=3, start=HARM_START)
        )
        judge = judge_script(tmp)
        asyncio.run(run_ab(store, ABConfig(mode="shadow", scorers=(JUDGE,), judge_model=judge)))
    return LayoutStore(path, slow)
