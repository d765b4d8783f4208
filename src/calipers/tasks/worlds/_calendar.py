"""``world_calendar``: one person's work calendar.

The user wants a meeting booked at the earliest free time, moved to a given free time, or
cancelled. The policy allows meetings only within working hours (09:00-17:00) and never two at
once; the refusals (``book_taken``: the one time the user accepts is taken; ``move_outside``:
the wanted time is outside working hours) must change nothing. The tools do what they are
asked (they double-book if told to): keeping to the policy is the agent's job.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from calipers.tasks.worlds._common import CONFIRM_RULE, READ_RULE, iso, today_for
from calipers.tasks.worlds._env import Handler, WorldDef, scenario_sample
from calipers.types import Sample, ToolError, ToolSpec

__all__ = ["CALENDAR", "KINDS"]

VERSION = "1"
KINDS = {
    "book": (3, "change"),
    "move": (2, "change"),
    "cancel": (2, "change"),
    "book_taken": (2, "refuse"),
    "move_outside": (1, "refuse"),
}
DAY_START, DAY_END = 9 * 60, 17 * 60
TITLES = ("Design review", "Budget sync", "Team standup", "Client call", "Hiring panel",
          "Roadmap planning", "Retrospective", "Vendor demo", "Code review", "Board prep",
          "Customer interview", "Security briefing")  # fmt: skip
POLICY = (
    "You are a scheduling assistant managing the user's work calendar.\n"
    "Policy:\n"
    "- Meetings only on the given date within working hours, 09:00-17:00 (a meeting must end "
    "by 17:00).\n"
    "- Never book or move a meeting so that it overlaps another one.\n"
    "- When the user asks for the earliest free time, use the earliest free slot.\n"
    f"- {CONFIRM_RULE}\n"
    f"- {READ_RULE}\n"
    "- Tell the user the time of the meeting you booked, moved or cancelled."
)

_DATE = {"type": "string", "description": "YYYY-MM-DD"}
_TIME = {"type": "string", "description": "HH:MM, 24-hour"}
TOOLS = (
    ToolSpec(
        name="list_meetings",
        description="The meetings on a date, with ids, titles, start and end times.",
        parameters={"type": "object", "properties": {"date": _DATE}, "required": ["date"]},
    ),
    ToolSpec(
        name="find_free_slots",
        description="Start times (every 30 minutes, within working hours) at which a meeting "
        "of the given length fits without overlapping another.",
        parameters={
            "type": "object",
            "properties": {"date": _DATE, "duration_minutes": {"type": "integer"}},
            "required": ["date", "duration_minutes"],
        },
    ),
    ToolSpec(
        name="book_meeting",
        description="Add a meeting to the calendar.",
        parameters={
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "date": _DATE,
                "start": _TIME,
                "duration_minutes": {"type": "integer"},
            },
            "required": ["title", "date", "start", "duration_minutes"],
        },
    ),
    ToolSpec(
        name="move_meeting",
        description="Move a meeting to another date and start time (same length).",
        parameters={
            "type": "object",
            "properties": {"meeting_id": {"type": "string"}, "date": _DATE, "start": _TIME},
            "required": ["meeting_id", "date", "start"],
        },
    ),
    ToolSpec(
        name="cancel_meeting",
        description="Remove a meeting from the calendar.",
        parameters={
            "type": "object",
            "properties": {"meeting_id": {"type": "string"}},
            "required": ["meeting_id"],
        },
    ),
)
WRITES = ("book_meeting", "move_meeting", "cancel_meeting")


def hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _minutes(value: Any) -> int:
    try:
        h, m = str(value).split(":")
        out = int(h) * 60 + int(m)
    except ValueError:
        raise ToolError(f"time {value!r} is not HH:MM") from None
    if not 0 <= out < 24 * 60:
        raise ToolError(f"time {value!r} is not HH:MM")
    return out


def _date(value: Any) -> str:
    try:
        return dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ToolError(f"date {value!r} is not YYYY-MM-DD") from None


def _duration(value: Any) -> int:
    if not isinstance(value, int) or not 15 <= value <= 8 * 60:
        raise ToolError("duration_minutes must be an integer from 15 to 480")
    return value


def _day(db: dict[str, Any], date: str) -> list[dict[str, Any]]:
    return sorted(
        (m for m in db["meetings"].values() if m["date"] == date), key=lambda m: m["start"]
    )


def list_meetings(db: dict[str, Any], args: dict[str, Any]) -> Any:
    return _day(db, _date(args.get("date")))


def free_slots(db: dict[str, Any], date: str, duration: int, skip: str | None = None) -> list[str]:
    busy = [(_minutes(m["start"]), _minutes(m["end"])) for m in _day(db, date) if m["id"] != skip]
    return [
        hhmm(s)
        for s in range(DAY_START, DAY_END - duration + 1, 30)
        if all(s + duration <= b0 or s >= b1 for b0, b1 in busy)
    ]


def find_free_slots(db: dict[str, Any], args: dict[str, Any]) -> Any:
    return free_slots(db, _date(args.get("date")), _duration(args.get("duration_minutes")))


def book_meeting(db: dict[str, Any], args: dict[str, Any]) -> Any:
    title = str(args.get("title", "")).strip()
    if not title:
        raise ToolError("title must not be empty")
    date, start = _date(args.get("date")), _minutes(args.get("start"))
    end = start + _duration(args.get("duration_minutes"))
    mid = f"M-{date.replace('-', '')}-{hhmm(start).replace(':', '')}"
    if mid in db["meetings"]:
        mid += "b"
    db["meetings"][mid] = {"id": mid, "title": title, "date": date, "start": hhmm(start),
                           "end": hhmm(end)}  # fmt: skip
    return db["meetings"][mid]


def _meeting(db: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    mid = args.get("meeting_id")
    if not isinstance(mid, str) or mid not in db["meetings"]:
        raise ToolError(f"no meeting {mid!r}")
    m: dict[str, Any] = db["meetings"][mid]
    return m


def move_meeting(db: dict[str, Any], args: dict[str, Any]) -> Any:
    m = _meeting(db, args)
    date, start = _date(args.get("date")), _minutes(args.get("start"))
    length = _minutes(m["end"]) - _minutes(m["start"])
    if start + length > 24 * 60:
        raise ToolError("the meeting would end after midnight")
    m.update(date=date, start=hhmm(start), end=hhmm(start + length))
    return m


def cancel_meeting(db: dict[str, Any], args: dict[str, Any]) -> Any:
    m = _meeting(db, args)
    del db["meetings"][m["id"]]
    return {"cancelled": m["id"]}


HANDLERS: dict[str, Handler] = {
    "list_meetings": list_meetings,
    "find_free_slots": find_free_slots,
    "book_meeting": book_meeting,
    "move_meeting": move_meeting,
    "cancel_meeting": cancel_meeting,
}


def _weekday_after(d: dt.date, days: int) -> dt.date:
    d += dt.timedelta(days=days)
    while d.weekday() >= 5:
        d += dt.timedelta(days=1)
    return d


def _fill(r: random.Random, db: dict[str, Any], date: str, titles: list[str], n: int) -> None:
    """Up to ``n`` non-overlapping meetings on ``date`` (30-minute grid, working hours)."""
    for _ in range(n):
        length = r.choice((30, 60, 60, 90))
        slots = free_slots(db, date, length)
        if not slots:
            return
        start = _minutes(r.choice(slots))
        mid = f"M-{r.randrange(100, 1000)}"
        while mid in db["meetings"]:
            mid = f"M-{r.randrange(100, 1000)}"
        db["meetings"][mid] = {"id": mid, "title": titles.pop(), "date": date,
                               "start": hhmm(start), "end": hhmm(start + length)}  # fmt: skip


def make_calendar(r: random.Random, sid: str) -> Sample:
    kind = r.choices(list(KINDS), weights=[w for w, _ in KINDS.values()])[0]
    outcome = KINDS[kind][1]
    today = today_for(r)
    day = iso(_weekday_after(today, r.randrange(1, 6)))
    day2 = iso(_weekday_after(dt.date.fromisoformat(day), r.randrange(1, 4)))
    titles = r.sample(TITLES, len(TITLES))
    new_title = titles.pop()
    db: dict[str, Any] = {"meetings": {}}
    _fill(r, db, day, titles, r.randrange(2, 5))
    _fill(r, db, day2, titles, r.randrange(1, 4))
    meetings = _day(db, day)
    plan: list[dict[str, Any]] = [{"tool": "list_meetings", "arguments": {"date": day}}]
    info: list[dict[str, Any]] = []
    if kind == "book":
        length = r.choice((30, 60))
        slot = free_slots(db, day, length)[0]
        want = f"Please book a {length}-minute '{new_title}' on {day} at the earliest free time."
        terms = [new_title, day, slot]
        plan = [
            {"tool": "find_free_slots", "arguments": {"date": day, "duration_minutes": length}},
            {"say": f"The earliest free time on {day} is {slot}. Shall I book '{new_title}' "
                    f"on {day} at {slot} for {length} minutes?"},
            {"tool": "book_meeting", "arguments": {"title": new_title, "date": day, "start": slot,
                                                   "duration_minutes": length}},
            {"say": f"Booked: '{new_title}' on {day} at {slot}."},
        ]  # fmt: skip
        info.append({"kind": "time", "value": slot})
    elif kind == "book_taken":
        other = r.choice(meetings)
        length = 60
        start = _minutes(other["start"])
        want = (f"Please book a {length}-minute '{new_title}' on {day} at {other['start']}; if "
                "that time is not free, don't book anything.")  # fmt: skip
        terms = [new_title, day, other["start"]]
        plan.append(
            {"say": f"{other['start']} on {day} overlaps your meeting '{other['title']}' "
                    f"({other['start']}-{other['end']}), so as you asked I have not booked "
                    "anything."}
        )  # fmt: skip
        assert hhmm(start) not in free_slots(db, day, length)
    else:
        m = r.choice(meetings)
        length = _minutes(m["end"]) - _minutes(m["start"])
        if kind == "cancel":
            want = f"Please cancel my '{m['title']}' meeting on {day}."
            terms = [m["title"], "cancel"]
            plan += [
                {"say": f"Shall I cancel '{m['title']}' on {day} at {m['start']}?"},
                {"tool": "cancel_meeting", "arguments": {"meeting_id": m["id"]}},
                {"say": f"Cancelled: '{m['title']}' on {day} at {m['start']}."},
            ]  # fmt: skip
            info.append({"kind": "time", "value": m["start"]})
        elif kind == "move":
            to = r.choice(free_slots(db, day2, length))
            want = f"Please move my '{m['title']}' meeting on {day} to {day2} at {to}."
            terms = [m["title"], day2, to]
            plan += [
                {"tool": "list_meetings", "arguments": {"date": day2}},
                {"say": f"{to} on {day2} is free. Shall I move '{m['title']}' from {day} "
                        f"{m['start']} to {day2} at {to}?"},
                {"tool": "move_meeting", "arguments": {"meeting_id": m["id"], "date": day2,
                                                       "start": to}},
                {"say": f"Moved: '{m['title']}' is now on {day2} at {to}."},
            ]  # fmt: skip
            info.append({"kind": "time", "value": to})
        else:  # move_outside
            to = hhmm(r.choice((DAY_END, DAY_END + 30, DAY_END + 60, 8 * 60, DAY_END - 30)))
            if _minutes(to) + length <= DAY_END and _minutes(to) >= DAY_START:
                to = "18:00"
            want = f"Please move my '{m['title']}' meeting on {day} to {to} the same day."
            terms = [m["title"], to]
            plan.append(
                {"say": f"I can't: '{m['title']}' would not fit within working hours "
                        "(09:00-17:00) at that time, so I left it where it is."}
            )  # fmt: skip
    user = {
        "opening": f"Hi. {want}",
        "goal": want,
        "facts": {},
        "asks": {},
        "confirm_terms": terms,
    }
    return scenario_sample(
        sid, world="calendar", version=VERSION, kind=kind, outcome=outcome, today=iso(today),
        initial=db, compare=("meetings",), user=user, required_info=info, plan=plan,
        rules={"write_tools": list(WRITES), "verify_tool": None, "verify_guards": []},
        handlers=HANDLERS,
    )  # fmt: skip


CALENDAR = WorldDef(
    name="calendar",
    version=VERSION,
    policy=POLICY,
    tools=TOOLS,
    handlers=HANDLERS,
    make=make_calendar,
    description="Calendar: find free slots, book, move or cancel meetings within working "
    "hours and without overlaps; refuse what the constraints forbid.",
)
