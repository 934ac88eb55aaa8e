"""Gate `matrix`: the same goldens in every envelope; green at -O0 is not defined C++.

Every program (a grader-owned driver linked with the case's sources) is built and run in
every envelope of the matrix (default `dbg` -O0 -Werror, `rel` -O2 -DNDEBUG -Werror,
`asan` -O0 ASan+UBSan, `ubsan2` -O2 UBSan without recovery; a case may name its own).
Each cell records compile status, run status, stdout sha and any sanitizer report (one
evidence line per cell). Classes, most severe first:

| class                     | meaning                                                   |
| ------------------------- | --------------------------------------------------------- |
| incomplete                | a required cell is missing (toolchain absent, no tree)     |
| compile_fail:<envs>       | the program does not build in these envelopes              |
| run_fail:<envs>           | it builds, but the run exits wrong, dies, hangs, reports a |
|                           | sanitizer error, or prints other than the golden stdout    |
|                           | while every envelope agrees                                |
| disagreement              | the runs are clean but their stdout differs across         |
|                           | envelopes (e.g. signed overflow folded away at -O2)        |
| accept                    | every cell builds, runs clean and prints the same bytes    |

`<envs>` joins the failing envelopes with '+', in the matrix's order, so the table shows
which ones failed. The reference must be quiet in every envelope, or the case is broken
for this gate (`baseline_red`), not the model.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from cxxgate.api import (
    CellResult,
    Check,
    Context,
    Expected,
    Gate,
    GateResult,
    Outputs,
    Plan,
    Program,
    RunResult,
    Strict,
    program,
    why_failed,
)
from cxxgate.gates.shared import lanes

NAME = "matrix"
SEVERITY = ("incomplete", "compile_fail", "run_fail", "disagreement")
DEFAULT_ENVELOPES = ("dbg", "rel", "asan", "ubsan2")


class Config(Strict):
    programs: list[Program] = Field(min_length=1)
    envelopes: list[str] = Field(default=list(DEFAULT_ENVELOPES), min_length=2)


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    out = Plan()
    envs = [
        ctx.envelope(name, f"gates.{NAME}.envelopes[{j}]") for j, name in enumerate(cfg.envelopes)
    ]
    for i, prog in enumerate(cfg.programs):
        key = f"gates.{NAME}.programs[{i}]"
        program.check(ctx, prog, key)
        for env in envs:
            cell = program.cell(ctx, prog, key, env, f"{NAME} {prog.name}")
            label = f"{NAME} run {prog.name} [{env.name}]"
            run = program.run(ctx, cell, prog, key, env.run_env, label)
            program.add(ctx, out, f"{i}:{env.name}", prog, cell, run)
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    checks: list[Check] = []
    evidence: list[str] = []
    for i, prog in enumerate(cfg.programs):
        key = f"gates.{NAME}.programs[{i}]"
        mine: list[Check] = []
        clean: dict[str, bytes] = {}
        wants: dict[str, Expected] = {}
        for env in cfg.envelopes:
            cell = outputs.cells[f"{i}:{env}"]
            run = outputs.runs[f"{i}:{env}"]
            check, report = _cell_check(prog, env, cell, run)
            evidence.append(_record(prog, env, cell, run, report))
            if check is not None:
                mine.append(check)
            else:
                clean[env] = run.stdout
                # The reference's stdout in the same envelope: the same key as its own run.
                wants[env] = program.expected(ctx, prog, key, outputs, f"{i}:{env}")
        mine += _agreement(prog, clean, wants)
        checks += program.tagged(prog, key, mine)
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    if result.status == "fail" and result.klass in {"compile_fail", "run_fail"}:
        failed = {c.name.rsplit(" ", 1)[-1] for c in checks if c.klass == result.klass}
        envs = "+".join(e for e in cfg.envelopes if e in failed)
        result = replace(result, klass=f"{result.klass}:{envs}")
    return result


def _cell_check(
    prog: Program, env: str, cell: CellResult, run: RunResult
) -> tuple[Check | None, lanes.Report | None]:
    name = f"{prog.name} {env}"
    if cell.status in lanes.MISSING:
        why = f"cell missing: {cell.status}" + (f": {cell.detail}" if cell.detail else "")
        return Check(name, False, "incomplete", why, incomplete=True), None
    if cell.status != "ok":
        return Check(name, False, "compile_fail", why_failed(cell)), None
    report = lanes.sanitizer_report(run.stderr, cell.tree_root)
    if report is not None:
        return Check(name, False, "run_fail", f"sanitizer: {report.brief()}"), report
    problem = program.run_problem(run, prog.exit)
    if problem is not None:
        return Check(name, False, "run_fail", problem), None
    return None, None


def _agreement(prog: Program, clean: dict[str, bytes], wants: dict[str, Expected]) -> list[Check]:
    """Clean cells must print the same bytes (and the expected ones, when there are)."""
    if not clean:
        return []
    # In the order the envelopes are listed, not a set's (which varies between processes).
    outputs = list(dict.fromkeys(clean.values()))
    if len(outputs) > 1:
        groups = {out: [e for e, o in clean.items() if o == out] for out in outputs}
        shown = " vs ".join(f"{'+'.join(envs)} {_excerpt(out)}" for out, envs in groups.items())
        return [Check(f"{prog.name} agreement", False, "disagreement", shown)]
    (only,) = outputs
    undecided = [
        program.undecided(f"{prog.name} {env}", want) for env, want in wants.items() if want.problem
    ]
    if undecided:
        return undecided
    wrong = []
    for env, want in wants.items():
        if program.stdout_problem(only, want) is None:
            continue
        where, mine, theirs = program.parting(only, want.stdout or b"")
        detail = (
            f"every envelope printed {where}{_excerpt(mine)}; {want.shown} has {_excerpt(theirs)}"
        )
        wrong.append(Check(f"{prog.name} {env}", False, "run_fail", detail))
    if wrong:
        return wrong
    checked = any(w.stdout is not None for w in wants.values())
    what = f"{next(iter(wants.values())).shown}" if checked else "the same stdout"
    return [Check(f"{prog.name} agreement", True, "accept", f"{len(clean)} envelopes: {what}")]


def _record(
    prog: Program, env: str, cell: CellResult, run: RunResult, report: lanes.Report | None
) -> str:
    ran = "-" if run.status == "not_built" else f"{run.status}:{run.exit}"
    return (
        f"{prog.name} [{env}] compile={cell.status} run={ran} "
        f"stdout={run.stdout_sha[:12] or '-'} sanitizer={report.brief() if report else '-'}"
    )


def _excerpt(data: bytes) -> str:
    text = data[:40].decode(errors="replace")
    return repr(text + ("..." if len(data) > 40 else ""))


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
