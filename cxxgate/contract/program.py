"""One program model for every runtime gate: what to build, how to run it, what it must do.

A program is built from its `units` (grader-owned files beside the tree, or files of the
tree itself such as the project's own test) linked with the case's `sources`, run with
`args` and a stdin (inline or from a file beside the tree), and expected to exit with
`exit` and print an expected stdout: inline, a golden file, or the bytes the case's
reference state printed for the same program (`stdout_of: reference`). `fail_to_pass`
marks every check made of it: it must fail (or not build) on the base tree and pass on the
reference (cxxgate/verdicts/verdict.py).

Gates keep their own classes; what they share is here: the cell and run specs (the same
program asked for by two gates is one key, built and run once), the expected stdout, and
the reasons a run did not do what the program says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any, Literal

import pathspec
from pydantic import Field, model_validator

from cxxgate.contract.gate import Context, Outputs, Plan
from cxxgate.results.result import BASELINE_RED, Check
from cxxgate.runs.run import RunResult, RunSpec
from cxxgate.toolchain.cellspec import UNIT_NAME, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelope
from cxxgate.util.yamlfile import InputError, Strict, TreePath

REFERENCE = "@reference"  # suffix of the plan names of a program's run on the reference tree


class UnitRef(Strict):
    """A translation unit of a program: a file of the case beside the tree (`oracle`, the
    short form is a plain string) or a file of the tree (`tree`: e.g. its own test)."""

    oracle: str | None = None
    tree: TreePath | None = None

    @model_validator(mode="before")
    @classmethod
    def _short(cls, data: Any) -> Any:
        return {"oracle": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one(self) -> UnitRef:
        if (self.oracle is None) == (self.tree is None):
            msg = "give exactly one of 'oracle' (a file beside tree/) or 'tree' (a file in it)"
            raise ValueError(msg)
        return self

    @property
    def path(self) -> str:
        return self.oracle if self.oracle is not None else f"tree/{self.tree}"


class Program(Strict):
    units: list[UnitRef] = Field(min_length=1)  # the first holds `main`
    args: list[str] = Field(default_factory=list)
    stdin: str | None = None
    stdin_file: str | None = None  # a file beside tree/
    stdout: str | None = None  # exact bytes
    stdout_file: str | None = None  # a golden file beside tree/
    stdout_of: Literal["reference"] | None = None  # what the reference state printed
    exit: int = 0
    fail_to_pass: bool = False

    @model_validator(mode="after")
    def _one_of_each(self) -> Program:
        if self.stdin is not None and self.stdin_file is not None:
            msg = "give 'stdin' (inline) or 'stdin_file', not both"
            raise ValueError(msg)
        given = [k for k in ("stdout", "stdout_file", "stdout_of") if getattr(self, k) is not None]
        if len(given) > 1:
            msg = f"give one of 'stdout', 'stdout_file', 'stdout_of', not {given}"
            raise ValueError(msg)
        return self

    @property
    def name(self) -> str:
        """How checks and labels name the program: its first unit."""
        return self.units[0].path

    @property
    def checks_stdout(self) -> bool:
        return any(v is not None for v in (self.stdout, self.stdout_file, self.stdout_of))

    def oracle_files(self) -> list[str]:
        """The case files beside the tree this program reads."""
        files = [u.oracle for u in self.units if u.oracle is not None]
        return files + [f for f in (self.stdin_file, self.stdout_file) if f is not None]


# ---- plan ------------------------------------------------------------------------------


def check(ctx: Context, prog: Program, key: str, need_stdout: bool = False) -> None:
    """Every file the program names exists where it must, before anything is built.
    `key` is the program's case.yaml key (`gates.matrix.programs[0]`)."""
    if prog.fail_to_pass and ctx.case.spec.reference is None:
        msg = (
            f"{ctx.case.file}: {key}.fail_to_pass: the case has no `reference:` patch, so its "
            "base tree is its reference: no check can fail on one and pass on the other"
        )
        raise InputError(msg)
    if need_stdout and not prog.checks_stdout:
        msg = (
            f"{ctx.case.file}: {key}: this gate compares stdout: give 'stdout', "
            "'stdout_file' or 'stdout_of: reference'"
        )
        raise InputError(msg)
    units(ctx, prog, key)
    stdin(ctx, prog, key)
    if prog.stdout_file is not None:
        ctx.case.oracle(prog.stdout_file, f"{key}.stdout_file")


Parts = tuple[tuple[Unit, ...], tuple[str, ...], tuple[str, ...]]


def units(ctx: Context, prog: Program, key: str) -> Parts:
    """(harness units, tree sources, include folders) the program adds to a cell.

    The first unit is always a harness unit, so the harness entry can rename its `main`
    (cxxgate/cells/cell.py): a tree file there is reached through a one-line unit that includes
    it, with its folder on the include path. Tree units after the first are tree sources.
    """
    case = ctx.case
    harness: list[Unit] = []
    sources: list[str] = []
    include: list[str] = []
    writable = pathspec.GitIgnoreSpec.from_lines(case.spec.writable)
    for j, ref in enumerate(prog.units):
        where = f"{key}.units[{j}]"
        name = UNIT_NAME if j == 0 else f"unit{j}.cpp"
        if ref.oracle is not None:
            # Every harness unit has an ordinary name: __BASE_FILE__ must not say "probe".
            harness.append(Unit(name, case.oracle_text(ref.oracle, f"{where}.oracle")))
            continue
        assert ref.tree is not None
        if not (case.tree / ref.tree).is_file():
            msg = f"{case.file}: {where}.tree: {ref.tree!r} is not a file of the base tree"
            raise InputError(msg)
        if writable.match_file(ref.tree):
            msg = (
                f"{case.file}: {where}.tree: {ref.tree!r} is in the writable set "
                f"{case.spec.writable}: a patch could rewrite the check it is graded by"
            )
            raise InputError(msg)
        if j > 0:
            sources.append(ref.tree)
            continue
        folder = PurePosixPath(ref.tree).parent.as_posix()
        include.append(folder)
        harness.append(Unit(name, f'#include "{PurePosixPath(ref.tree).name}"\n'))
    return tuple(harness), tuple(sources), tuple(include)


