"""What the runtime gates (sanitizer, matrix, budget) share: programs built from the
case's tree plus a grader-owned driver unit, in named envelopes, and sanitizer reports.

The cell specs are built here, in one way, so that the same (tree, unit, envelope) asked
for by two gates is the same CellSpec, hence the same key, built once. The same goes for
plain runs: identical argv, stdin, environment and limits give one run.

Every program is linked with the harness entry (cxxgate/cell.py ENTRY_SOURCE): a run that
ends without returning from its unit's main (a static initialiser calling _exit) fails,
whatever its exit status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from cxxgate.cellspec import NEUTRAL_TREE, UNIT_NAME, CellSpec, Unit
from cxxgate.envelope import Envelope
from cxxgate.gate import Context
from cxxgate.run import RunResult, RunSpec
from cxxgate.yamlfile import Strict


class Program(Strict):
    """A grader-owned driver unit, linked with the case's `sources`, and how to run it."""

    unit: str
    args: list[str] = Field(default_factory=list)
    stdin: str = ""
    stdout: str | None = None  # golden stdout: a file in the case folder, outside tree/
    exit: int = 0


def unit_of(ctx: Context, rel: str, key: str) -> Unit:
    # Every harness unit has the same ordinary name: __BASE_FILE__ must not say "probe".
    return Unit(UNIT_NAME, ctx.case.oracle_text(rel, key))


def golden(ctx: Context, rel: str | None, key: str) -> bytes | None:
    return None if rel is None else ctx.case.oracle(rel, key).read_bytes()


def program_cell(ctx: Context, tree_key: str, unit: Unit, env: Envelope, label: str) -> CellSpec:
    case = ctx.case
    return CellSpec(
        kind="exe",
        tree_key=tree_key,
        units=(unit,),
        tree_sources=tuple(case.spec.sources),
        include_dirs=tuple(case.spec.include_dirs),
        envelope=env,
        compile_seconds=case.spec.limits.compile_seconds,
        label=label,
        entry=True,
    )


def program_run(
    ctx: Context,
    cell: CellSpec,
    prog: Program,
    env: tuple[tuple[str, str], ...],
    label: str,
) -> RunSpec:
    limits = ctx.case.spec.limits
    return RunSpec(
        cell_key=cell.key,
        args=tuple(prog.args),
        stdin=prog.stdin,
        env=env,
        timeout=limits.run_seconds,
        output_cap=limits.output_bytes,
        caps=limits.caps(cell.envelope.flags),
        label=label,
    )


# ---- sanitizer reports ---------------------------------------------------------------

_ASAN = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer): ([\w-]+)")
_UBSAN = re.compile(
    r"^(?P<where>\S+?):(?P<line>\d+):(?:\d+:)? runtime error: (?P<what>[^:\n]+)", re.M
)
_FRAME = re.compile(
    r"^\s*#\d+ 0x[0-9a-f]+ in (?P<func>.+?) (?P<file>/\S+|\S+\.\w+):(?P<line>\d+)", re.M
)
_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "UndefinedBehaviorSanitizer",
    "SUMMARY: AddressSanitizer",
)


@dataclass(frozen=True)
class Report:
    """The first sanitizer report on a run's stderr: its kind and the top frame we own."""

    kind: str  # heap-use-after-free, detected memory leaks, signed integer overflow, ...
    where: str  # file:line of the first frame in the tree or a driver unit; "" if none

    def brief(self) -> str:
        return f"{self.kind} at {self.where}" if self.where else self.kind


def sanitizer_report(stderr: str, tree_root: str) -> Report | None:
    if not any(m in stderr for m in _MARKERS):
        return None
    ub = _UBSAN.search(stderr)
    asan = _ASAN.search(stderr)
    if ub and (asan is None or ub.start() < asan.start()):
        return Report(ub["what"].strip(), f"{_shown(ub['where'], tree_root)}:{ub['line']}")
    if asan is None:
        return Report("sanitizer report", "")
    kind = asan[2]
    if asan[1] == "LeakSanitizer":
        kind = "memory leak"
    return Report(kind, _top_frame(stderr[asan.end() :], tree_root))


def _top_frame(text: str, tree_root: str) -> str:
    """The first frame in code the case owns: not the runtime, not the standard library."""
    for m in _FRAME.finditer(text):
        file = m["file"]
        if file.startswith(("/usr/", "../")) or "libsanitizer" in file:
            continue
        return f"{_shown(file, tree_root)}:{m['line']}"
    return ""


def _shown(file: str, tree_root: str) -> str:
    path = Path(file)
    # Debug info names the tree by its neutral path (-ffile-prefix-map in cxxgate/cell.py).
    for root in (tree_root, NEUTRAL_TREE):
        if root and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return path.name


def run_problem(run: RunResult, want_exit: int) -> str | None:
    """Why a run did not end as a clean exit with `want_exit`; None when it did."""
    if run.status == "not_built":
        return "not built"
    if run.status == "hang":
        return "killed at the time limit"
    if run.status == "output_overflow":
        return "killed at the output cap"
    if run.status == "signaled":
        return run.detail or f"killed by signal {run.signal}"
    if run.exit != want_exit:
        return f"exit {run.exit} (expected {want_exit}): {run.detail or run.output_tail()}"
    if run.returned is False:
        return f"exited before main returned (exit {run.exit}): {run.output_tail()}"
    return None


MISSING = ("toolchain_missing", "no_tree", "harness_error")
