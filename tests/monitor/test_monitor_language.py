"""The prompt language: a real identifier (py3langid) that says ``und`` when unsure, and a
language test that never alarms on English-only traffic however its prompts change."""

from __future__ import annotations

import numpy as np
import pytest

from calipers.monitor._drift import DriftOptions, drift_tests
from calipers.monitor._features import Features
from calipers.monitor._language import UNDETERMINED, language_detector
from calipers.monitor._vectors import Embedder

SENTENCES = {  # long enough that any identifier worth the name is sure
    "en": "How do I reset the password of my account when the email never arrives?",
    "es": "¿Cómo puedo cambiar la contraseña de mi cuenta si nunca llega el correo?",
    "fr": "Comment puis-je changer le mot de passe de mon compte si le courriel n'arrive pas ?",
    "de": "Wie kann ich das Passwort meines Kontos ändern, wenn die E-Mail nie ankommt?",
    "it": "Come posso cambiare la password del mio account se l'email non arriva mai?",
    "pt": "Como posso mudar a senha da minha conta se o e-mail nunca chega?",
    "ru": "Как изменить пароль моей учётной записи, если письмо так и не приходит?",
    "ja": "メールが届かない場合、アカウントのパスワードをどうやって変更できますか？",
}
# Short English requests: the old function-word heuristic called each of them Portuguese
# (its only clue was the article "a", also a Portuguese word).
SHORT_ENGLISH = [
    "Name a fruit.",
    "Name a colour.",
    "Pick a number.",
    "Write a haiku.",
    "Suggest a film.",
    "Draw a cat.",
    "Give a synonym.",
    "Invent a word.",
    "Recommend a book.",
    "Describe a sunset.",
]
LONGER_ENGLISH = [
    "How do I reset my password?",
    "What is the capital of France?",
    "Why is the sky blue during the day?",
    "Can you summarize this article?",
    "What time does the store open on Sunday?",
    "How do I cancel my subscription?",
    "Where is my package right now?",
    "Please explain how refunds work for digital purchases.",
]


def detect(text: str) -> str:
    return language_detector()[0](text)


@pytest.mark.parametrize(("lang", "text"), sorted(SENTENCES.items()))
def test_identifies_clear_sentences(lang: str, text: str) -> None:
    assert detect(text) == lang


def test_short_english_is_english_or_unsure_never_another_language() -> None:
    labels = {t: detect(t) for t in SHORT_ENGLISH}
    assert set(labels.values()) <= {"en", UNDETERMINED}, labels
    assert detect("") == UNDETERMINED and detect("12345 !!!") == UNDETERMINED
    assert "py3langid" in language_detector()[1]


def _features(texts: list[str]) -> Features:
    n = len(texts)
    return Features(
        texts=texts,
        prompt_length=np.array([len(t) for t in texts], float),
        language=[detect(t) for t in texts],
        response_length=np.full(n, 40.0),
        refused=[0] * n,
        errored=[0] * n,
    )


def _language_row(ref: list[str], cur: list[str]) -> tuple[bool, str]:
    rows = drift_tests(
        _features(ref),
        _features(cur),
        embedder=Embedder("tfidf", seed=0),
        rng=np.random.default_rng(0),
        options=DriftOptions(n_permutations=199, topics=False),
    )
    [row] = [r for r in rows if r.feature == "language"]
    return row.test.drifted, row.detail


def test_english_only_traffic_raises_no_language_alarm() -> None:
    """Reference: longer English questions; window: short English requests. Prompts
    changed, the language did not: no language alarm (other features may alarm)."""
    drifted, detail = _language_row(LONGER_ENGLISH * 8, SHORT_ENGLISH * 6)
    assert not drifted, detail


def test_a_real_language_change_still_alarms() -> None:
    spanish = [
        SENTENCES["es"],
        "¿Dónde está mi paquete? Lo pedí hace una semana y no llega.",
        "Quiero cancelar mi suscripción, ¿cómo lo hago desde la aplicación?",
    ]
    drifted, detail = _language_row(LONGER_ENGLISH * 8, LONGER_ENGLISH * 4 + spanish * 10)
    assert drifted and detail.startswith("es: 0% -> "), detail
