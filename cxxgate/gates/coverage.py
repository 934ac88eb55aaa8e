"""Gate `coverage`: lines a patch added that none of the case's tests executes.

The added lines come from the patch's hunks, new-file line numbers (cxxgate/gates/hunks.py,
a scan: the applied tree against the base tree, parsed with `unidiff`). The case's tests
(grader-owned programs linked with the tree's sources, like the runtime lanes') are built
in a coverage envelope (`--coverage -O0 -fno-inline -fkeep-inline-functions`: inline and
header code kept, so an uncalled inline function counts as unexecuted rather than absent)
and run one per run task; each run leaves its .gcda counts in its kept folder
(GCOV_PREFIX, cxxgate/run.py `keep`), which gcov's JSON reads (cxxgate/gates/gcovjson.py).
Counts of every test are summed, then joined to the hunks by exact tree-relative path,
headers included. Per hunk: executable added lines, lines hit, lines fully taken.

Only what runs while a test runs counts: the harness entry resets the counters right
before the test's main and writes them right after it returns (CXXGATE_GCOV in
cxxgate/templates/entry/entry.cpp), so a static initialiser or a destructor that calls
the new code covers nothing. A line is covered when it ran *and* every branch on it was
taken by some test (gcov `-b`; exceptional edges aside): `if (*text == '+') ++text;` runs
its condition under every test, but its `++text` only when some test gives a '+'.

| class            | meaning                                                           |
| ---------------- | ----------------------------------------------------------------- |
| exclusion_tamper | an added line carries LCOV_EXCL/GCOVR_EXCL markers, `#line`, an    |
|                  | instrumentation switch or a libgcov call: lines hidden or forged  |
| suite_red        | a test does not build, fails, or does not return from main        |
| zero_hit         | an executable added line no test executed (each one a finding)    |
| branch_untested  | an added line that ran, with a branch no test took (a finding)    |
| no_overlap       | code changed, yet no added line was executable: nothing scored    |
| not_applicable   | comments, whitespace or deletions only (status not_applicable:    |
|                  | the verdict neither fails nor blocks the row on it)               |
| accept           | every executable added line ran, every branch on it was taken     |

A program whose tree objects hold code that runs before the harness's entry (a
`.preinit_array` hook, an IFUNC, an early constructor) is `premain_hook`, decided for
every runtime gate at the link (cxxgate/premain.py).

The reference state (the base tree, no hunk) is green when its tests pass and gcov scored
lines of the tree: the build and the join are proven before any candidate is believed.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from cxxgate import program
from cxxgate.diagnostics import why_failed
from cxxgate.gate import Context, Gate, Outputs, Plan
from cxxgate.gates import gcovjson, hunks, lanes
from cxxgate.program import Program
from cxxgate.result import Check, Finding, GateResult
from cxxgate.scan import ScanSpec
from cxxgate.yamlfile import InputError, Strict

NAME = "coverage"
SEVERITY = (
    "exclusion_tamper",
    "suite_red",
    "zero_hit",
    "branch_untested",
    "no_overlap",
    "not_applicable",
)
# .gcda files land in the run's work folder under their own names (tu0.gcda, ...): the
# prefix is the work folder, every directory of the object's path stripped.
GCOV_ENV = (("GCOV_PREFIX", "."), ("GCOV_PREFIX_STRIP", "1000"))
MUST_HAVE = ("--coverage", "-fno-inline", "-fkeep-inline-functions")


class Config(Strict):
    tests: list[Program] = Field(min_length=1)
    envelope: str = "cov"


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    key = f"gates.{NAME}"
    env = ctx.envelope(cfg.envelope, f"{key}.envelope")
    missing = [f for f in MUST_HAVE if f not in env.flags]
    if env.toolchain.family != "gcc" or missing:
        msg = (
            f"{ctx.case.file}: {key}.envelope: {cfg.envelope!r} must be a gcc envelope with "
            f"{list(MUST_HAVE)} (missing {missing}, family {env.toolchain.family!r})"
        )
        raise InputError(msg)
    out = Plan()
    for i, test in enumerate(cfg.tests):
        where = f"{key}.tests[{i}]"
        program.check(ctx, test, where)
        cell = program.cell(ctx, test, where, env, f"{NAME} {test.name}")
        run = program.run(
            ctx,
            cell,
            test,
            where,
            (*env.run_env, *GCOV_ENV),
            f"{NAME} {test.name}",
            keep=("*.gcda",),
        )
        program.add(ctx, out, f"test{i}", test, cell, run)
    scan = ScanSpec.of(
        ctx.tree_key,
        hunks.added_lines,
        {"base": str(ctx.case.tree), "base_digest": ctx.case.tree_digest},
        label=f"{NAME} hunks",
    )
    out.scans["hunks"] = scan
    return out


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    scan = outputs.scans["hunks"]
    if scan.status != "ok":
        return _incomplete(f"hunks scan: {scan.status}: {scan.detail}")
    files: dict[str, dict[str, Any]] = scan.data["files"]
    tamper = scan.data["tamper"]
    findings = [
        Finding(
            "exclusion_tamper", f"added line carries {marker!r}, which hides it from gcov", p, n
        )
        for p, n, marker in tamper
    ]
    scored = {p: f for p, f in files.items() if f["code"] and not f["cosmetic"] and f["hunks"]}
    if not scored and not tamper:
        what = "no file changed"
        if files:
            what = "comments, whitespace, deletions or non-C++ files only"
        if not files and ctx.tree_key == ctx.reference_tree_key:
            return _reference(ctx, cfg, plan, outputs)
        return GateResult(NAME, "not_applicable", "not_applicable", f"nothing to score: {what}")
    checks: list[Check] = []
    if tamper:
        shown = ", ".join(f"{p}:{n} ({m})" for p, n, m in tamper)
        checks.append(Check("exclusions", False, "exclusion_tamper", shown))
    suite, counts, broken = _suite(ctx, cfg, plan, outputs)
    if broken:
        return _incomplete(broken)
    checks += suite
    evidence: list[str] = []
    if all(c.ok for c in suite):
        check, more = _score(scored, counts, evidence)
        checks.append(check)
        findings += more
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    result.findings.extend(findings)
    return result


def _suite(
    ctx: Context, cfg: Config, plan: Plan, outputs: Outputs
) -> tuple[list[Check], gcovjson.Counts, str]:
    """One check per test; the summed counts; a reason the suite could not be judged."""
    checks: list[Check] = []
    counts = gcovjson.Counts()
    for i, test in enumerate(cfg.tests):
        where = f"gates.{NAME}.tests[{i}]"
        cell, run = outputs.cells[f"test{i}"], outputs.runs[f"test{i}"]
        if cell.status in lanes.MISSING:
            return [], counts, f"{test.name}: {cell.status}: {cell.detail}"
        if cell.status != "ok":
            failed = Check(test.name, False, "suite_red", f"does not build: {why_failed(cell)}")
            checks += program.tagged(test, where, [failed])
            continue
        want = program.expected(ctx, test, where, outputs, f"test{i}")
        if want.problem:
            return [], counts, f"{test.name}: {want.problem}"
        problem = program.problem(run, test, want)
        if problem:
            checks += program.tagged(test, where, [Check(test.name, False, "suite_red", problem)])
            continue
        checks += program.tagged(test, where, [Check(test.name, True, "accept", "passed")])
        compiler = plan.cells[f"test{i}"].envelope.toolchain.path or ""
        gcov = gcovjson.gcov_for(compiler)
        if gcov is None:
            return [], counts, f"no gcov beside the compiler {compiler!r}"
        counts.merge(gcovjson.read(cell, run, gcov))
    return checks, counts, ""


def _score(
    scored: dict[str, dict[str, Any]], counts: gcovjson.Counts, evidence: list[str]
) -> tuple[Check, list[Finding]]:
    """Per hunk: executable added lines, those hit, those whose branches were all taken;
    the zero-hit lines and the lines with an untaken branch as findings."""
    if counts.problem:
        return Check("hunks", False, "no_overlap", counts.problem), []
    zero: list[tuple[str, int]] = []
    partial: list[tuple[str, int, int, int]] = []  # path, line, untaken, branches
    executable = hit = 0
    for path, info in scored.items():
        lines = counts.lines.get(path, {})
        for hunk in info["hunks"]:
            exe = [n for n in hunk if n in lines]
            ran = [n for n in exe if lines[n] > 0]
            executable += len(exe)
            hit += len(ran)
            zero += [(path, n) for n in exe if lines[n] == 0]
            open_ = [(path, n, *counts.untaken(path, n)) for n in ran]
            open_ = [o for o in open_ if o[2]]
            partial += open_
            evidence.append(
                f"{path} hunk at {hunk[0]}: {len(hunk)} added, {len(exe)} executable, "
                f"{len(ran)} hit, {len(ran) - len(open_)} with every branch taken"
            )
    findings = [
        Finding("zero_hit", "a line the patch added that no test executed", path, n)
        for path, n in zero
    ]
    findings += [
        Finding(
            "branch_untested",
            f"a line the patch added ran, but {k} of its {m} branches no test took",
            path,
            n,
        )
        for path, n, k, m in partial
    ]
    if zero:
        shown = ", ".join(f"{p}:{n}" for p, n in zero)
        return Check(
            "hunks",
            False,
            "zero_hit",
            f"{len(zero)} of {executable} executable added lines never ran: {shown}",
        ), findings
    if partial:
        shown = ", ".join(f"{p}:{n} ({k}/{m} untaken)" for p, n, k, m in partial)
        return Check(
            "hunks",
            False,
            "branch_untested",
            f"{len(partial)} of {executable} executable added lines ran with a branch "
            f"no test took: {shown}",
        ), findings
    if executable == 0:
        files = ", ".join(scored)
        detail = f"no added line of {files} is executable in the tests' builds: nothing scored"
        return Check("hunks", False, "no_overlap", detail), []
    return Check("hunks", True, "accept", f"{hit}/{executable} executable added lines ran"), []


def _reference(ctx: Context, cfg: Config, plan: Plan, outputs: Outputs) -> GateResult:
    """The base tree has no hunk: green when its suite passes and gcov scored its lines."""
    suite, counts, broken = _suite(ctx, cfg, plan, outputs)
    if broken:
        return _incomplete(broken)
    lines = sum(len(v) for v in counts.lines.values())
    ok = not counts.problem and lines > 0
    detail = counts.problem or f"{lines} executable lines of {len(counts.lines)} tree files scored"
    checks = [*suite, Check("scored", ok, "accept" if ok else "no_overlap", detail)]
    return GateResult.from_checks(NAME, checks, SEVERITY, [detail])


def _incomplete(why: str) -> GateResult:
    return GateResult.from_checks(
        NAME, [Check(NAME, False, "incomplete", why, incomplete=True)], SEVERITY, []
    )


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify, order=90)
