"""The wording of ``dyn_rag``'s fictional world: name parts, value pools, and per entity kind
the attributes with their question, claim and one statement per document style."""

from __future__ import annotations

__all__ = ["ATTRIBUTES", "FIRST_NAMES", "INTRO", "KINDS", "MONTHS", "NOUN", "PRODUCTS",
           "PROFESSIONS", "STYLES", "SUFFIX", "SYLLABLES"]  # fmt: skip

STYLES = ("encyclopedia", "news", "official", "forum", "interview")

SYLLABLES = (
    "bar", "ben", "cor", "dal", "dor", "fen", "gar", "hal", "jor", "kel", "kor", "lam",
    "lin", "mar", "mer", "nor", "ost", "pel", "quin", "ras", "rin", "sal", "sor", "tam",
    "tor", "val", "ven", "vor", "wen", "yar", "zel", "brek", "drav", "frel", "grom", "skal",
    "thor", "vask", "wyn", "orm", "iss",
)  # fmt: skip
FIRST_NAMES = (
    "Adela", "Bruno", "Corin", "Dagna", "Elko", "Faye", "Gunnar", "Hedda", "Ilse",
    "Joram", "Kasia", "Lorne", "Maelis", "Nils", "Orla", "Piet", "Runa", "Sander",
    "Tove", "Ulric", "Vesna", "Wilma", "Yorick", "Zofia",
)  # fmt: skip
SUFFIX = {
    "company": ("Textiles", "Robotics", "Foods", "Shipping", "Instruments", "Ceramics"),
    "event": ("Festival", "Fair", "Regatta", "Games"),
}
PRODUCTS = (
    "copper kettles", "wind turbine blades", "ceramic valves", "bicycle frames",
    "hearing aids", "canned sardines", "wool blankets", "solar lanterns", "glass lenses",
    "paper lanterns", "rope ladders", "harbour cranes",
)  # fmt: skip
PROFESSIONS = (
    "glassblower", "cartographer", "beekeeper", "clockmaker", "shipwright", "botanist",
    "stonemason", "bookbinder", "violin maker", "surveyor", "veterinarian", "engraver",
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December",
)  # fmt: skip

