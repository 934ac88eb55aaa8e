"""What the runtime gates share besides the program model (cxxgate/contract/program.py): cells
of drivers the harness renders itself, and sanitizer reports.

Every program is linked with the harness entry (cxxgate/cells/cell.py ENTRY_SOURCE): a run that
ends without returning from its unit's main (a static initialiser calling _exit) fails,
whatever its exit status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cxxgate.contract import program
from cxxgate.contract.gate import Context
from cxxgate.host.sandbox import NEUTRAL_TREE
from cxxgate.toolchain.cellspec import UNIT_NAME, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelope


def unit_of(ctx: Context, rel: str, key: str) -> Unit:
    # Every harness unit has the same ordinary name: __BASE_FILE__ must not say "probe".
    return Unit(UNIT_NAME, ctx.case.oracle_text(rel, key))


def program_cell(ctx: Context, tree_key: str, unit: Unit, env: Envelope, label: str) -> CellSpec:
    """A driver the harness renders itself (slope, metamorphic); a case's programs are
    built by cxxgate/contract/program.py, to the same key when they are one oracle unit."""
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
    # Debug info names the tree by its neutral path (-ffile-prefix-map in cxxgate/cells/cell.py).
    for root in (tree_root, NEUTRAL_TREE):
        if root and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return path.name


run_problem = program.run_problem

MISSING = ("toolchain_missing", "no_tree", "harness_error")
