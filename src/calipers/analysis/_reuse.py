"""Finding a stored run that already measured what a plan would measure, so a command that
"runs what is missing" (gate, select) does not run it again."""

from __future__ import annotations

from pydantic import ValidationError

from calipers.analysis._align import StoredRun
from calipers.runner import Methodology, Plan, comparable_hash
from calipers.store import Store

__all__ = ["find_reusable"]


def find_reusable(store: Store, plan: Plan, *, same_tasks: bool = False) -> StoredRun | None:
    """The newest finished run of the same model (identity key) whose methodology matches the
    plan's on every planned task; with ``same_tasks``, it must hold no other task either.
    Samples are read only for the run returned."""
    card = plan.methodology
    for rec in store.list_runs(model=plan.config.model):
        if rec.status != "finished" or (same_tasks and set(rec.tasks) != set(card.tasks)):
            continue
        try:
            old = Methodology.model_validate(rec.methodology)
        except ValidationError:
            continue
        if old.model.key() == card.model.key() and all(
            t in old.tasks and comparable_hash(old, t) == comparable_hash(card, t)
            for t in card.tasks
        ):
            return StoredRun(rec, tuple(store.get_samples(rec.id)))
    return None
