"""Gate `ledger`: assumptions a patch may not make, decided on the C++ AST.

The case's `assumptions.yaml` (beside its tree; model and rules in ledger_rules.py) names
forbidden and allowed headers, the new exported symbols allowed, forbidden constructs
(static mutex, file-scope atomic, sleeps, thread creation, `using namespace` in a header),
qualifiers that named functions keep, and whether new non-const static storage is allowed.
The reference tree and the patched tree are each parsed once by a scan (ledger_ast.py,
libclang with the case's standard, defines and include folders, and g++'s own system
include folders), and the patched tree's facts are compared with the reference's: only
what the patch added counts. Aliases are seen through (canonical types), a forbidden
header reached through a new project header counts (transitive include sets), and
qualifiers are read from declarations, not text.

The behaviour oracle (a grader-owned driver linked with the case's sources, run like the
runtime lanes' programs) is scored only when the ledger is clean. Classes, most severe
first:

| class                    | meaning                                                      |
| ------------------------ | ------------------------------------------------------------ |
| assumption_fail:<rules>  | the ledger has findings (file:line each); `<rules>` joins    |
|                          | their rules with '+' in ledger_rules.RULES order             |
| behavior_fail            | the ledger is clean; the oracle does not build, or its run   |
|                          | exits or prints other than the golden                        |
| accept                   | clean ledger, golden behaviour                               |
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cxxgate.api import (
    VACUOUS,
    CellResult,
    Check,
    Context,
    Envelope,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    Program,
    ScanSpec,
    Strict,
    key_path,
    load_model,
    program,
    toolquery,
    why_failed,
)
from cxxgate.gates.ledger import (
    ledger_ast,
    # ledger_ast's data-flow pass, imported so that the gate's code hash and the grader
    # pin (codehash.module_and_sibling_files reads this module's imports) cover it.
    ledger_flow,  # noqa: F401
    ledger_objects,
    ledger_rules,
)
from cxxgate.gates.shared import lanes

NAME = "ledger"
OBJECTS = "objects"  # plan name of the oracle's library objects (ledger_objects.py)
# The oracle program on the reference tree: its objects (the grader's units, which
# instantiate the public header's inline functions, with the library's) are the baseline
# the candidate's oracle objects are compared with.
ORACLE_REFERENCE = "oracle_objects_reference"
SEVERITY = ("assumption_fail", "behavior_fail")


class Config(Strict):
    assumptions: str = "assumptions.yaml"  # in the case folder, outside tree/
    program: Program  # the behaviour oracle
    envelope: str | None = None  # default: the case's


@cache
def system_dirs(
    compiler: str, std: str, binds: tuple[tuple[str, str], ...] = ()
) -> tuple[str, ...]:
    """g++'s `#include <...>` search list, resolved: libclang reads these and nothing of
    its own, so it sees the libstdc++ headers the compiles see. Asked once per process
    through cxxgate/toolchain/toolquery.py (bounded, confined), like the toolchain's `--version`
    (cxxgate/toolchain/envelope.py); the envelope id and the answer both enter the scan's key."""
    code, text = toolquery.query([compiler, f"-std={std}", "-xc++", "-E", "-v", "-"], binds=binds)
    start = text.find("#include <...> search starts here:")
    end = text.find("End of search list.")
    if code != 0 or start < 0 or end < 0:
        return ()
    lines = text[start:end].splitlines()[1:]
    return tuple(str(Path(line.strip()).resolve()) for line in lines if line.strip())


def _dirs(env: Envelope) -> tuple[str, ...]:
    # clang++ prints its search list in the same words as g++.
    tc = env.toolchain
    return () if tc.path is None else system_dirs(tc.path, env.std, tc.binds)