# kind -> attribute -> (value kind, question, claim, one statement per style). ``{n}`` is the
# entity's name, ``{v}`` the value's surface; each statement holds each once.
ATTRIBUTES: dict[str, dict[str, tuple[str, str, str, tuple[str, str, str, str, str]]]] = {
    "company": {
        "founded": (
            "year:1850-2010",
            "In what year was {n} founded?",
            "{n} was founded in {v}.",
            (
                "{n} was founded in {v}.",
                "Records show that {n} opened its doors in {v}.",
                "Since {v}, {n} has served its customers.",
                "my grandfather said {n} started up in {v}, if that helps.",
                '"I remember when {n} was founded, back in {v}," she said.',
            ),
        ),
        "headquarters": (
            "town",
            "In which town is {n} headquartered?",
            "{n} is headquartered in {v}.",
            (
                "The headquarters of {n} are in {v}.",
                "{n}, which is based in {v}, confirmed the news on Monday.",
                "Visit {n} at our head office in {v}.",
                "{n} has its main office over in {v} I think.",
                '"Everyone at {n} knows the head office in {v}," he laughed.',
            ),
        ),
        "founder": (
            "person",
            "Who founded {n}?",
            "{n} was founded by {v}.",
            (
                "{n} was established by {v}.",
                "{v}, who founded {n}, attended the ceremony.",
                "Our founder, {v}, started {n} with a single workshop.",
                "fun fact: {v} is the one who founded {n}.",
                '"{v} built {n} from nothing," a former colleague recalled.',
            ),
        ),
        "employees": (
            "count:40-9000",
            "How many people does {n} employ?",
            "{n} employs {v} people.",
            (
                "{n} employs {v} people.",
                "With a staff of {v}, {n} is a major local employer.",
                "Today {n} is a team of {v} people.",
                "last I heard {n} had {v} employees.",
                '"We are {v} people at {n} now," the manager said.',
            ),
        ),
        "product": (
            "product",
            "What does {n} make?",
            "{n} makes {v}.",
            (
                "{n} is known for making {v}.",
                "Demand for the {v} made by {n} rose this year.",
                "{n} proudly manufactures {v}.",
                "pretty sure {n} makes {v}.",
                '"At {n} we make {v}, and we make them well," he said.',
            ),
        ),
    },
    "person": {
        "born": (
            "year:1935-2000",
            "In what year was {n} born?",
            "{n} was born in {v}.",
            (
                "{n} (born {v}) is remembered for a long career.",
                "{n}, born in {v}, spoke at the event.",
                "Born in {v}, {n} joined us many years ago.",
                "{n} was born in {v} according to the plaque.",
                '"I was born in {v}," {n} told us.',
            ),
        ),
        "hometown": (
            "town",
            "Which town is {n} from?",
            "{n} is from {v}.",
            (
                "{n} grew up in the town of {v}.",
                "{n}, a native of {v}, returned home last week.",
                "{n} comes to us from {v}.",
                "{n} is originally from {v} btw.",
                '"{v} will always be home," said {n}.',
            ),
        ),
        "employer": (
            "company",
            "Which company does {n} work for?",
            "{n} works for {v}.",
            (
                "{n} works for {v}.",
                "{n}, an employee of {v}, declined to comment.",
                "Meet {n}, who is part of the team at {v}.",
                "{n} has a job at {v} these days.",
                '"My work at {v} keeps me busy," {n} said.',
            ),
        ),
        "profession": (
            "profession",
            "What is the profession of {n}?",
            "{n} is a {v}.",
            (
                "{n} works as a {v}.",
                "The {v} {n} was honoured at the ceremony.",
                "{n} has been a {v} for many years.",
                "{n} is a {v}, a really good one.",
                '"Being a {v} is all I ever wanted," {n} explained.',
            ),
        ),
    },
    "town": {
        "population": (
            "count:900-90000",
            "What is the population of {n}?",
            "{n} has a population of {v}.",
            (
                "{n} has a population of {v}.",
                "The {v} residents of {n} voted on Sunday.",
                "{n} is home to {v} people.",
                "{n} has like {v} people living there.",
                '"All {v} of us in {n} know each other," she joked.',
            ),
        ),
        "river": (
            "river",
            "Which river flows through {n}?",
            "The {v} flows through {n}.",
            (
                "The {v} flows through {n}.",
                "Flooding along the {v} reached {n} overnight.",
                "Walk the banks of the {v} in the heart of {n}.",
                "the {v} runs right through {n}, nice for fishing.",
                '"The {v} is the soul of {n}," said a local fisher.',
            ),
        ),
        "mayor": (
            "person",
            "Who is the mayor of {n}?",
            "The mayor of {n} is {v}.",
            (
                "The current mayor of {n} is {v}.",
                "{v}, the mayor of {n}, opened the new bridge.",
                "A message from the mayor of {n}, {v}.",
                "{v} is mayor of {n} now, right?",
                '"Serving {n} as mayor is an honour," said {v}.',
            ),
        ),
        "settled": (
            "year:1200-1880",
            "In what year was {n} settled?",
            "{n} was settled in {v}.",
            (
                "{n} was first settled in {v}.",
                "{n}, settled in {v}, celebrated its anniversary.",
                "Since {v}, people have called {n} home.",
                "{n} got settled in {v} according to my history teacher.",
                '"The first families came to {n} in {v}," the guide said.',
            ),
        ),
    },
    "event": {
        "venue": (
            "town",
            "In which town is the {n} held?",
            "The {n} is held in {v}.",
            (
                "The {n} is held each year in {v}.",
                "Crowds gathered in {v} for the {n}.",
                "Join us in {v} for the {n}.",
                "the {n} happens in {v}, worth the trip.",
                '"Bringing the {n} to {v} was the best idea," said an organiser.',
            ),
        ),
        "month": (
            "month",
            "In which month is the {n} held?",
            "The {n} is held in {v}.",
            (
                "The {n} takes place every {v}.",
                "As every {v}, the {n} drew large crowds.",
                "Save the date: the {n} returns in {v}.",
                "the {n} is always in {v}.",
                '"{v} means the {n} to us," a visitor said.',
            ),
        ),
        "first": (
            "year:1900-2015",
            "In what year was the {n} first held?",
            "The {n} was first held in {v}.",
            (
                "The {n} was first held in {v}.",
                "First held in {v}, the {n} keeps growing.",
                "The {n} has welcomed visitors since {v}.",
                "the first {n} was in {v} i think.",
                '"The very first {n}, in {v}, was tiny," she recalled.',
            ),
        ),
        "organiser": (
            "company",
            "Which company organises the {n}?",
            "The {n} is organised by {v}.",
            (
                "The {n} is organised by {v}.",
                "{v}, which organises the {n}, reported record sales.",
                "The {n} is brought to you by {v}.",
                "{v} runs the {n} every year.",
                '"Organising the {n} is a big job for {v}," he said.',
            ),
        ),
    },
}
KINDS = tuple(ATTRIBUTES)

INTRO = {
    "encyclopedia": ("{N} is a {noun}.", "{N}"),
    "news": ("Local reporters looked again at {N} this week.", "{N} in the news"),
    "official": ("This page tells the story of {N}.", "About {N}"),
    "forum": ("Does anyone here know much about {N}?", "Forum thread: {N}"),
    "interview": ("We asked people who know {N} well.", "Voices: {N}"),
}
NOUN = {
    "company": "company",
    "person": "local figure",
    "town": "small town",
    "event": "yearly event",
}
