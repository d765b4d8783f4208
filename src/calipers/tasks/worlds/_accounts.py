"""``world_accounts``: a subscription service's user accounts.

The user wants their plan changed, their address updated or a password reset sent. The policy
requires the identity check (``verify_identity`` with the 6-digit code the user received)
before any account change; the refusal (``wrong_code``: the user gives a stale code, the check
fails) must change nothing. The tools do not check verification themselves: the procedure
grader does.
"""

from __future__ import annotations

import random
from typing import Any

from calipers.tasks.worlds._common import (
    CONFIRM_RULE,
    READ_RULE,
    invent_person,
    iso,
    money,
    today_for,
)
from calipers.tasks.worlds._env import Handler, WorldDef, scenario_sample
from calipers.types import Sample, ToolError, ToolSpec

__all__ = ["ACCOUNTS", "KINDS"]

VERSION = "1"
KINDS = {
    "change_plan": (3, "change"),
    "update_address": (2, "change"),
    "reset_password": (2, "change"),
    "wrong_code": (2, "refuse"),
}
PLANS = {"Basic": 4.99, "Plus": 9.99, "Pro": 19.99, "Team": 49.0}
STREETS = ("Elm Street", "Harbour Road", "Mill Lane", "Station Avenue", "Orchard Way",
           "Kings Road", "Canal Street", "Hill Crescent")  # fmt: skip
CITIES = ("Lisbon", "Ghent", "Tampere", "Bologna", "Leeds", "Graz", "Lyon", "Porto")
POLICY = (
    "You are the support agent of a subscription service.\n"
    "Policy:\n"
    "- Before any change to an account, verify the user's identity: ask for the 6-digit code "
    "they received and check it with verify_identity. If the check fails, make no change.\n"
    f"- {CONFIRM_RULE}\n"
    f"- {READ_RULE}\n"
    "- When changing a plan, tell the user the new plan's monthly price."
)

_UID = {"type": "string"}
TOOLS = (
    ToolSpec(
        name="find_user",
        description="Find a user's id by email.",
        parameters={
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        },
    ),
    ToolSpec(
        name="verify_identity",
        description="Check the 6-digit code the user received; returns verified true/false.",
        parameters={
            "type": "object",
            "properties": {"user_id": _UID, "code": {"type": "string"}},
            "required": ["user_id", "code"],
        },
    ),
    ToolSpec(
        name="get_user",
        description="A user's account: name, email, plan, address.",
        parameters={"type": "object", "properties": {"user_id": _UID}, "required": ["user_id"]},
    ),
    ToolSpec(name="list_plans", description="The plans and their monthly prices."),
    ToolSpec(
        name="change_plan",
        description="Change a user's plan.",
        parameters={
            "type": "object",
            "properties": {"user_id": _UID, "plan": {"type": "string", "enum": list(PLANS)}},
            "required": ["user_id", "plan"],
        },
    ),
    ToolSpec(
        name="update_address",
        description="Replace a user's postal address.",
        parameters={
            "type": "object",
            "properties": {
                "user_id": _UID,
                "street": {"type": "string"},
                "city": {"type": "string"},
                "zip": {"type": "string"},
            },
            "required": ["user_id", "street", "city", "zip"],
        },
    ),
    ToolSpec(
        name="send_password_reset",
        description="Email the user a password reset link.",
        parameters={"type": "object", "properties": {"user_id": _UID}, "required": ["user_id"]},
    ),
)
WRITES = ("change_plan", "update_address", "send_password_reset")


