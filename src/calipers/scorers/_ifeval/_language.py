"""``language:response_language`` and the language detectors behind it.

Two detectors, chosen by the ``ifeval`` scorer's ``language_detector`` argument (recorded in
the run's methodology card, so runs with different detectors are never silently compared):

- ``langdetect`` -- the detector the IFEval reference implementation uses (``pip install
  langdetect``); seeded (``DetectorFactory.seed = 0``) so it is deterministic.
- ``heuristic`` -- built in, no dependency. The dominant script decides the languages
  written in a script of their own (Korean, Thai, Bengali, Gujarati, Gurmukhi/Punjabi,
  Tamil, Telugu, Kannada, Greek, Hebrew, Japanese kana, Chinese). Within a shared script
  (Latin, Cyrillic, Arabic, Devanagari) a small list of very frequent function words per
  language decides, helped by letters only one language of the script uses (Russian ы/э,
  Urdu ے/ٹ/ڈ/ڑ, Persian پ/چ/ژ/گ/ی/ک against Arabic ي/ك/ة, Vietnamese ơ/ư/đ and tone marks,
  German ß/ü). Limits: it knows only the languages listed in ``HEURISTIC_LANGUAGES``;
  a short reply (a few words) or a mixed-language reply may be misplaced; a reply without a
  known function word gives no answer.

Either detector may find no evidence (an empty or numeric reply); as in the reference
implementation, the instruction is then not failed for its language.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from calipers.errors import ConfigError
from calipers.scorers._ifeval._base import Args, Detector, checker
from calipers.scorers._ifeval._text import words

__all__ = [
    "DETECTORS",
    "HEURISTIC_LANGUAGES",
    "heuristic_language",
    "langdetect_available",
    "make_detector",
    "response_language",
]

DETECTORS = ("heuristic", "langdetect")

# (first, last) code point -> script name
_SCRIPTS: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "latin"),
    (0x1E00, 0x1EFF, "latin"),
    (0x0370, 0x03FF, "el"),
    (0x0400, 0x04FF, "cyrillic"),
    (0x0590, 0x05FF, "he"),
    (0x0600, 0x06FF, "arabic"),
    (0x0750, 0x077F, "arabic"),
    (0xFB50, 0xFDFF, "arabic"),
    (0xFE70, 0xFEFF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0980, 0x09FF, "bn"),
    (0x0A00, 0x0A7F, "pa"),
    (0x0A80, 0x0AFF, "gu"),
    (0x0B80, 0x0BFF, "ta"),
    (0x0C00, 0x0C7F, "te"),
    (0x0C80, 0x0CFF, "kn"),
    (0x0E00, 0x0E7F, "th"),
    (0x1100, 0x11FF, "ko"),
    (0x3130, 0x318F, "ko"),
    (0xAC00, 0xD7AF, "ko"),
    (0x3040, 0x30FF, "ja"),
    (0x4E00, 0x9FFF, "zh"),
)

_FUNCTION_WORDS: dict[str, dict[str, str]] = {
    "latin": {
        "en": "the and is are of to in that it you for with this was be not have",
        "de": "der die das und ist nicht ich sie es zu mit ein eine den dem auch sind wir",
        "fi": "ja on ei se että oli ovat mutta hän tämä myös kun tai ole voi joka niin",
        "it": "il di che è la per non un una sono del della gli le con anche più questo",
        "pt": "o de que não um uma para com é os do da em no na se mais por você são",
        "es": "el la los las y es que de en un una por para con no se su del al está",
        "fr": "le la les et est des une pas que dans il elle nous vous du au pour sur",
        "sw": "na ya wa kwa ni za la katika hii kuwa cha vya pia lakini au kama hiyo",
        "vi": "và của là có không những được trong cho một người các này với đã",
    },
    "cyrillic": {
        "ru": "и в не на что я с это как он она они но по мы вы так был было его",
        "bg": "и в на не е да се за че от са това като но по ще със беше той тя",
    },
    "arabic": {
        "ar": "في من على أن إلى التي الذي هذا هذه عن كان مع لا ما هو هي",
        "fa": "و در به از که این را با است برای آن یک می ها تا شد",
        "ur": "ہے کے میں اور کی کا کو سے یہ ہیں نے پر بھی تھا ایک",
    },
    "devanagari": {
        "hi": "है हैं के की में और का को से यह था नहीं भी एक पर",
        "mr": "आहे आणि या हे आहेत मध्ये नाही व तो ती त्या होते केले",
        "ne": "छ छन् र को मा पनि हो यो गर्न भएको थियो छैन उनी",
    },
}
_FUNCTION_SETS = {
    s: {lang: frozenset(ws.split()) for lang, ws in d.items()} for s, d in _FUNCTION_WORDS.items()
}
# Letters that point to one language of a shared script; each counts as one function word.
_MARKERS: dict[str, dict[str, str]] = {
    "latin": {"vi": "ơưđăạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ", "de": "ßü"},
    "cyrillic": {"ru": "ыэё"},
    "arabic": {"ur": "ےٹڈڑںھہ", "fa": "پچژگیک", "ar": "يكةى"},
}

HEURISTIC_LANGUAGES = tuple(
    sorted(
        {lang for d in _FUNCTION_WORDS.values() for lang in d}
        | {s for _a, _b, s in _SCRIPTS if len(s) == 2}
    )
)


def _script(ch: str) -> str | None:
    cp = ord(ch)
    for first, last, name in _SCRIPTS:
        if first <= cp <= last:
            return name
    return None


def heuristic_language(text: str) -> str | None:
    """The language of ``text`` by script and function words (module docstring), or None."""
    scripts = Counter(s for ch in text if ch.isalpha() and (s := _script(ch)))
    if not scripts:
        return None
    script = scripts.most_common(1)[0][0]
    if script == "zh" and scripts.get("ja"):
        return "ja"  # Japanese mixes kanji with kana
    if script not in _FUNCTION_SETS:
        return script
    tokens = [t.lower() for t in words(text)]
    votes: Counter[str] = Counter()
    for lang, ws in _FUNCTION_SETS[script].items():
        votes[lang] = sum(1 for t in tokens if t in ws)
    for lang, letters in _MARKERS.get(script, {}).items():
        votes[lang] += sum(text.lower().count(ch) for ch in letters)
    best = votes.most_common(2)
    if not best or best[0][1] == 0 or (len(best) > 1 and best[0][1] == best[1][1]):
        return None
    return best[0][0]


def langdetect_available() -> bool:
    try:
        import langdetect  # noqa: F401
    except ImportError:
        return False
    return True


def _langdetect() -> Callable[[str], str | None]:
    try:
        import langdetect
    except ImportError:
        raise ConfigError(
            "The ifeval scorer was asked for language_detector='langdetect', which is not "
            "installed.",
            hint="pip install langdetect, or use language_detector='heuristic'.",
        ) from None
    langdetect.DetectorFactory.seed = 0

    def detect(text: str) -> str | None:
        try:
            code = str(langdetect.detect(text))
        except langdetect.LangDetectException:
            return None
        return code.split("-")[0]  # zh-cn -> zh

    return detect


def make_detector(name: str) -> Detector:
    if name == "heuristic":
        return heuristic_language
    if name == "langdetect":
        return _langdetect()
    raise ConfigError(
        f"Unknown language detector {name!r}.", hint=f"Use one of: {', '.join(DETECTORS)}."
    )


@checker("language:response_language")
def response_language(response: str, args: Args) -> bool:
    """The response is in ``language`` (an ISO 639-1 code), by the configured detector."""
    found = args.detect_language(response)
    return found is None or found == args.text("language").strip().lower()
