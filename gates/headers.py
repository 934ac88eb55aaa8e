"""Gate `headers`: every public header must compile on its own, and twice.

One probe translation unit per public header includes only that header (then, if the
case gives one, a small liveness snippet that uses it); no driver, no prelude, no
`-include`, no precompiled header. A second probe includes the header twice (include
guard or `#pragma once`). Both are compiled `-fsyntax-only` with the case's include path.
Classes per header, most severe first:

| class               | meaning                                                          |
| ------------------- | ---------------------------------------------------------------- |
| missing_declaration | unknown type or name, incomplete type: the header borrows an include |
| other_compile_error | any other error on its own or when included twice                 |
| clean               | both probes compile                                               |

The gate fails if any header is not clean. Every public header must be probed: a probe
that did not run is `incomplete`, never clean. Each header gets a one-line record per
lane (case, header, lane, status, class), so two runs diff cleanly.
"""

from __future__ import annotations

import re

from pydantic import Field

from cxxgate.api import (
    TOOLCHAIN_MISSING,
    UNIT_NAME,
    CellResult,
    CellSpec,
    Check,
    Context,
    Diagnostic,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    Step,
    Strict,
    Unit,
    errors_with_notes,
    in_tree,
    parse,
    probe,
)
from cxxgate.gates.shared.project import configure_spec

NAME = "headers"
SEVERITY = ("missing_declaration", "other_compile_error")
LANES = ("standalone", "twice")

# What a compiler says when a header uses a name it never declared or included.
_MISSING = re.compile(
    "|".join(
        [
            # GCC
            r"does not name a (?:template )?type",
            r"was not declared in this scope",
            r"is not a member of",
            r"has not been declared",
            r"incomplete type",
            r"invalid use of undefined type",
            r"is not a namespace-name",
            r"that depend on a template parameter, so a declaration of",
            r"did you forget to '#include",
            # clang
            r"unknown type name",
            r"use of undeclared identifier",
            r"no (?:type|template|member) named .* in namespace",
            r"implicit instantiation of undefined template",
        ]
    )
)


class Config(Strict):
    envelope: str | None = None
    # public header -> statements run in the probe's main(); they should use the header.
    snippets: dict[str, str] = Field(default_factory=dict)


def plan(ctx: Context) -> Plan:
    case = ctx.case
    cfg: Config = case.gate_config(NAME)
    for header in cfg.snippets:
        if header not in case.spec.public_headers:
            msg = (
                f"{case.file}: gates.{NAME}.snippets.{header}: not one of the case's "
                f"public_headers {case.spec.public_headers}"
            )
            raise InputError(msg)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    out = Plan()
    # A CMake case's probes compile with the project's own flags
    # (cxxgate/toolchain/projectflags.py).
    project = configure_spec(ctx, ctx.tree_key, env, NAME)
    if project is not None:
        out.cells["cmake configure"] = project
    for header in case.spec.public_headers:
        args = {"header": header, "include": case.header_include(header)}
        texts = {
            "standalone": probe.render(
                f"{NAME}/standalone.cpp.j2", snippet=cfg.snippets.get(header, ""), **args
            ),
            "twice": probe.render(f"{NAME}/twice.cpp.j2", **args),
        }
        # One cell per lane, its unit named as every harness unit is (main.cpp): a header
        # cannot tell a probe from an ordinary build by __FILE__ or __BASE_FILE__.
        for lane in LANES:
            out.cells[_cell_name(lane, header)] = CellSpec(
                kind="syntax",
                tree_key=ctx.tree_key,
                units=(Unit(UNIT_NAME, texts[lane]),),
                tree_sources=(),
                include_dirs=tuple(case.spec.include_dirs),
                envelope=env,
                compile_seconds=case.spec.limits.compile_seconds,
                label=f"{NAME} {lane} probe {header}",
                needs=(project.key,) if project is not None else (),
            )
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    case = ctx.case
    checks: list[Check] = []
    records: list[str] = []
    findings: list[Finding] = []
    for header in case.spec.public_headers:
        cells = {lane: outputs.cells.get(_cell_name(lane, header)) for lane in LANES}
        lanes = _lanes(cells)
        check = _check(header, cells, lanes)
        checks.append(check)
        if not check.ok and not check.incomplete:
            findings.append(_finding(header, cells, lanes, check.klass))
        for lane in LANES:
            status, klass = lanes.get(lane, ("incomplete", "not_probed"))
            records.append(f"header={header} lane={lane} status={status} class={klass}")
    probed = sum(1 for c in checks if not c.incomplete)
    if probed != len(case.spec.public_headers):
        checks.append(
            Check(
                "headers probed",
                False,
                "not_probed",
                f"{probed} of {len(case.spec.public_headers)} public headers probed",
                incomplete=True,
            )
        )
    # The pipeline adds every planned cell's and run's folder as evidence.
    result = GateResult.from_checks(NAME, checks, SEVERITY, [])
    result.cells.extend(records)
    result.findings.extend(findings)
    return result


