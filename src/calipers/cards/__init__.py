"""Model cards: provider, calipers spec, size, licence, price, and how open a model is (seven
dimensions, four classes, and the Linux Foundation Model Openness Framework class).

See ``docs/model-cards.md``.
"""

from calipers.cards._card import (
    Assessment,
    CardError,
    Level,
    ModelCard,
    MofComponent,
    Openness,
    Pricing,
    load_card,
    parse_card,
)
from calipers.cards._catalog import (
    BUILTIN,
    CardCatalog,
    CatalogEntry,
    builtin_card_names,
    card_to_dict,
    user_cards_dir,
)
from calipers.cards._mof import (
    MOF_CLASSES,
    MOF_COMPONENTS,
    MofClass,
    MofComponentSpec,
    MofGap,
    MofResult,
    mof_classify,
)
from calipers.cards._openness import (
    DIMENSION_NAMES,
    DIMENSIONS,
    OPENNESS_CLASSES,
    OpennessClass,
    OpennessVerdict,
    classify_openness,
)

__all__ = [
    "BUILTIN",
    "DIMENSIONS",
    "DIMENSION_NAMES",
    "MOF_CLASSES",
    "MOF_COMPONENTS",
    "OPENNESS_CLASSES",
    "Assessment",
    "CardCatalog",
    "CardError",
    "CatalogEntry",
    "Level",
    "ModelCard",
    "MofClass",
    "MofComponent",
    "MofComponentSpec",
    "MofGap",
    "MofResult",
    "Openness",
    "OpennessClass",
    "OpennessVerdict",
    "Pricing",
    "builtin_card_names",
    "card_to_dict",
    "classify_openness",
    "load_card",
    "mof_classify",
    "parse_card",
    "user_cards_dir",
]
