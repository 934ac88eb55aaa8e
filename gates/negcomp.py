"""Gate `negcomp`: negative compilation. Some programs must keep failing to compile.

must_build units compile, link and exit 0; must_fail units must keep failing, on the line
they mark, for the reason they pin. Classes, most severe first:

| class                  | meaning                                                        |
| ---------------------- | -------------------------------------------------------------- |
| surface_regression     | a must-fail unit now compiles: the API admits what it forbade   |
| build_broken           | a must-build unit no longer compiles or links                   |
| functional_regression  | a must-build unit builds but exits non-zero, dies, or ends      |
|                        | without returning from its main (the harness entry says so)    |
| hang / output_overflow | a must-build unit ran past its time or output limit             |
| fails_for_wrong_reason | a must-fail unit fails, but its first error is on another line  |
|                        | of the unit, or in a header with the pinned diagnostic gone, or |
|                        | its twin (the unit without the marked line) no longer compiles  |
| toolchain_mismatch     | fails on the marked line (or where the reference's first error  |
|                        | was), but the pinned diagnostic drifted                         |
| accept                 | all of the above hold                                           |

Must-fail units are compiled `-fsyntax-only`: they never need an object file. They must
fail for an error the language makes: a warning that -Werror promoted (GCC's JSON option
`-Werror=X`, clang's `[-Werror,-WX]`) counts as a warning, for the unit and its twin, so a
call that now compiles with only a [[nodiscard]] warning is a surface regression.

Units are compiled under one ordinary name, with the tree at a neutral path (cxxgate/cells/cell.py):
a header cannot tell a probe from a build. must_build programs are linked with the harness
entry, which reports a per-run nonce once the unit's main returned (cxxgate/runs/run.py).
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from cxxgate.api import (
    ENTRY_UNIT,
    TOOLCHAIN_MISSING,
    UNIT_NAME,
    CellResult,
    CellSpec,
    Check,
    Context,
    Diagnostic,
    Family,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    RunResult,
    RunSpec,
    Strict,
    Unit,
    first_error,
    in_tree,
    of_cell,
    probe,
    why_failed,
)

NAME = "negcomp"
SEVERITY = (
    "surface_regression",
    "build_broken",
    "functional_regression",
    "hang",
    "output_overflow",
    "fails_for_wrong_reason",
    "toolchain_mismatch",
)
MARKER = "cxxgate: reject"


class RegexPin(Strict):
    regex: str

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:  # pydantic reports a ValueError with the file and key
            msg = f"not a valid regular expression: {exc}"
            raise ValueError(msg) from None
        return v


class BuildUnit(Strict):
    unit: str
    fail_to_pass: bool = False
    args: list[str] = Field(default_factory=list)
    stdin: str = ""


class FailUnit(Strict):
    unit: str | None = None
    template: str | None = None
    args: dict[str, str] = Field(default_factory=dict)
    line: int | None = Field(default=None, ge=1)
    diagnostic: dict[Family, str | RegexPin] = Field(default_factory=dict)
    fail_to_pass: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> FailUnit:
        if (self.unit is None) == (self.template is None):
            msg = "give exactly one of 'unit' (a file) or 'template' (a name under templates/)"
            raise ValueError(msg)
        if self.line is not None and self.unit is None:
            msg = "'line' applies to a unit file; a template marks its own line"
            raise ValueError(msg)
        return self


class Config(Strict):
    envelope: str | None = None
    must_build: list[BuildUnit] = Field(default_factory=list)
    must_fail: list[FailUnit] = Field(default_factory=list)

    @field_validator("must_build", mode="before")
    @classmethod
    def _shorthand(cls, v: object) -> object:
        # A bare path is the common case: `- probes/pos_move.cpp`.
        if isinstance(v, list):
            return [{"unit": x} if isinstance(x, str) else x for x in v]
        return v


def plan(ctx: Context) -> Plan:
    case = ctx.case
    cfg: Config = case.gate_config(NAME)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    out = Plan()
    include_dirs = tuple(case.spec.include_dirs)
    for i, bu in enumerate(cfg.must_build):
        text = case.oracle_text(bu.unit, f"gates.{NAME}.must_build[{i}].unit")
        cell = CellSpec(
            kind="exe",
            tree_key=ctx.tree_key,
            units=(Unit(UNIT_NAME, text),),
            tree_sources=tuple(case.spec.sources),
            include_dirs=include_dirs,
            envelope=env,
            compile_seconds=case.spec.limits.compile_seconds,
            label=f"{NAME} build {bu.unit}",
            entry=True,
        )
        out.cells[f"build{i}"] = cell
        out.runs[f"run{i}"] = RunSpec(
            cell_key=cell.key,
            args=tuple(bu.args),
            stdin=bu.stdin,
            env=env.run_env,
            timeout=case.spec.limits.run_seconds,
            output_cap=case.spec.limits.output_bytes,
            caps=case.spec.limits.caps(env.flags),
            label=f"{NAME} run {bu.unit}",
        )
    for i, fu in enumerate(cfg.must_fail):
        unit, line = _must_fail_unit(ctx, fu, i)
        twin = Unit(unit.name, _blank_line(unit.text, line))
        # The reference tree's own compile of the unit (the same spec, hence the same key as
        # the reference row's cell): where its first error was, for a drifted pin.
        for name, u, tree_key in (
            (f"fail{i}", unit, ctx.tree_key),
            (f"twin{i}", twin, ctx.tree_key),
            (f"ref{i}", unit, ctx.reference_tree_key),
        ):
            out.cells[name] = CellSpec(
                kind="syntax",
                tree_key=tree_key,
                units=(u,),
                tree_sources=(),
                include_dirs=include_dirs,
                envelope=env,
                compile_seconds=case.spec.limits.compile_seconds,
                label=f"{NAME} {name.rstrip('0123456789')} {_shown(fu, i)}",
            )
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    family = ctx.gate_envelope(NAME, cfg.envelope).toolchain.family
    checks: list[Check] = []
    findings: list[Finding] = []
    for i, bu in enumerate(cfg.must_build):
        check = _check_build(
            f"must_build {bu.unit}",
            outputs.cells[f"build{i}"],
            outputs.runs[f"run{i}"],
            bu.fail_to_pass,
        )
        checks.append(check)
        findings += _findings(check, [outputs.cells[f"build{i}"]])
    for i, fu in enumerate(cfg.must_fail):
        unit, line = _must_fail_unit(ctx, fu, i)
        check = _check_fail(
            f"must_fail {_shown(fu, i)}",
            unit.name,
            line,
            fu.diagnostic.get(family),
            outputs.cells[f"fail{i}"],
            outputs.cells[f"twin{i}"],
            outputs.cells[f"ref{i}"],
            fu.fail_to_pass,
        )
        checks.append(check)
        findings += _findings(check, [outputs.cells[f"fail{i}"], outputs.cells[f"twin{i}"]])
    result = GateResult.from_checks(NAME, checks, SEVERITY, [])
    result.findings.extend(findings)
    return result


def _findings(check: Check, cells: list[CellResult]) -> list[Finding]:
    """Where a failed check points into the patched tree: the first cell (in the order
    given) whose first hard error lies in a tree file. An error in the probe unit itself
    (an oracle, outside the tree) or in a system header has no place on the diff, and a
    unit that now compiles has no diagnostic at all: neither gives a finding."""
    if check.ok or check.incomplete:
        return []
    for cell in cells:
        first = first_error(of_cell(cell), hard=True)
        if first is not None and in_tree(first, (UNIT_NAME, ENTRY_UNIT)):
            where = f"{check.name}: {first.message}"
            return [Finding(check.klass, where, first.file, first.line, first.column)]
    return []


def _shown(fu: FailUnit, i: int) -> str:
    return fu.unit or f"{fu.template}#{i}"


def _must_fail_unit(ctx: Context, fu: FailUnit, i: int) -> tuple[Unit, int]:
    case = ctx.case
    key = f"gates.{NAME}.must_fail[{i}]"
    if fu.unit is not None:
        unit = Unit(UNIT_NAME, case.oracle_text(fu.unit, f"{key}.unit"))
        where = f"{case.file}: {key}.unit ({fu.unit})"
    else:
        assert fu.template is not None
        template = f"{NAME}/{fu.template}.cpp.j2"
        if not probe.exists(template):
            msg = f"{case.file}: {key}.template: no template {template!r} under templates/"
            raise InputError(msg)
        headers = [case.header_include(h) for h in case.spec.public_headers]
        try:
            text = probe.render(template, headers=headers, **fu.args)
        except Exception as exc:  # jinja's UndefinedError names the missing argument
            msg = f"{case.file}: {key}.args: cannot render {template!r}: {exc}"
            raise InputError(msg) from exc
        unit = Unit(UNIT_NAME, text)
        where = f"{case.file}: {key}.template ({fu.template})"
    if fu.line is not None:
        if fu.line > len(unit.text.splitlines()):
            msg = f"{where}: line {fu.line} is past the end of the unit"
            raise InputError(msg)
        return unit, fu.line
    marked = [n for n, text in enumerate(unit.text.splitlines(), 1) if MARKER in text]
    if len(marked) != 1:
        msg = (
            f"{where}: a must-fail unit marks exactly one line with '// {MARKER}' "
            f"(or gives 'line:'); found {len(marked)}"
        )
        raise InputError(msg)
    return unit, marked[0]


def _blank_line(text: str, line: int) -> str:
    # The twin keeps line numbers: the marked line becomes empty.
    lines = text.splitlines(keepends=True)
    lines[line - 1] = "\n"
    return "".join(lines)


def _check_build(name: str, cell: CellResult, run: RunResult, f2p: bool) -> Check:
    if cell.status == "toolchain_missing":
        return Check(name, False, TOOLCHAIN_MISSING, cell.detail, f2p, incomplete=True)
    if cell.status != "ok":
        return Check(name, False, "build_broken", why_failed(cell), f2p)
    if run.status in {"hang", "output_overflow"}:
        limit = "time limit" if run.status == "hang" else "output cap"
        return Check(name, False, run.status, f"killed at the {limit}", f2p)
    if run.status == "signaled":
        why = run.detail or f"killed by signal {run.signal}"
        return Check(name, False, "functional_regression", why, f2p)
    if not run.passed:
        detail = f"exit {run.exit}: {run.detail or run.output_tail()}"
        return Check(name, False, "functional_regression", detail, f2p)
    if run.returned is not True:
        # exit 0, but the harness entry never reported: something ended the program
        # before its main returned (a static initialiser calling _exit, a hijacked main).
        detail = f"exited before main returned (exit {run.exit}): {run.output_tail()}"
        return Check(name, False, "functional_regression", detail, f2p)
    return Check(name, True, "accept", "built, returned from main and exited 0", f2p)


def _check_fail(
    name: str,
    unit: str,
    line: int,
    pin: str | RegexPin | None,
    cell: CellResult,
    twin: CellResult,
    reference: CellResult,
    f2p: bool,
) -> Check:
    if TOOLCHAIN_MISSING in (cell.status, twin.status):
        return Check(
            name, False, TOOLCHAIN_MISSING, cell.detail or twin.detail, f2p, incomplete=True
        )
    if cell.status == "ok":
        return Check(
            name, False, "surface_regression", f"now compiles: line {line} is accepted", f2p
        )
    diags = of_cell(cell)
    first = first_error(diags, hard=True)
    promoted = first_error(diags)
    if cell.status == "compile_error" and first is None and promoted is not None:
        # Only warnings the envelope's -Werror promoted: the forbidden code compiles.
        flag = "" if "-Werror" in promoted.message else f" [{promoted.option}]"  # clang's has it
        return Check(
            name,
            False,
            "surface_regression",
            f"now compiles: line {line} is accepted, with only a promoted warning: "
            f"{promoted.brief()}{flag}",
            f2p,
        )
    if cell.status == "timeout" or first is None:
        return Check(
            name,
            False,
            "fails_for_wrong_reason",
            f"failed without an error diagnostic (status {cell.status})",
            f2p,
        )
    if first.file == unit and first.line != line:
        return Check(
            name,
            False,
            "fails_for_wrong_reason",
            f"first error is on line {first.line}, not the marked line {line}: {first.message}",
            f2p,
        )
    twin_diags = of_cell(twin)
    twin_first = first_error(twin_diags, hard=True)
    twin_compiles = twin.status == "ok" or (
        twin.status == "compile_error"
        and twin_first is None
        and first_error(twin_diags) is not None
    )
    if not twin_compiles:
        why = twin_first.brief() if twin_first else twin.status
        return Check(
            name,
            False,
            "fails_for_wrong_reason",
            f"without line {line} it still fails, so the error is not the marked line's: {why}",
            f2p,
        )
    if pin is not None and not any(_pin_matches(pin, d) for d in diags if d.is_hard_error):
        shown = pin if isinstance(pin, str) else f"/{pin.regex}/"
        ref_first = first_error(of_cell(reference), hard=True)
        if first.file != unit and ref_first is not None and _same_place(first, ref_first):
            # The reference tree's first error was here too (a header-only contract that
            # rejects inside the header): the rejection did not move, only its wording.
            return Check(
                name,
                False,
                "toolchain_mismatch",
                f"pinned diagnostic {shown!r} not found at the reference's first error "
                f"{first.file}:{first.line}; first error: {first.message}",
                f2p,
            )
        if first.file != unit:
            # The marked line still triggers an error, but inside a header and for another
            # reason (e.g. a relaxed constraint now instantiates a body that trips -Werror):
            # the call site no longer rejects it, so this is not a mere wording drift.
            return Check(
                name,
                False,
                "fails_for_wrong_reason",
                f"the error moved to {first.brief()} and the pinned diagnostic {shown!r} is gone",
                f2p,
            )
        return Check(
            name,
            False,
            "toolchain_mismatch",
            f"pinned diagnostic {shown!r} not found; first error: {first.message}",
            f2p,
        )
    return Check(name, True, "accept", f"rejected at line {line}: {first.message}", f2p)


def _same_place(a: Diagnostic, b: Diagnostic) -> bool:
    return (a.file, a.line) == (b.file, b.line)


def _pin_matches(pin: str | RegexPin, diag: Diagnostic) -> bool:
    if isinstance(pin, str):
        return pin in diag.message
    return re.search(pin.regex, diag.message) is not None


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