def _cell_name(lane: str, header: str) -> str:
    return header if lane == "standalone" else f"{header} ({lane})"


Cells = dict[str, CellResult | None]


def _step(cell: CellResult | None) -> Step | None:
    steps = cell.compile_steps() if cell is not None else []
    return steps[0] if steps else None


def _lanes(cells: Cells) -> dict[str, tuple[str, str]]:
    """(status, class) per lane that actually compiled; a lane without a step is absent."""
    lanes: dict[str, tuple[str, str]] = {}
    for lane in LANES:
        cell, step = cells[lane], _step(cells[lane])
        if cell is None or step is None:
            continue
        if step.timed_out:
            lanes[lane] = ("fail", "other_compile_error")
        elif step.exit == 0:
            lanes[lane] = ("pass", "clean")
        else:
            lanes[lane] = ("fail", _error_class(parse(step, cell.tree_root)))
    return lanes


def _error_class(diags: list[Diagnostic]) -> str:
    for group in errors_with_notes(diags):
        if any(_MISSING.search(d.message) for d in group):
            return "missing_declaration"
    return "other_compile_error"


def _check(header: str, cells: Cells, lanes: dict[str, tuple[str, str]]) -> Check:
    missing = [c for c in cells.values() if c is None or c.status == TOOLCHAIN_MISSING]
    if missing:
        why = next((c.detail for c in missing if c is not None), "no probe cell")
        return Check(header, False, TOOLCHAIN_MISSING, why, incomplete=True)
    if set(lanes) != set(LANES):
        status = ", ".join(sorted({c.status for c in cells.values() if c is not None}))
        return Check(header, False, "not_probed", f"probe did not run ({status})", incomplete=True)
    for lane in LANES:
        status, klass = lanes[lane]
        if status != "pass":
            return Check(header, False, klass, f"{lane}: {_first_error_text(cells[lane])}")
    return Check(header, True, "clean", "compiles alone and twice")


def _finding(
    header: str, cells: Cells, lanes: dict[str, tuple[str, str]], klass: str
) -> Finding:
    """The failing probe's place in the tree: the telling error of its first failing lane
    when it lies in a tree file (the header, or one it includes), else the header itself."""
    lane = next(lane for lane in LANES if lanes[lane][0] != "pass")
    cell = cells[lane]
    first = _telling_error(cell)
    message = f"{header} ({lane}): {first.message if first else _first_error_text(cell)}"
    if first is not None and in_tree(first, (UNIT_NAME,)):
        return Finding(klass, message, first.file, first.line, first.column)
    return Finding(klass, message, header)


def _groups(cell: CellResult | None) -> list[list[Diagnostic]]:
    """Error groups of the lane's compile, those naming a missing declaration first."""
    step = _step(cell)
    if cell is None or step is None or step.timed_out:
        return []
    groups = errors_with_notes(parse(step, cell.tree_root))
    telling = [g for g in groups if any(_MISSING.search(d.message) for d in g)]
    return telling or groups


def _telling_error(cell: CellResult | None) -> Diagnostic | None:
    groups = _groups(cell)
    return groups[0][0] if groups else None


def _first_error_text(cell: CellResult | None) -> str:
    step = _step(cell)
    if step is not None and step.timed_out:
        return "the compiler ran past its time limit"
    for group in _groups(cell):
        # Name the missing declaration itself, not the parse error it set off first.
        hint = next((d.message for d in group[1:] if "#include" in d.message), "")
        return group[0].brief() + (f" ({hint})" if hint else "")
    return cell.status if cell is not None else "no probe cell"


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
