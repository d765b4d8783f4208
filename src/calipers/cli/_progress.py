"""A rich progress bar per task, on stderr, with a running error count and, while a request
is being retried, what failed and how long the wait is."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from calipers.models import Retry
    from calipers.store import SampleRecord

__all__ = ["BarProgress"]


class BarProgress:
    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[errors]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[note]}"),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self._ids: dict[str, TaskID] = {}
        self.run_id: str | None = None
        self._errors: dict[str, int] = {}
        self._retrying: dict[str, dict[str, str]] = {}  # task -> sample id -> what is retried

    def __enter__(self) -> BarProgress:
        self._bar.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.stop()

    def start_run(self, run_id: str) -> None:
        self.run_id = run_id

    def note(self, message: str) -> None:
        """One line above the bars (on stderr), shown even when the bars are not."""
        self._bar.console.print(f"[yellow]Note:[/] {escape(message)}", soft_wrap=True)

    def start_task(self, task: str, total: int, done: int) -> None:
        self._errors[task] = 0
        self._retrying[task] = {}
        self._ids[task] = self._bar.add_task(task, total=total, completed=done, errors="", note="")

    def _note(self, task: str) -> str:
        notes = self._retrying[task]
        if not notes:
            return ""
        last = escape(list(notes.values())[-1])
        more = f" (+{len(notes) - 1} more)" if len(notes) > 1 else ""
        return f"[yellow]{last}{more}[/]"

    def advance(self, task: str, record: SampleRecord) -> None:
        self._retrying[task].pop(record.sample_id, None)
        if record.error is None:
            self._bar.update(self._ids[task], advance=1, note=self._note(task))
            return
        self._errors[task] += 1
        label = f"[red]{self._errors[task]} errors[/]"
        self._bar.update(self._ids[task], advance=1, errors=label, note=self._note(task))

    def retrying(self, task: str, sample_id: str, retry: Retry) -> None:
        notes = self._retrying[task]
        notes.pop(sample_id, None)  # the newest retry is shown
        notes[sample_id] = f"{sample_id}: {retry.describe()}"
        self._bar.update(self._ids[task], note=self._note(task))

    def finish_task(self, task: str) -> None:
        pass