def read_assumptions(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Scan function: the validated ledger as data. A scan (its file is an input) so that
    editing assumptions.yaml re-classifies every row without parsing any tree again."""
    del tree
    ledger = load_model(Path(params["file"]), ledger_rules.Assumptions)
    return ledger.model_dump(mode="json")


def _scan_params(ctx: Context, env: Envelope) -> dict[str, Any]:
    spec = ctx.case.spec
    # The case's own macros; clang's predefined ones stay (g++'s do not parse as clang):
    # a block that g++ compiles and clang skips is a skipped range, reported as such.
    defines = [*(f"-D{d}" for d in env.defines)]
    defines += [f for f in env.flags if f.startswith(("-D", "-U"))]
    return {
        "std": env.std,
        "include_dirs": list(spec.include_dirs),
        "sources": list(spec.sources),
        "public_headers": list(spec.public_headers),
        "system_dirs": list(_dirs(env)),
        "defines": defines,
        "envelope": env.id,
        "libclang": version("libclang"),
    }


def _ledger_file(ctx: Context, cfg: Config) -> Path:
    key = f"gates.{NAME}.assumptions"
    path = ctx.case.oracle(cfg.assumptions, key)
    try:
        load_model(path, ledger_rules.Assumptions)  # a bad ledger stops at load, named
    except InputError as exc:
        msg = f"{ctx.case.file}: {key}: {exc}"
        raise InputError(msg) from None
    return path


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    key = f"gates.{NAME}"
    env = ctx.gate_envelope(NAME, cfg.envelope)
    ledger = _ledger_file(ctx, cfg)
    params = _scan_params(ctx, env)
    prog = cfg.program
    program.check(ctx, prog, f"{key}.program")
    cell = program.cell(ctx, prog, f"{key}.program", env, f"{NAME} {prog.name}")
    run = program.run(ctx, cell, prog, f"{key}.program", env.run_env, f"{NAME} oracle run")
    out = Plan(
        scans={
            "reference": ScanSpec.of(
                ctx.reference_tree_key, ledger_ast.facts, params, label=f"{NAME} parse"
            ),
            "candidate": ScanSpec.of(ctx.tree_key, ledger_ast.facts, params, label=f"{NAME} parse"),
            "assumptions": ScanSpec.of(
                ctx.reference_tree_key,
                read_assumptions,
                {"file": str(ledger)},
                inputs=(ledger,),
                label=f"{NAME} assumptions",
            ),
        },
    )
    program.add(ctx, out, "oracle", prog, cell, run)
    objects = cell.objects_cell  # the oracle's library objects: compiled for it anyway
    if objects is not None:
        out.cells[OBJECTS] = objects
        out.cells[OBJECTS + program.REFERENCE] = replace(objects, tree_key=ctx.reference_tree_key)
    out.cells[ORACLE_REFERENCE] = replace(cell, tree_key=ctx.reference_tree_key)
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    if not _dirs(env):
        why = f"{env.toolchain.command}: not installed, or no include search list"
        check = Check("parse", False, "toolchain_missing", why, incomplete=True)
        return GateResult.from_checks(NAME, [check], SEVERITY, [])
    for name in ("assumptions", "reference", "candidate"):
        scan = outputs.scans[name]
        if scan.status != "ok":
            why = f"{name} scan: {scan.status}: {scan.detail}"
            check = Check(name, False, "incomplete", why, incomplete=True)
            return GateResult.from_checks(NAME, [check], SEVERITY, [])
    try:
        ledger = ledger_rules.Assumptions.model_validate(outputs.scans["assumptions"].data)
    except ValidationError as exc:  # the file changed under a running grade
        where = key_path(tuple(exc.errors()[0]["loc"]))
        check = Check(
            "assumptions", False, "incomplete", f"{cfg.assumptions}: {where}", incomplete=True
        )
        return GateResult.from_checks(NAME, [check], SEVERITY, [])
    ref, cand = outputs.scans["reference"].data, outputs.scans["candidate"].data
    if not cand["parsed"]:
        why = "no translation unit to parse: `sources` and `public_headers` match no file"
        check = Check("ledger", False, VACUOUS, why, incomplete=True)
        return GateResult.from_checks(NAME, [check], SEVERITY, [])
    symbols = _symbols(outputs, ref, cand)
    writable = _writable(outputs, ref, cand)
    tc = env.toolchain
    aliases = {} if tc.path is None else ledger_objects.aliases(tc.path, tc.binds)
    findings = ledger_rules.compare(ledger, ref, cand, symbols, writable, aliases)
    evidence = [f"{f.path}:{f.line}: {f.rule}: {f.message}" for f in findings]
    evidence.append(_counts(cand, symbols, writable))
    if findings:
        rules = list(dict.fromkeys(f.rule.partition(":")[2] for f in findings))
        checks = [
            Check(f"ledger {rule}", False, "assumption_fail", _first(findings, rule))
            for rule in rules
        ]
        result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
        summary = f"{len(findings)} finding(s); {evidence[0]}"
        return replace(
            result,
            klass=f"assumption_fail:{'+'.join(rules)}",
            summary=summary,
            findings=findings,
        )
    checks = [Check("ledger", True, "accept", _counts(cand, symbols, writable))]
    checks += program.tagged(
        cfg.program, f"gates.{NAME}.program", [_behaviour(ctx, cfg.program, outputs)]
    )
    return GateResult.from_checks(NAME, checks, SEVERITY, evidence)


def _first(findings: list[Finding], rule: str) -> str:
    f = next(f for f in findings if f.rule == f"assumption_fail:{rule}")
    return f"{f.path}:{f.line}: {f.message}"


def _linked(outputs: Outputs, name: str, fallback: str) -> CellResult | None:
    """The cell whose objects are read: the oracle program (its own units, which hold
    the public header's inline functions and their static locals, and the library's),
    else, when it did not link, the library's objects alone."""
    for key in (name, fallback):
        cell = outputs.cells.get(key)
        if cell is not None and cell.status == "ok":
            return cell
    return None


def _symbols(
    outputs: Outputs, ref: dict[str, Any], cand: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(reference, candidate) undefined symbols of the oracle's objects; None when the
    candidate's library did not compile (the oracle's build then fails the row). A
    reference whose objects did not compile counts as binding nothing: every facility the
    candidate binds is then new (closed)."""
    cell = _linked(outputs, "oracle", OBJECTS)
    if cell is None:
        return None
    mine = ledger_objects.undefined_symbols(cell, cand["functions"])
    theirs = _linked(outputs, ORACLE_REFERENCE, OBJECTS + program.REFERENCE)
    if theirs is None:
        return [], mine
    return ledger_objects.undefined_symbols(theirs, ref["functions"]), mine


def _writable(
    outputs: Outputs, ref: dict[str, Any], cand: dict[str, Any]
) -> ledger_rules.Pair | None:
    """(reference, candidate) writable data of the oracle's objects; None, like
    _symbols, when the candidate's did not compile."""
    cell = _linked(outputs, "oracle", OBJECTS)
    if cell is None:
        return None
    mine = ledger_objects.writable_data(cell, cand["statics"])
    theirs = _linked(outputs, ORACLE_REFERENCE, OBJECTS + program.REFERENCE)
    if theirs is None:
        return [], mine
    return ledger_objects.writable_data(theirs, ref["statics"]), mine


def _counts(
    facts: dict[str, Any], symbols: ledger_rules.Pair | None, writable: ledger_rules.Pair | None
) -> str:
    bound = "objects not compiled" if symbols is None else f"{len(symbols[1])} undefined symbols"
    if writable is not None:
        bound += f", {len(writable[1])} writable data symbols"
    return (
        f"ledger read {len(facts['parsed'])} unit(s): {len(facts['reached_headers'])} headers, "
        f"{len(facts['statics'])} statics, {len(facts['functions'])} function declarations, "
        f"{len(facts['uses'])} facility uses; {bound}"
    )


def _behaviour(ctx: Context, prog: Program, outputs: Outputs) -> Check:
    cell, run = outputs.cells["oracle"], outputs.runs["oracle"]
    name = f"oracle {prog.name}"
    if cell.status in lanes.MISSING:
        why = f"oracle cell: {cell.status}" + (f": {cell.detail}" if cell.detail else "")
        return Check(name, False, cell.status, why, incomplete=True)
    if cell.status != "ok":
        return Check(name, False, "behavior_fail", f"does not build: {why_failed(cell)}")
    problem = program.run_problem(run, prog.exit)
    if problem is not None:
        return Check(name, False, "behavior_fail", problem)
    want = program.expected(ctx, prog, f"gates.{NAME}.program", outputs, "oracle")
    if want.problem:
        return program.undecided(name, want)
    if want.stdout is not None and run.stdout != want.stdout:
        got = run.stdout[:60].decode(errors="replace")
        shown = prog.stdout_file or want.shown
        return Check(name, False, "behavior_fail", f"stdout {got!r} is not {shown}")
    return Check(name, True, "accept", "golden stdout and exit")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