def _user(db: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    uid = args.get("user_id")
    if not isinstance(uid, str) or uid not in db["users"]:
        raise ToolError(f"no user {uid!r}")
    u: dict[str, Any] = db["users"][uid]
    return u


def find_user(db: dict[str, Any], args: dict[str, Any]) -> Any:
    email = str(args.get("email", "")).strip().lower()
    for u in db["users"].values():
        if u["email"] == email:
            return {"user_id": u["id"], "name": u["name"]}
    raise ToolError(f"no user with email {email!r}")


def verify_identity(db: dict[str, Any], args: dict[str, Any]) -> Any:
    u = _user(db, args)
    return {
        "user_id": u["id"],
        "verified": str(args.get("code", "")).strip() == db["codes"][u["id"]],
    }


def get_user(db: dict[str, Any], args: dict[str, Any]) -> Any:
    return _user(db, args)


def list_plans(db: dict[str, Any], args: dict[str, Any]) -> Any:
    return [{"plan": p, "monthly_price": v} for p, v in db["plans"].items()]


def change_plan(db: dict[str, Any], args: dict[str, Any]) -> Any:
    u = _user(db, args)
    plan = args.get("plan")
    if plan not in db["plans"]:
        raise ToolError(f"no plan {plan!r}; plans: {', '.join(db['plans'])}")
    u["plan"] = plan
    return {"user_id": u["id"], "plan": plan, "monthly_price": db["plans"][plan]}


def update_address(db: dict[str, Any], args: dict[str, Any]) -> Any:
    u = _user(db, args)
    parts = {k: str(args.get(k, "")).strip() for k in ("street", "city", "zip")}
    if not all(parts.values()):
        raise ToolError("street, city and zip are all needed")
    u["address"] = parts
    return {"user_id": u["id"], "address": parts}


def send_password_reset(db: dict[str, Any], args: dict[str, Any]) -> Any:
    u = _user(db, args)
    u["reset_sent"] = True
    return {"user_id": u["id"], "sent_to": u["email"]}


HANDLERS: dict[str, Handler] = {
    "find_user": find_user,
    "verify_identity": verify_identity,
    "get_user": get_user,
    "list_plans": list_plans,
    "change_plan": change_plan,
    "update_address": update_address,
    "send_password_reset": send_password_reset,
}


def _address(r: random.Random) -> dict[str, str]:
    return {"street": f"{r.randrange(1, 200)} {r.choice(STREETS)}", "city": r.choice(CITIES),
            "zip": str(r.randrange(10_000, 100_000))}  # fmt: skip


def make_accounts(r: random.Random, sid: str) -> Sample:
    kind = r.choices(list(KINDS), weights=[w for w, _ in KINDS.values()])[0]
    outcome = KINDS[kind][1]
    today = today_for(r)
    users: dict[str, Any] = {}
    codes: dict[str, str] = {}
    while len(users) < 3:
        name, email, _ = invent_person(r)
        uid = f"U-{r.randrange(1000, 10_000)}"
        if uid in users or any(u["email"] == email for u in users.values()):
            continue
        users[uid] = {"id": uid, "name": name, "email": email, "plan": r.choice(list(PLANS)),
                      "address": _address(r), "reset_sent": False}  # fmt: skip
        codes[uid] = f"{r.randrange(0, 1_000_000):06d}"
    uid = next(iter(users))
    me = users[uid]
    db = {"users": users, "codes": codes, "plans": dict(PLANS)}
    code = codes[uid]
    if kind == "wrong_code":
        while code == codes[uid]:
            code = f"{r.randrange(0, 1_000_000):06d}"
        flavour = r.choice(("change_plan", "update_address"))
    else:
        flavour = kind
    plan: list[dict[str, Any]] = [
        {"tool": "find_user", "arguments": {"email": me["email"]}},
        {"say": "To verify your identity, what is the 6-digit code we just sent you?"},
        {"tool": "verify_identity", "arguments": {"user_id": uid, "code": code}},
    ]
    info: list[dict[str, Any]] = []
    change: list[dict[str, Any]]
    if flavour == "change_plan":
        new = r.choice([p for p in PLANS if p != me["plan"]])
        want = f"I'd like to switch my subscription to the {new} plan."
        terms = ["plan", new]
        change = [
            {"tool": "get_user", "arguments": {"user_id": uid}},
            {"tool": "list_plans", "arguments": {}},
            {"say": f"You are verified. Shall I change your plan from {me['plan']} to {new}, "
                    f"at {money(PLANS[new])} a month?"},
            {"tool": "change_plan", "arguments": {"user_id": uid, "plan": new}},
            {"say": f"Done: you are now on the {new} plan, {money(PLANS[new])} a month."},
        ]  # fmt: skip
        info.append({"kind": "money", "value": PLANS[new]})
    elif flavour == "update_address":
        addr = _address(r)
        full = f"{addr['street']}, {addr['city']} {addr['zip']}"
        want = f"I moved; please change my address to {full}."
        terms = ["address", addr["street"], addr["zip"]]
        change = [
            {"say": f"You are verified. Shall I update your address to {full}?"},
            {"tool": "update_address", "arguments": {"user_id": uid, **addr}},
            {"say": f"Done: your address is now {full}."},
        ]  # fmt: skip
        info.append({"kind": "text", "value": addr["street"]})
    else:
        want = "I can't log in. Please send me a password reset link."
        terms = ["reset"]
        change = [
            {"say": f"You are verified. Shall I send a password reset link to {me['email']}?"},
            {"tool": "send_password_reset", "arguments": {"user_id": uid}},
            {"say": f"Done: a password reset link was sent to {me['email']}."},
        ]  # fmt: skip
        info.append({"kind": "text", "value": me["email"]})
    if kind == "wrong_code":
        plan.append(
            {"say": "I'm sorry: that code does not match, so I cannot verify your identity and "
                    "cannot make any change to the account."}
        )  # fmt: skip
        info = []
    else:
        plan += change
    user = {
        "opening": f"Hi, my email is {me['email']}. {want}",
        "goal": want,
        "facts": {"email": me["email"], "code": code},
        "asks": {"email": ["email"], "code": ["code"]},
        "confirm_terms": terms,
    }
    return scenario_sample(
        sid, world="accounts", version=VERSION, kind=kind, outcome=outcome, today=iso(today),
        initial=db, compare=("users",), user=user, required_info=info, plan=plan,
        rules={"write_tools": list(WRITES), "verify_tool": "verify_identity",
               "verify_guards": list(WRITES)},
        handlers=HANDLERS,
    )  # fmt: skip


ACCOUNTS = WorldDef(
    name="accounts",
    version=VERSION,
    policy=POLICY,
    tools=TOOLS,
    handlers=HANDLERS,
    make=make_accounts,
    description="Accounts: look up a user, verify identity with a code, change the plan or "
    "address, send a password reset; refuse when verification fails.",
)