def stdin(ctx: Context, prog: Program, key: str) -> str:
    if prog.stdin_file is not None:
        return ctx.case.oracle_text(prog.stdin_file, f"{key}.stdin_file")
    return prog.stdin or ""


def cell(
    ctx: Context, prog: Program, key: str, env: Envelope, label: str, tree_key: str | None = None
) -> CellSpec:
    """The program linked with the case's sources and the harness entry, on a tree (this
    row's by default)."""
    case = ctx.case
    harness, sources, include = units(ctx, prog, key)
    return CellSpec(
        kind="exe",
        tree_key=ctx.tree_key if tree_key is None else tree_key,
        units=harness,
        tree_sources=(*case.spec.sources, *sources),
        include_dirs=(*case.spec.include_dirs, *include),
        envelope=env,
        compile_seconds=case.spec.limits.compile_seconds,
        label=label,
        entry=True,
    )


def run(
    ctx: Context,
    cell: CellSpec,
    prog: Program,
    key: str,
    env: tuple[tuple[str, str], ...],
    label: str,
    **more: Any,
) -> RunSpec:
    """A plain run of a program's cell under the case's limits; `more` sets the other
    RunSpec fields (a wrapper, kept files)."""
    limits = ctx.case.spec.limits
    fields: dict[str, Any] = {
        "cell_key": cell.key,
        "args": tuple(prog.args),
        "stdin": stdin(ctx, prog, key),
        "env": env,
        "timeout": limits.run_seconds,
        "output_cap": limits.output_bytes,
        "caps": limits.caps(cell.envelope.flags),
        "label": label,
    }
    return RunSpec(**(fields | more))


def add(ctx: Context, out: Plan, name: str, prog: Program, cell: CellSpec, run: RunSpec) -> None:
    """Put a program's cell and run into a plan under `name`; for `stdout_of: reference`,
    the same cell and run on the reference tree too (the reference row's own keys: one
    build and one run per case, shared by every row)."""
    out.cells[name] = cell
    out.runs[name] = run
    if prog.stdout_of == "reference":
        ref_cell = replace(cell, tree_key=ctx.reference_tree_key)
        out.cells[name + REFERENCE] = ref_cell
        out.runs[name + REFERENCE] = replace(run, cell_key=ref_cell.key)


# ---- classify --------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """The stdout a program must print. `stdout` None: not checked. `problem`: the
    expectation itself could not be had (the reference's run of it failed)."""

    stdout: bytes | None
    shown: str  # how a message names it
    problem: str = ""


def expected(ctx: Context, prog: Program, key: str, outputs: Outputs, name: str) -> Expected:
    if prog.stdout is not None:
        return Expected(prog.stdout.encode(), "the expected stdout")
    if prog.stdout_file is not None:
        golden = ctx.case.oracle(prog.stdout_file, f"{key}.stdout_file").read_bytes()
        return Expected(golden, f"golden {prog.stdout_file}")
    if prog.stdout_of == "reference":
        ref = outputs.runs[name + REFERENCE]
        why = run_problem(ref, prog.exit)
        if why is not None:
            return Expected(None, "the reference's stdout", f"the reference's run: {why}")
        return Expected(ref.stdout, "the reference's run")
    return Expected(None, "")


def undecided(name: str, want: Expected) -> Check:
    """The check of a program whose expected stdout is the reference's, when the reference
    run failed: the case is broken for this gate, not the candidate."""
    return Check(name, False, BASELINE_RED, want.problem, incomplete=True)


def stdout_problem(got: bytes, want: Expected, width: int = 60) -> str | None:
    if want.stdout is None or got == want.stdout:
        return None
    where, mine, theirs = parting(got, want.stdout)
    return f"{where}printed {excerpt(mine, width)}, {want.shown} has {excerpt(theirs, width)}"


def parting(got: bytes, want: bytes) -> tuple[str, bytes, bytes]:
    """Both outputs from the first line where they part ('line N: ' when N > 1), so a
    message shows the difference, not a shared first line."""
    mine, theirs = got.splitlines(keepends=True), want.splitlines(keepends=True)
    n = 0
    while n < min(len(mine), len(theirs)) and mine[n] == theirs[n]:
        n += 1
    where = f"line {n + 1}: " if n else ""
    return where, b"".join(mine[n:]), b"".join(theirs[n:])


def problem(run: RunResult, prog: Program, want: Expected) -> str | None:
    """Why a run is not what the program says: exit, how it ended, stdout; None if it is."""
    return run_problem(run, prog.exit) or stdout_problem(run.stdout, want)


def tagged(prog: Program, key: str, checks: list[Check]) -> list[Check]:
    """The checks made of one program, marked `fail_to_pass` as one group: on the base
    tree at least one of them must fail (cxxgate/verdicts/verdict.py)."""
    if not prog.fail_to_pass:
        return checks
    return [replace(c, fail_to_pass=True, group=f"{key} ({prog.name})") for c in checks]


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


def excerpt(data: bytes, width: int = 60) -> str:
    text = data[:width].decode(errors="replace")
    return repr(text + ("..." if len(data) > width else ""))
