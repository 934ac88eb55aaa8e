"""The grade's progress, as doit's reporter: one display for a batch, not one line per task.

On a terminal, a live line (rich): done/total tasks, compiles and runs so far (cell and exec
tasks executed), rejects so far (read from each row's verdict as its task ends), rate and
ETA. When stdout is not a terminal (a CI log), a plain line every PLAIN_SECONDS and one
final line. Either way the display closes when a task that writes to the terminal itself
starts (the grade: its summary and reasons follow, unchanged), and task failures are printed
as doit prints them. At verbosity 2 (`doit -v 2 grade`, or `doit grade verbosity=2`) it
lists every task as doit's console reporter does, for debugging.

It is also where doit's records of finished tasks are saved while the grade runs, every
SAVE_SECONDS (cxxgate/graph/checkpoint.py): doit calls it right after it records each success.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

from doit.reporter import ConsoleReporter
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as BarTask
from rich.text import Text

from cxxgate.graph import checkpoint

# Task basenames of the pipeline (cxxgate/graph/pipeline.py) that the display counts.
COMPILE = "cell:"
RUN = "exec:"
VERDICT = "verdict:"


@dataclass
class Tally:
    total: int = 0
    done: int = 0
    compiles: int = 0
    runs: int = 0
    rejects: int = 0
    failed: int = 0

    def counts(self) -> str:
        text = f"{self.compiles} compiles, {self.runs} runs, {self.rejects} rejects"
        return text + (f", {self.failed} failed" if self.failed else "")

    def line(self, elapsed: float) -> str:
        """A periodic line for a log."""
        share = 100 * self.done // self.total if self.total else 100
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = _clock((self.total - self.done) / rate) if rate > 0 else "?"
        return (
            f"progress: {self.done}/{self.total} tasks ({share}%), {self.counts()}, "
            f"{rate:.1f} tasks/s, {_clock(elapsed)} elapsed, ETA {eta}\n"
        )

    def final(self, elapsed: float) -> str:
        return f"progress: {self.done}/{self.total} tasks, {self.counts()} in {_clock(elapsed)}\n"


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Counts(ProgressColumn):
    def render(self, task: BarTask) -> Text:
        tally: Tally = task.fields["tally"]
        return Text(tally.counts())


class _Rate(ProgressColumn):
    def render(self, task: BarTask) -> Text:
        return Text(f"{task.speed:.1f} tasks/s" if task.speed else "- tasks/s")


class GradeProgress(ConsoleReporter):  # type: ignore[misc]
    """doit's reporter for cxxgate (DOIT_CONFIG["reporter"]); `--reporter NAME` still
    picks one of doit's own."""

    desc = "cxxgate: progress display on a terminal, periodic lines in a log"
    PLAIN_SECONDS: ClassVar[float] = 10.0
    SAVE_SECONDS: ClassVar[float] = 5.0  # what a kill can lose, at most
    clock = staticmethod(time.monotonic)
    save_clock = staticmethod(time.monotonic)

    def __init__(self, outstream: TextIO, options: dict[str, Any]) -> None:
        super().__init__(outstream, options)
        self.tally = Tally()
        self._counted: set[str] = set()
        self._finished: set[str] = set()
        self._own: dict[str, int | None] = {}  # a task's own verbosity, before doit's
        self._mode: str | None = None  # "list", "live" or "plain", set at the first task
        self._closed = False
        self._lock = threading.RLock()
        self._console = Console(file=outstream)
        self._bar: Progress | None = None
        self._bar_task: Any = None
        self._start = self._last = self.clock()
        self._saved = self.save_clock()

    # ---- doit's reporter interface -------------------------------------------------

    def initialize(self, tasks: dict[str, Any], selected_tasks: list[str]) -> None:
        """Total: every task with actions the selected tasks depend on (doit has added the
        implicit file_dep -> target dependencies to task_dep by now)."""
        seen: set[str] = set()
        stack = list(selected_tasks)
        while stack:
            name = stack.pop()
            if name in seen or name not in tasks:
                continue
            seen.add(name)
            stack += tasks[name].task_dep
            stack += tasks[name].setup_tasks
        self._counted = {n for n in seen if tasks[n].actions}
        self.tally.total = len(self._counted)

    def get_status(self, task: Any) -> None:
        self._own[task.name] = task.verbosity

    def execute_task(self, task: Any) -> None:
        # Called from the worker threads under `doit -n N -P thread`.
        with self._lock:
            mode = self._mode_for(task)
            if mode == "list":
                super().execute_task(task)
            elif task.verbosity is not None and task.verbosity >= 2:
                # It writes to the terminal itself: count it done and close the display,
                # so its output follows the final counts.
                self._finish(task)
                self._close()

    def skip_uptodate(self, task: Any) -> None:
        with self._lock:
            if self._mode_for(task) == "list":
                super().skip_uptodate(task)
            self._finish(task)

    def skip_ignore(self, task: Any) -> None:
        with self._lock:
            if self._mode_for(task) == "list":
                super().skip_ignore(task)
            self._finish(task)

    def add_success(self, task: Any) -> None:
        with self._lock:
            self._finish(task, ran=True)
            now = self.save_clock()
            if now - self._saved >= self.SAVE_SECONDS:
                self._saved = now
                checkpoint.save()

    def add_failure(self, task: Any, fail: Any) -> None:
        with self._lock:
            if fail.report:
                self.tally.failed += 1
            super().add_failure(task, fail)  # printed now, as doit prints it
            self._finish(task)

    def complete_run(self) -> None:
        with self._lock:
            self._close()
            super().complete_run()

    def write(self, text: str) -> None:
        if self._bar is not None and not self._closed:
            self._console.out(text, end="", highlight=False)  # above the live display
        else:
            self.outstream.write(text)

    # ---- the display ---------------------------------------------------------------

    def _mode_for(self, task: Any) -> str:
        """doit has set the task's effective verbosity: the global one (`-v`, DOIT_CONFIG,
        [tool.doit]) unless the task sets its own and no `-v` overrides it."""
        if self._mode is not None:
            return self._mode
        own = self._own.get(task.name)
        decided = own is None or task.verbosity != own
        if decided and task.verbosity is not None and task.verbosity >= 2:
            mode = "list"
        else:
            mode = "live" if self._console.is_interactive else "plain"
        if decided:
            self._mode = mode
            if mode == "live":
                self._open_bar()
        return mode

    def _open_bar(self) -> None:
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("grade"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            _Counts(),
            _Rate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self._console,
            redirect_stdout=False,  # doit swaps sys.stdout per task to capture output
            redirect_stderr=False,
            refresh_per_second=4,
        )
        self._bar_task = self._bar.add_task("grade", total=self.tally.total, tally=self.tally)
        self._bar.start()

    def _finish(self, task: Any, ran: bool = False) -> None:
        if task.name not in self._counted or task.name in self._finished:
            return
        self._finished.add(task.name)
        self.tally.done += 1
        if ran and task.name.startswith(COMPILE):
            self.tally.compiles += 1
        elif ran and task.name.startswith(RUN):
            self.tally.runs += 1
        if task.name.startswith(VERDICT) and task.targets:
            self.tally.rejects += _is_reject(task.targets[0])
        if self._closed:
            return
        if self._bar is not None:
            self._bar.update(self._bar_task, completed=self.tally.done)
        elif self._mode == "plain":
            now = self.clock()
            if now - self._last >= self.PLAIN_SECONDS:
                self._last = now
                self.outstream.write(self.tally.line(now - self._start))
                self.outstream.flush()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.update(self._bar_task, completed=self.tally.done)
            self._bar.stop()
        elif self._mode != "list":
            self.outstream.write(self.tally.final(self.clock() - self._start))
            self.outstream.flush()


def _is_reject(verdict_file: str) -> bool:
    """One small read per row: cheap beside the fold that reads it again."""
    try:
        return bool(json.loads(Path(verdict_file).read_bytes()).get("verdict") == "reject")
    except (OSError, ValueError, AttributeError):
        return False
