"""IFEval: the data, every instruction checker, strict vs loose, prompt vs instruction level."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from calipers.errors import ConfigError, DataError
from calipers.models import FakeModel
from calipers.runner import RunConfig, arun
from calipers.scorers import build_scorer
from calipers.scorers._ifeval import (
    CHECKERS,
    Args,
    evaluate,
    heuristic_language,
    langdetect_available,
    loose_variants,
    make_detector,
)
from calipers.scorers._ifeval._text import count_sentences, count_words
from calipers.store import Store
from calipers.tasks import LoadContext, get_task
from calipers.tasks.benchmarks import ifeval
from calipers.types import ModelResponse, Sample, SampleOutput, Score
from tests._data import DATA, needs_data

from ._ifeval_cases import CASES

needs_ifeval = needs_data("ifeval/input_data.jsonl")


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    ifeval.register()
    ifeval.register()  # idempotent


def check(iid: str, response: str, **kwargs: Any) -> bool:
    [r] = evaluate(response, [iid], [kwargs], heuristic_language)
    return bool(r.strict)


# ---- the data ---------------------------------------------------------------------------


@needs_ifeval
def test_541_prompts_load_with_their_instructions() -> None:
    samples = list(get_task("ifeval").load(LoadContext(data_dir=DATA)))
    assert len(samples) == 541 and len({s.id for s in samples}) == 541
    assert sum(len(s.fields["instruction_id_list"]) for s in samples) == 834
    first = samples[0]
    assert first.id == "1000" and first.input.startswith("Write a 300+ word summary")
    assert first.fields["instruction_id_list"] == [
        "punctuation:no_comma",
        "detectable_format:number_highlighted_sections",
        "length_constraints:number_words",
    ]
    assert first.fields["kwargs"] == [
        {},
        {"num_highlights": 3},
        {"relation": "at least", "num_words": 300},
    ]


@needs_ifeval
def test_every_instruction_id_in_the_data_has_a_checker_and_test_cases() -> None:
    assert DATA is not None
    ids = {
        i
        for line in (DATA / "ifeval" / "input_data.jsonl").open(encoding="utf-8")
        for i in json.loads(line)["instruction_id_list"]
    }
    assert len(ids) == 25
    assert sorted(ids - set(CHECKERS)) == [], "instruction ids without a checker"
    assert sorted(ids - set(CASES)) == [], "instruction ids without test cases"


def test_missing_data_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"ifeval.*input_data\.jsonl"):
        get_task("ifeval").load(LoadContext(data_dir=tmp_path / "nowhere"))
    (tmp_path / "ifeval").mkdir()
    (tmp_path / "ifeval" / "input_data.jsonl").write_text('{"key": 1, "prompt": "x"}\n')
    with pytest.raises(DataError, match=r"input_data\.jsonl:1: expected key, prompt"):
        get_task("ifeval").load(LoadContext(data_dir=tmp_path))


def test_task_card() -> None:
    task = get_task("ifeval")
    assert (task.kind, task.version, task.derived is not None) == ("generate", "2", True)
    assert task.metrics == ["prompt_strict", "prompt_loose", "inst_strict", "inst_loose"]
    assert task.params.max_tokens == 1280 and task.params.temperature == 0
    [sc] = task.scorers
    detector = "langdetect" if langdetect_available() else "heuristic"
    assert sc.spec.args == {"language_detector": detector} and sc.needs == "generation"


# ---- each checker: hand-made positive and negative examples ------------------------------


@pytest.mark.parametrize("iid", sorted(CASES))
def test_checker_accepts_and_rejects(iid: str) -> None:
    kwargs, good, bad = CASES[iid]
    assert len(good) >= 2 and len(bad) >= 2
    for text in good:
        assert check(iid, text, **kwargs), f"{iid} should accept {text!r}"
    for text in bad:
        assert not check(iid, text, **kwargs), f"{iid} should reject {text!r}"


def test_counting_words_and_sentences() -> None:
    assert count_words("Don't stop: well-known *bold* words, 3.5 times!") == 8  # 3.5 is 2
    assert count_words("यह एक परीक्षा है।") == 4  # vowel signs do not split a word
    text = (
        "Mr. Smith met Dr. J. Watson at 3.5 p.m. in the U.S. capital. Was it fun? "
        "Yes... it was! Approx. five people came.\nNo period here"
    )
    assert count_sentences(text) == 5
    assert count_sentences("") == 0 and count_sentences("...") == 0


def test_a_blank_response_follows_nothing() -> None:
    assert not check("punctuation:no_comma", "   \n ")
    assert not check("keywords:forbidden_words", "", forbidden_words=["x"])


def test_bad_instruction_data_is_a_data_error() -> None:
    with pytest.raises(DataError, match="No IFEval checker for instruction 'made:up'"):
        check("made:up", "text")
    with pytest.raises(DataError, match="missing argument 'num_words'"):
        check("length_constraints:number_words", "text", relation="at least")
    with pytest.raises(DataError, match="relation 'about' is not one of"):
        check("length_constraints:number_words", "text", relation="about", num_words=3)
    args = Args("x", {"n": "3", "none": None}, heuristic_language)
    with pytest.raises(DataError, match="must be an integer"):
        args.integer("n")
    with pytest.raises(DataError, match="missing argument 'none'"):
        args.text("none")  # None values (as in the HF copy of the data) count as absent


# ---- strict vs loose ---------------------------------------------------------------------

SURE = 'Sure, here is the JSON you asked for:\n{"name": "calipers"}'


def test_loose_forgives_a_leading_sure_here_is_line() -> None:
    ids = ["detectable_format:json_format", "punctuation:no_comma"]
    [js, comma] = evaluate(SURE, ids, [{}, {}], heuristic_language)
    assert (js.strict, js.loose) == (False, True)  # the first line breaks JSON; loose drops it
    assert (comma.strict, comma.loose) == (False, True)  # the comma is in that line too


def test_loose_removes_markdown_asterisks_and_the_last_line() -> None:
    text = "My plan is simple.\n**Is there anything else I can help with?**"
    [r] = evaluate(
        text,
        ["startend:end_checker"],
        [{"end_phrase": "Is there anything else I can help with?"}],
        heuristic_language,
    )
    assert (r.strict, r.loose) == (False, True)
    assert loose_variants("a\n*b*\nc") == [
        "a\n*b*\nc",
        "*b*\nc",
        "a\n*b*",
        "*b*",
        "a\nb\nc",
        "b\nc",
        "a\nb",
        "b",
    ]


def _score(sample: Sample, text: str) -> Score:
    scorer = build_scorer({"name": "ifeval", "args": {"language_detector": "heuristic"}})
    return asyncio.run(scorer(sample, SampleOutput(response=ModelResponse(text=text))))


def test_scorer_gives_prompt_and_instruction_level_values_and_counts() -> None:
    sample = Sample(
        id="p",
        input="...",
        fields={
            "instruction_id_list": [
                "detectable_format:json_format",
                "punctuation:no_comma",
                "keywords:existence",
            ],
            "kwargs": [{}, {}, {"keywords": ["banana"]}],
        },
    )
    score = _score(sample, SURE)
    assert score.values == {
        "prompt_strict": 0.0,
        "prompt_loose": 0.0,
        "inst_strict": 0.0,
        "inst_loose": pytest.approx(2 / 3),
    }
    assert score.metadata == {
        "instructions": sample.fields["instruction_id_list"],
        "strict": [False, False, False],
        "loose": [True, True, False],
        "n_instructions": 3,
        "n_strict": 0,
        "n_loose": 2,
    }
    assert score.answer == (
        "not followed: detectable_format:json_format, punctuation:no_comma, keywords:existence"
    )
    assert score.explanation == (
        "strict not followed: detectable_format:json_format, punctuation:no_comma, "
        "keywords:existence; loose not followed: keywords:existence"
    )
    with pytest.raises(DataError, match="no instruction_id_list"):
        _score(Sample(id="q", input="..."), "text")


# ---- prompt level vs instruction level ---------------------------------------------------


def _record(pid: str, strict: list[bool], loose: list[bool], error: str | None = None) -> Any:
    meta = {"instructions": [f"i{k}" for k in range(len(strict))], "strict": strict, "loose": loose}
    return SimpleNamespace(sample_id=pid, error=error, score_details={"ifeval": {"metadata": meta}})


def test_instruction_level_is_a_micro_average_not_a_mean_of_fractions() -> None:
    records = [
        _record("a", [True], [True]),
        _record("b", [False] * 3, [True, True, False]),
        _record("c", [True, False], [True, True]),
        _record("d", [True], [True], error="model: boom"),
    ]  # errors are excluded
    est = ifeval.instruction_level(records)
    strict, loose = est["inst_level_strict"], est["inst_level_loose"]
    assert strict.value == pytest.approx(2 / 6) and (strict.n, strict.method) == (6, "cluster-t")
    assert loose.value == pytest.approx(5 / 6) and loose.n == 6
    mean_of_fractions = (1 + 0 + 0.5) / 3
    assert not math.isclose(strict.value, mean_of_fractions)
    assert strict.low < strict.value < strict.high
    assert ifeval.instruction_level([])["inst_level_strict"].n == 0  # NaN, n=0: no data


def test_by_instruction_breakdown() -> None:
    records = [_record("a", [True, False], [True, True]), _record("b", [False], [True])]
    out = ifeval.by_instruction(records)
    assert sorted(out) == ["i0", "i1"]
    assert (out["i0"]["strict"].value, out["i0"]["strict"].n) == (0.5, 2)
    assert out["i0"]["strict"].method == "wilson" and out["i1"]["loose"].value == 1.0


@needs_ifeval
def test_runs_through_the_runner_with_instruction_level_in_the_summary() -> None:
    config = RunConfig(model="fake:echo", tasks=("ifeval",), limit=12, data_dir=str(DATA))
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=FakeModel()))  # echoes the prompt
    ts = result.summary.tasks["ifeval"]
    assert (ts.n_samples, ts.n_errors, ts.primary) == (12, 0, "prompt_strict")
    level = ts.metrics["inst_level_strict"]
    assert level.method == "cluster-t" and level.n >= 12
    assert ts.metrics["inst_loose"].n == 12


# ---- language detection ------------------------------------------------------------------

LANGUAGE_SAMPLES = {
    "en": "The weather is nice today and we are going to the park with the children.",
    "de": "Das Wetter ist heute schön und wir gehen mit den Kindern in den Park.",
    "it": "Il tempo è bello oggi e andiamo al parco con i bambini della scuola.",
    "pt": "O tempo está bom hoje e nós vamos ao parque com as crianças da escola.",
    "fi": "Sää on tänään kaunis ja me menemme puistoon lasten kanssa, mutta ei kauas.",
    "sw": "Hali ya hewa ni nzuri leo na tunaenda kwenye bustani pamoja na watoto.",
    "vi": "Hôm nay thời tiết đẹp và chúng tôi đi công viên với những đứa trẻ.",
    "ru": "Сегодня хорошая погода, и мы идём в парк с детьми, это было так.",
    "bg": "Времето днес е хубаво и ние отиваме в парка с децата, че е така.",
    "ar": "الطقس جميل اليوم ونحن ذاهبون إلى الحديقة مع الأطفال في الصباح.",
    "fa": "هوا امروز خوب است و ما با بچه ها به پارک می رویم.",
    "ur": "آج موسم اچھا ہے اور ہم بچوں کے ساتھ پارک میں جا رہے ہیں۔",
    "hi": "आज मौसम अच्छा है और हम बच्चों के साथ पार्क में जा रहे हैं।",
    "mr": "आज हवामान छान आहे आणि आम्ही मुलांसोबत बागेत जात आहोत.",
    "ne": "आज मौसम राम्रो छ र हामी केटाकेटीसँग पार्कमा जाँदैछौं।",
    "ko": "오늘 날씨가 좋아서 아이들과 공원에 갑니다.",
    "th": "วันนี้อากาศดีและเราจะไปสวนสาธารณะกับเด็กๆ",
    "bn": "আজ আবহাওয়া ভালো এবং আমরা বাচ্চাদের সাথে পার্কে যাচ্ছি।",
    "gu": "આજે હવામાન સારું છે અને અમે બાળકો સાથે પાર્કમાં જઈએ છીએ.",
    "pa": "ਅੱਜ ਮੌਸਮ ਵਧੀਆ ਹੈ ਅਤੇ ਅਸੀਂ ਬੱਚਿਆਂ ਨਾਲ ਪਾਰਕ ਜਾ ਰਹੇ ਹਾਂ।",
    "ta": "இன்று வானிலை நன்றாக உள்ளது, நாங்கள் குழந்தைகளுடன் பூங்காவுக்கு செல்கிறோம்.",
    "te": "ఈరోజు వాతావరణం బాగుంది మరియు మేము పిల్లలతో పార్కుకు వెళ్తున్నాము.",
    "kn": "ಇಂದು ಹವಾಮಾನ ಚೆನ್ನಾಗಿದೆ ಮತ್ತು ನಾವು ಮಕ್ಕಳೊಂದಿಗೆ ಉದ್ಯಾನವನಕ್ಕೆ ಹೋಗುತ್ತಿದ್ದೇವೆ.",
}


@pytest.mark.parametrize("lang", sorted(LANGUAGE_SAMPLES))
def test_heuristic_detects_the_languages_ifeval_asks_for(lang: str) -> None:
    assert heuristic_language(LANGUAGE_SAMPLES[lang]) == lang
    assert check("language:response_language", LANGUAGE_SAMPLES[lang], language=lang)
    other = "en" if lang != "en" else "de"
    assert not check("language:response_language", LANGUAGE_SAMPLES[lang], language=other)


def test_no_evidence_is_not_a_failure_and_unknown_detectors_are_refused() -> None:
    assert heuristic_language("12345 !!!") is None
    assert check("language:response_language", "12345 !!!", language="fr")
    with pytest.raises(ConfigError, match="Unknown language detector 'fasttext'"):
        make_detector("fasttext")


def test_langdetect_detector() -> None:
    if not langdetect_available():
        with pytest.raises(ConfigError, match="pip install langdetect"):
            make_detector("langdetect")
        return
    detect = make_detector("langdetect")
    assert detect(LANGUAGE_SAMPLES["de"]) == "de" and detect(LANGUAGE_SAMPLES["ko"]) == "ko"
    assert detect("12345") is None
