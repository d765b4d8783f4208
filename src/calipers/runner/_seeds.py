"""A run's random streams: derived once from the user's seed, recorded on the methodology card.

``RunConfig.seed`` is the seed the user gave (``--seed``, ``calipers.run(seed=...)``); it is
turned into named streams once, when the run is planned, and each stream is passed down to
the one phase that draws from it:

- ``items``: what the items are -- dynamic tasks' generated items and their few-shot pool,
  option shuffles of tasks that shuffle by the run's seed (GPQA). It is the user's seed itself,
  so ``calipers run --seed 7`` generates the items it always has (stored suites, content
  hashes and the docs' examples stay valid). Each sample row stores it.
- ``bootstrap``: finalize's resampling intervals, ``derived_seed(str(seed), "bootstrap")``,
  so two runs on the same items can be re-summarized apart and neither stream's draws depend
  on the other's.

The card records both numbers, so a summary is reproducible from the stored records alone.
A few-shot draw has its own seed (``few_shot_seed``, recorded per task), as before.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_seed

__all__ = ["RunSeeds"]


class RunSeeds(BaseModel):
    """The seeds of a run's named streams (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: int
    bootstrap: int

    @classmethod
    def derive(cls, seed: int) -> RunSeeds:
        """The streams of the user's ``seed``: the only place they are derived."""
        return cls(items=seed, bootstrap=derived_seed(str(seed), "bootstrap"))

    @classmethod
    def legacy(cls, seed: int) -> RunSeeds:
        """The streams of a run recorded before they were separate: both drew from the user's
        seed (finalize named its draws by task and metric), so its summary is reproduced."""
        return cls(items=seed, bootstrap=seed)
