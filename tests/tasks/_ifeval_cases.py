"""Hand-made responses for every IFEval instruction: (kwargs, followed, not followed)."""

from __future__ import annotations

from typing import Any

Case = tuple[dict[str, Any], list[str], list[str]]

_LONG = " ".join(["word"] * 120)
_PROMPT = "Write a haiku about moms."

CASES: dict[str, Case] = {
    # ---- change_case ----
    "change_case:capital_word_frequency": (
        {"capital_relation": "at least", "capital_frequency": 2},
        ["NASA and the ESA agree.", "I think THIS is it."],
        ["Nasa and the Esa agree.", "Only ONE capital word (and 2024)."],
    ),
    "change_case:english_capital": (
        {},
        ["THE WEATHER IS NICE TODAY AND WE ARE GOING OUT.", "HELLO, THIS IS ALL CAPS!"],
        ["The weather is nice.", "DAS WETTER IST HEUTE SCHÖN UND WIR SIND NICHT DA."],
    ),
    "change_case:english_lowercase": (
        {},
        ["the weather is nice today and we are going out.", "all lowercase, it is."],
        ["The weather is nice.", "das wetter ist heute schön und wir sind nicht da."],
    ),
    # ---- combination ----
    "combination:repeat_prompt": (
        {"prompt_to_repeat": _PROMPT},
        [f"{_PROMPT}\nMother's love shines bright", "  write a haiku about MOMS. Then..."],
        [f"Sure! {_PROMPT}", "Here is a haiku about moms."],
    ),
    "combination:two_responses": (
        {},
        ["First answer.\n******\nSecond answer.", "******\nOne\n******\nTwo\n******"],
        ["Only one answer.", "Same.\n******\nSame.", "A\n******\n\n******\nB"],
    ),
    # ---- detectable_content ----
    "detectable_content:number_placeholders": (
        {"num_placeholders": 2},
        ["Dear [name], you live at [address].", "[a] [b] [c]"],
        ["Dear [name], welcome.", "Empty [] and [ ] do not count, nor [\n]."],
    ),
    "detectable_content:postscript": (
        {"postscript_marker": "P.S."},
        # the reference finds the marker anywhere, even mid-line or inside "P.P.S."
        [
            "Body text.\nP.S. Do not forget.",
            "Body.\n\n**P.S.** bring cake",
            "Hi\np.s. lower",
            "Body. P.S. mid-line",
            "Body.\nP.P.S. only the second one.",
        ],
        ["Body text without a postscript.", "Body.\nPS no dots", "Body.\nP.S no final dot"],
    ),
    # ---- detectable_format ----
    "detectable_format:constrained_response": (
        {},
        ["My answer is yes.", "Let me think. My answer is maybe."],
        ["My answer is yes", "Yes, definitely."],
    ),
    "detectable_format:json_format": (
        {},
        ['{"a": 1, "b": [2, 3]}', '```json\n{"a": 1}\n```', "```\n[1, 2]\n```"],
        ['Here it is: {"a": 1}', "{a: 1}"],
    ),
    "detectable_format:multiple_sections": (
        {"section_spliter": "SECTION", "num_sections": 2},
        ["SECTION 1\nIntro.\nSECTION 2\nEnd.", "**SECTION 1** a\n**SECTION 2** b\nSECTION 3 c"],
        ["SECTION 1\nOnly one.", "Section 1\nwrong case\nSection 2\nhere"],
    ),
    "detectable_format:number_bullet_lists": (
        {"num_bullets": 2},
        ["* one\n* two", "Intro\n- first\n  - second\n\nOutro"],
        ["* one\n* two\n* three", "**bold** line\n---\n* only one"],
    ),
    "detectable_format:number_highlighted_sections": (
        {"num_highlights": 2},
        ["*first* and *second*", "**Bold part** and *italic part* here"],
        ["only *one* highlight", "* a bullet\n* another bullet\n** **"],
    ),
    "detectable_format:title": (
        {},
        ["<<A Poem of Joy>>\nLine one.", "Text then <<title>>"],
        ["No title here.", "<< >> empty, <<\nbroken>>"],
    ),
    # ---- keywords ----
    "keywords:existence": (
        {"keywords": ["banana", "Split"]},
        ["A banana split.", "BANANAS are great; splitting hairs."],
        ["A banana.", "Nothing relevant."],
    ),
    "keywords:forbidden_words": (
        {"forbidden_words": ["rock", "stone"]},
        ["A rocket and a milestone.", "Nothing forbidden."],
        ["Rock on!", "A stone's throw."],
    ),
    "keywords:frequency": (
        {"relation": "less than", "keyword": "war", "frequency": 2},
        ["War is bad.", "Peace only, no conflicts."],
        ["War, war everywhere.", "The WAR and the war."],
    ),
    "keywords:letter_frequency": (
        {"let_relation": "at least", "letter": "q", "let_frequency": 2},
        ["Quick quiz.", "q Q"],
        ["Only one q.", "None here."],
    ),
    # ---- language ----
    "language:response_language": (
        {"language": "it"},
        ["Il tempo è bello oggi e andiamo al parco.", "Non è vero che la pizza sia cattiva."],
        ["The weather is nice today and we go out.", "Das Wetter ist heute schön und gut."],
    ),
    # ---- length_constraints ----
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "president"},
        ["One.\n\nPresident Lincoln spoke.\n\nThree.", "A\n\n**President**: yes\n\nC\n\n"],
        ["One.\n\nThe president spoke.\n\nThree.", "One.\n\nPresident.\n\nThree.\n\nFour."],
    ),
    "length_constraints:number_paragraphs": (
        {"num_paragraphs": 3},
        ["One.\n***\nTwo.\n***\nThree.", "***\nOne\n* * *x\n***\nTwo\n***\nThree\n***"],
        ["One.\n***\nTwo.", "One.\n***\n\n***\nThree.\n***\nFour."],
    ),
    "length_constraints:number_sentences": (
        {"relation": "less than", "num_sentences": 3},
        ["One sentence. Dr. Who is two.", "Is it? Yes"],
        ["One. Two. Three.", "Wow! Really? Yes."],
    ),
    "length_constraints:number_words": (
        {"relation": "at least", "num_words": 100},
        [_LONG, " ".join(["don't"] * 100)],
        ["Too short.", " ".join(["word"] * 99)],
    ),
    # ---- punctuation ----
    "punctuation:no_comma": (
        {},
        ["No commas here.", "Just periods. And more."],
        ["One, two.", "全角，逗号"],
    ),
    # ---- startend ----
    "startend:end_checker": (
        {"end_phrase": "Peace!"},
        ["That is all. Peace!", '"Goodbye. peace!"\n'],
        ["Peace! And more.", "Peace"],
    ),
    "startend:quotation": (
        {},
        ['"The whole reply is quoted."', "  “Curly quotes count too.”  "],
        ['"Only the start is quoted.', 'He said "hi" to me.'],
    ),
}
