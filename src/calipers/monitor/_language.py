"""A cheap language label for each prompt, good enough to see shares move.

With ``langdetect`` installed (the ``ifeval`` extra) it decides, seeded so the same text gets
the same label. Otherwise a heuristic: the writing system first (Cyrillic, Greek, Arabic,
Hebrew, Devanagari, Thai, Hangul, kana, Han), and for Latin script the language whose common
function words occur most (English, Spanish, French, German, Italian, Portuguese, Dutch);
no function word found is ``und`` (undetermined). The report names which one ran.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

__all__ = ["heuristic_language", "language_detector"]

_STOP = {
    "en": "the and is are was of to in that it you for with this what how why can do not "
          "please my your have be on",
    "es": "el la los las es son de que y en un una por para con no qué cómo mi su está "
          "hola gracias",
    "fr": "le la les est sont de des et en un une pour avec que qui ne pas je vous mon "
          "bonjour merci",
    "de": "der die das ist sind und nicht ein eine zu mit für ich sie wie was mein bitte "
          "danke auf",
    "it": "il lo la gli le è sono di che e un una per con non come mio ciao grazie",
    "pt": "o a os as é são de que e em um uma para com não como meu você obrigado olá",
    "nl": "de het een is zijn en van niet met voor ik je hoe wat mijn dank",
}
_WORDS = {lang: frozenset(words.split()) for lang, words in _STOP.items()}
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)
_SCRIPTS = (
    ("CYRILLIC", "ru"), ("GREEK", "el"), ("ARABIC", "ar"), ("HEBREW", "he"),
    ("DEVANAGARI", "hi"), ("THAI", "th"), ("HANGUL", "ko"), ("HIRAGANA", "ja"),
    ("KATAKANA", "ja"), ("CJK", "zh"),
)


def _script(text: str) -> str | None:
    counts: dict[str, int] = {}
    for ch in text[:500]:
        if not ch.isalpha():
            continue
        if ord(ch) < 0x250:  # Basic Latin to Latin Extended-B
            counts["latin"] = counts.get("latin", 0) + 1
            continue
        name = unicodedata.name(ch, "")
        for key, lang in _SCRIPTS:
            if name.startswith(key):
                counts[lang] = counts.get(lang, 0) + 1
                break
        else:
            counts["latin"] = counts.get("latin", 0) + 1
    if not counts:
        return None
    if counts.get("ja") and counts.get("zh"):  # Japanese mixes kana with Han characters
        counts["ja"] += counts.pop("zh")
    return max(counts, key=lambda k: counts[k])


def heuristic_language(text: str) -> str:
    """ISO 639-1 code, or ``und`` when the text gives no clue."""
    script = _script(text)
    if script is None:
        return "und"
    if script != "latin":
        return script
    words = [w.lower() for w in _TOKEN.findall(text[:2000])]
    hits = {lang: sum(w in stop for w in words) for lang, stop in _WORDS.items()}
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best] > 0 else "und"


@lru_cache(maxsize=1)
def language_detector() -> tuple[Callable[[str], str], str]:
    """``(detect, name)``: langdetect when installed, else :func:`heuristic_language`."""
    try:
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return heuristic_language, "heuristic (script + function words; langdetect not installed)"
    DetectorFactory.seed = 0

    def run(text: str) -> str:
        try:
            return str(detect(text))
        except LangDetectException:
            return "und"

    return run, "langdetect"
