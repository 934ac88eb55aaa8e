"""Gate `coverage`: lines a patch added that none of the case's tests executes.

The added lines come from the patch's hunks, new-file line numbers as gcc numbers lines
(gates/shared/hunks.py, a scan: the applied tree against the base tree; a form feed or
U+2028 ends no line). The case's tests
(grader-owned programs linked with the tree's sources, like the runtime lanes') are built
in a coverage envelope (`--coverage -O0 -fno-inline -fkeep-inline-functions`: inline and
header code kept, so an uncalled inline function counts as unexecuted rather than absent)
and run one per run task; each run leaves its .gcda counts in its kept folder
(GCOV_PREFIX, cxxgate/runs/run.py `keep`), which gcov's JSON reads (gates/coverage/gcovjson.py).
Counts of every test are summed, then joined to the hunks by tree-relative path (gcov's
names normalised: `src/../src/x.hpp` is `src/x.hpp`), headers included.

Which changed files are scored is decided from evidence, not names: every file a compile
of the tests read (the cells' `-MD` dependency files), every file gcov counted lines of,
and every file with a C++ suffix. `#include "sign.def"` scores sign.def.

Only what runs while a test runs counts: the harness entry resets the counters right
before the test's main and writes them right after it returns (CXXGATE_GCOV in
templates/entry/entry.cpp), so a static initialiser or a destructor that calls
the new code covers nothing. An added line is covered when it ran, every branch on it was
taken by some test (gcov `-b`; exceptional edges aside) and some copy of it ran whole (no
`unexecuted_block`): `if (*text == '+') ++text;` runs its condition under every test, but
its `++text` only when some test gives a '+'. An added or changed function is covered when
it executed (gcov's per-function `execution_count`, merged over units, instantiations and
runs, kept apart by source name): `skip` defined on one line beside `keep`, reached only
through a table, has a hit line but never ran. An added function definition (or lambda)
no build of the tests holds any code for (a template never instantiated, a header nobody
includes, lines gcov put under another name) is not covered either; a definition is held
only by a gcov function record starting (line and column) inside its source range. An
added statement that emits code when compiled, in a function some build holds, with no
gcov line in its span was never compiled by the tests' builds (a preprocessor branch the
`cov` envelope skips, a discarded `if constexpr` branch): `zero_hit`. So is an added
default argument with a branch: gcc counts its code at each caller's line. gcov counts a
macro's code where it expands: every line of a file the tests' compiles read, and of the
grader's test units, that names a macro the patch defines (transitively) is scored as an
added line. An untaken branch on a reworded line is excused when its hunk removed a line of
the same code (gates/shared/addedcode.py `canonical`) whose run on the base tree left the
same branches untaken.

Policy: strict. Every branch an added line holds must be taken by the case's tests,
defensive guards included (`if (p == nullptr) return -1;` where no caller passes null is
`branch_untested`). A case whose tests cannot reach such branches relaxes the branch rule
for every patch, with a reason (`branches: lines`, `branches_reason:`): lines and functions
are then scored, branches and blocks listed as evidence only. There is no in-source marker
(a candidate would write it).

| class               | meaning                                                          |
| ------------------- | ---------------------------------------------------------------- |
| exclusion_tamper    | an added line carries LCOV_EXCL/GCOVR_EXCL markers, `#line` or a  |
|                     | linemarker, an instrumentation switch or a libgcov call: lines    |
|                     | hidden or forged                                                  |
| suite_red           | a test does not build, fails, or does not return from main        |
| zero_hit            | an executable added line no test executed, an added statement the |
|                     | tests' builds compiled to no code, a branching default argument   |
| function_unexecuted | a function holding an added line that no test called, though its  |
|                     | line may have other hits (a finding per function)                 |
| branch_untested     | an added line that ran, with a branch no test took or a block     |
|                     | that never ran (a finding)                                        |
| no_overlap          | code changed, yet no added line was executable, or an added       |
|                     | function no build of the tests holds code for                     |
| not_applicable      | comments, whitespace, deletions, or added lines that bear no code |
|                     | (declarations, inert attributes, guards; status not_applicable:   |
|                     | the verdict neither fails nor blocks the row on it)               |
| accept              | every executable added line ran whole with every branch taken,    |
|                     | every added function executed                                     |

Not seen: branch-free logic (`text += (*text == '+');`, a lookup table indexed by the
input) runs the same lines, blocks and functions whatever the input, so line, branch and
function counts cannot tell a tested `+` from an untested one; only a test that checks the
behaviour can (a mutation check would, and is not done). A test that leaves through a
forged return (it found the entry's nonce in its own memory and exited 0) is not contained
in-process: see README "Code before main".

A program whose tree objects hold code that runs before the harness's entry (a
`.preinit_array` hook, an IFUNC, an early constructor) is `premain_hook`, decided for
every runtime gate at the link (cxxgate/cells/premain.py).

The reference state (the base tree, no hunk) is green when its tests pass and gcov scored
lines of the tree: the build and the join are proven before any candidate is believed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, model_validator

from cxxgate.api import (
    NEUTRAL_BUILD,
    UNIT_NAME,
    Check,
    Context,
    Finding,
    Gate,
    GateResult,
    InputError,
    Outputs,
    Plan,
    Program,
    ScanSpec,
    Strict,
    program,
    why_failed,
)
from cxxgate.gates.coverage import gcovjson
from cxxgate.gates.shared import hunks, lanes

NAME = "coverage"
SEVERITY = (
    "exclusion_tamper",
    "suite_red",
    "zero_hit",
    "function_unexecuted",
    "branch_untested",
    "no_overlap",
    "not_applicable",
)
# .gcda files land in the run's work folder under their own names (tu0.gcda, ...): the
# prefix is the work folder, every directory of the object's path stripped.
GCOV_ENV = (("GCOV_PREFIX", "."), ("GCOV_PREFIX_STRIP", "1000"))
MUST_HAVE = ("--coverage", "-fno-inline", "-fkeep-inline-functions")
# The key a grader-owned unit's counts are kept under: no tree path starts with it.
GRADER = "<grader>"


class Config(Strict):
    tests: list[Program] = Field(min_length=1)
    envelope: str = "cov"
    # `every`: each branch on an added line must be taken (the default, strict); `lines`:
    # branches and blocks are evidence only, for a case whose tests cannot reach some
    # branches an honest patch adds. `lines` needs a reason.
    branches: Literal["every", "lines"] = "every"
    branches_reason: str = ""

    @model_validator(mode="after")
    def _reasoned(self) -> Config:
        if self.branches != "every" and not self.branches_reason.strip():
            raise ValueError("branches: lines needs branches_reason: why the tests cannot")
        return self


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
        # gcov reads the run's counts once, in a scan of its own (not when classifying).
        gcov = gcovjson.gcov_for(env.toolchain.path or "")
        if gcov is not None:
            label = f"{NAME} gcov {test.name}"
            out.scans[f"gcov{i}"] = gcovjson.gcov_scan(ctx.tree_key, cell.key, run.key, gcov, label)
        if ctx.tree_key != ctx.base_key:
            # The same test on the base tree (one build and run per case, shared by every
            # row): which branches of a reworded line were already untaken.
            base = replace(cell, tree_key=ctx.base_key)
            base_run = replace(run, cell_key=base.key)
            out.cells[f"base{i}"] = base
            out.runs[f"base{i}"] = base_run
            if gcov is not None:
                out.scans[f"base_gcov{i}"] = gcovjson.gcov_scan(
                    ctx.base_key, base.key, base_run.key, gcov, f"{label} (base)"
                )
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
    read = _read(cfg, outputs, files)
    scored = _scored(files, read)
    # Markers count in every file a compile read or with a C++ suffix, comments included.
    tamper = [t for t in scan.data["tamper"] if t[0] in read or files[t[0]]["code"]]
    findings = [
        Finding(
            "exclusion_tamper", f"added line carries {marker!r}, which hides it from gcov", p, n
        )
        for p, n, marker in tamper
    ]
    expands = any(p in read for p in scan.data.get("expansions", {}))
    inert = not any(f.get("bearing", True) for f in scored.values()) and not expands
    if (not scored or inert) and not tamper:
        what = "no file changed"
        if files:
            what = "comments, whitespace, deletions or files no test compile read only"
        if scored:
            what = "declarations, attributes or preprocessor lines that bear no code only"
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
        # A changed file gcov counted lines of is scored, whatever its name.
        for path in counts.lines.keys() & files.keys():
            if path not in scored and not files[path]["cosmetic"] and files[path]["hunks"]:
                scored[path] = files[path]
        _add_expansions(scored, scan.data.get("expansions", {}), read | counts.lines.keys())
        _add_grader_expansions(ctx, cfg, scored, set(scan.data.get("macros", [])))
        # A patch that defines a macro may give the same text other code: nothing excused.
        macros = scan.data.get("macros")
        base = None if macros else _base_counts(ctx, cfg, plan, outputs)
        check, more = _score(cfg, scored, counts, evidence, base)
        checks.append(check)
        findings += more
    result = GateResult.from_checks(NAME, checks, SEVERITY, evidence)
    result.findings.extend(findings)
    return result


def _read(cfg: Config, outputs: Outputs, files: dict[str, Any]) -> set[str]:
    """Tree paths a compile of the tests read (dependency files); every changed file when
    a built test's reads are unknown (fail closed)."""
    read: set[str] = set()
    for i in range(len(cfg.tests)):
        cell = outputs.cells.get(f"test{i}")
        if cell is None or cell.status != "ok":
            continue
        if cell.reads is None:
            return set(files)
        read.update(cell.reads)
    return read


def _add_expansions(
    scored: dict[str, dict[str, Any]], expansions: dict[str, list[int]], read: set[str]
) -> None:
    """Lines that expand a macro the patch defined are scored as added lines (gcov counts
    the macro's code there), in every file a compile read."""
    for path, lines in expansions.items():
        if path not in read:
            continue
        info = scored.get(path, {"hunks": [], "functions": []})
        added = {n for hunk in info["hunks"] for n in hunk}
        extra = [n for n in lines if n not in added]
        if extra:
            scored[path] = {**info, "hunks": [*info["hunks"], extra]}


def _scored(files: dict[str, dict[str, Any]], read: set[str]) -> dict[str, dict[str, Any]]:
    """Changed files whose C++ tokens changed and that a compile read or that have a C++
    suffix."""
    return {
        p: f
        for p, f in files.items()
        if (f["code"] or p in read) and not f["cosmetic"] and f["hunks"]
    }


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
        counts.merge(gcovjson.counts(outputs.scans[f"gcov{i}"], _harness(test)))
    return checks, counts, ""


def _harness(test: Program) -> dict[str, str]:
    """The test's grader-owned units as gcov names them (the build folder, the names
    cxxgate/contract/program.py gives them) -> the key their counts are kept under."""
    return {
        f"{NEUTRAL_BUILD}/{UNIT_NAME if j == 0 else f'unit{j}.cpp'}": f"{GRADER}/{ref.oracle}"
        for j, ref in enumerate(test.units)
        if ref.oracle is not None
    }


def _add_grader_expansions(
    ctx: Context, cfg: Config, scored: dict[str, dict[str, Any]], macros: set[str]
) -> None:
    """Lines of the grader's test units that name a macro the patch defined or changed
    (transitively): gcov counts the macro's code there, so they are scored as added lines."""
    if not macros:
        return
    for i, test in enumerate(cfg.tests):
        for j, ref in enumerate(test.units):
            if ref.oracle is None:
                continue
            text = ctx.case.oracle_text(ref.oracle, f"gates.{NAME}.tests[{i}].units[{j}]")
            lines = hunks.naming_lines(text, macros)
            if lines:
                scored[f"{GRADER}/{ref.oracle}"] = {"hunks": [lines], "bearing": True}


def _base_counts(ctx: Context, cfg: Config, plan: Plan, outputs: Outputs) -> gcovjson.Counts | None:
    """The base tree's counts under the same tests, or None when any of them is missing
    (then no untaken branch is excused)."""
    base = gcovjson.Counts()
    for i, test in enumerate(cfg.tests):
        cell, run = outputs.cells.get(f"base{i}"), outputs.runs.get(f"base{i}")
        if cell is None or run is None or cell.status != "ok":
            return None
        want = program.expected(ctx, test, f"gates.{NAME}.tests[{i}]", outputs, f"test{i}")
        if want.problem or program.problem(run, test, want):
            return None
        gcov = gcovjson.gcov_for(plan.cells[f"base{i}"].envelope.toolchain.path or "")
        if gcov is None:
            return None
        base.merge(gcovjson.counts(outputs.scans[f"base_gcov{i}"], _harness(test)))
    return None if base.problem else base


def _score(
    cfg: Config,
    scored: dict[str, dict[str, Any]],
    counts: gcovjson.Counts,
    evidence: list[str],
    base: gcovjson.Counts | None = None,
) -> tuple[Check, list[Finding]]:
    """Per hunk: executable added lines, those hit, those run whole with every branch
    taken; per added function: executed, and held by some build. The failures as
    findings, the check on the most severe."""
    if counts.problem:
        return Check("hunks", False, "no_overlap", counts.problem), []
    zero: list[tuple[str, int]] = []
    partial: list[tuple[str, int, str]] = []  # path, line, what was not taken
    unrun: list[tuple[str, int, str]] = []  # path, start line, function
    absent: list[tuple[str, int, int]] = []  # path, first, last line of a function
    uncompiled: list[tuple[str, int, str]] = []  # path, line, why it has no gcov line
    executable = hit = 0
    for path, info in scored.items():
        lines = counts.lines.get(path, {})
        for hunk in info["hunks"]:
            exe = [n for n in hunk if n in lines]
            ran = [n for n in exe if lines[n] > 0]
            executable += len(exe)
            hit += len(ran)
            zero += [(path, n) for n in exe if lines[n] == 0]
            open_ = [(path, n, _untaken(counts, path, n)) for n in ran]
            open_ = [o for o in open_ if o[2]]
            for o in [o for o in open_ if _inherited(counts, base, info, path, o[1])]:
                open_.remove(o)
                evidence.append(
                    f"{path}:{o[1]}: {o[2]}; the line it reworded (the same code) left the "
                    f"same branches untaken on the base tree: not held against the patch"
                )
            partial += open_
            evidence.append(
                f"{path} hunk at {hunk[0]}: {len(hunk)} added, {len(exe)} executable, "
                f"{len(ran)} hit, {len(ran) - len(open_)} run whole with every branch taken"
            )
        added = {n for hunk in info["hunks"] for n in hunk}
        unrun += [(path, n, f) for n, f in counts.unexecuted_functions(path, added)]
        ranges = [tuple(f) for f in info.get("functions", [])]
        held = [_held(r, ranges, counts.functions.get(path, {})) for r in ranges]
        absent += [(path, r[0], r[2]) for r, h in zip(ranges, held, strict=True) if not h]
        for first, last, owner in info.get("statements", []):
            has_line = any(n in lines for n in range(first, last + 1))
            if held[owner] and not has_line:
                uncompiled.append((path, first, NO_CODE))
        uncompiled += [(path, n, DEFAULT_ARGUMENT) for n in info.get("defaults", [])]
    uncompiled = sorted(set(uncompiled))
    findings = [
        Finding("zero_hit", "a line the patch added that no test executed", path, n)
        for path, n in zero
    ]
    findings += [Finding("zero_hit", why, path, n) for path, n, why in uncompiled]
    findings += [
        Finding(
            "function_unexecuted",
            f"{name}: a function holding an added line that no test called",
            path,
            n,
        )
        for path, n, name in unrun
    ]
    if cfg.branches == "every":
        findings += [
            Finding("branch_untested", f"a line the patch added ran, but {what}", path, n)
            for path, n, what in partial
        ]
    findings += [
        Finding(
            "no_overlap",
            f"an added function (lines {a}-{b}) no build of the tests holds code for",
            path,
            a,
        )
        for path, a, b in absent
    ]
    if zero or uncompiled:
        parts = []
        if zero:
            shown = ", ".join(f"{p}:{n}" for p, n in zero)
            parts.append(f"{len(zero)} of {executable} executable added lines never ran: {shown}")
        if uncompiled:
            shown = ", ".join(f"{p}:{n}" for p, n, _ in uncompiled)
            parts.append(
                f"{len(uncompiled)} added statements or default arguments with no code at "
                f"their lines in the tests' builds: {shown}"
            )
        detail = "; ".join(parts)
        return Check("hunks", False, "zero_hit", detail), findings
    if unrun:
        shown = ", ".join(f"{p}:{n} {f}" for p, n, f in unrun)
        detail = f"{len(unrun)} functions holding added lines never executed: {shown}"
        return Check("hunks", False, "function_unexecuted", detail), findings
    if partial:
        shown = ", ".join(f"{p}:{n} ({w})" for p, n, w in partial)
        detail = (
            f"{len(partial)} of {executable} executable added lines ran, not whole or with "
            f"a branch no test took: {shown}"
        )
        if cfg.branches == "every":
            return Check("hunks", False, "branch_untested", detail), findings
        evidence.append(f"branches not scored ({cfg.branches_reason.strip()}): {detail}")
    if absent:
        shown = ", ".join(f"{p}:{a}-{b}" for p, a, b in absent)
        detail = f"added functions no build of the tests holds code for: {shown}"
        return Check("hunks", False, "no_overlap", detail), findings
    if executable == 0:
        files = ", ".join(scored)
        detail = f"no added line of {files} is executable in the tests' builds: nothing scored"
        return Check("hunks", False, "no_overlap", detail), findings
    return Check("hunks", True, "accept", f"{hit}/{executable} executable added lines ran"), []


NO_CODE = (
    "an added statement the tests' builds compiled to no code (a preprocessor branch the "
    "coverage envelope skipped, a discarded `if constexpr` branch): never ran"
)
DEFAULT_ARGUMENT = (
    "an added default argument with a branch or a lambda: gcc counts its code at each "
    "caller's line, so no test is shown to take its branches"
)


def _held(r: tuple[int, ...], ranges: list[tuple[int, ...]], records: dict[Any, Any]) -> bool:
    """Whether some gcov function record starts (its name's line and column) inside the
    definition's source range `r` and not inside another listed definition nested in it:
    another function on the same line holds nothing for this one."""

    def inside(pos: tuple[int, int], q: tuple[int, ...]) -> bool:
        return (q[0], q[1]) <= pos < (q[2], q[3])

    nested = [q for q in ranges if q != r and inside((q[0], q[1]), r)]
    return any(
        inside((line, column), r) and not any(inside((line, column), q) for q in nested)
        for line, column, _, _ in records
    )


def _inherited(
    counts: gcovjson.Counts,
    base: gcovjson.Counts | None,
    info: dict[str, Any],
    path: str,
    line: int,
) -> bool:
    """Whether every branch of added `line` no test took was untaken on a line its hunk
    removed that is the same code (hunks.same_as_removed), on the base tree's run of the
    same tests; a block left unrun is never excused."""
    if base is None or counts.part_run(path, line):
        return False
    mine = counts.taken(path, line)
    for old in info.get("same", {}).get(str(line), []):
        theirs = base.taken(path, old)
        if theirs.keys() == mine.keys() and all(
            t or not b for shape in mine for t, b in zip(mine[shape], theirs[shape], strict=True)
        ):
            return True
    return False


def _untaken(counts: gcovjson.Counts, path: str, line: int) -> str:
    """What of a line that ran was not: its untaken branches, or a block; "" if none."""
    k, m = counts.untaken(path, line)
    if k:
        return f"{k} of its {m} branches no test took"
    if counts.part_run(path, line):
        return "a block of it never ran"
    return ""


def _reference(ctx: Context, cfg: Config, plan: Plan, outputs: Outputs) -> GateResult:
    """The base tree has no hunk: green when its suite passes and gcov scored its lines."""
    suite, counts, broken = _suite(ctx, cfg, plan, outputs)
    if broken:
        return _incomplete(broken)
    tree = {p: v for p, v in counts.lines.items() if not p.startswith(GRADER)}  # units aside
    lines = sum(len(v) for v in tree.values())
    ok = not counts.problem and lines > 0
    detail = counts.problem or f"{lines} executable lines of {len(tree)} tree files scored"
    checks = [*suite, Check("scored", ok, "accept" if ok else "no_overlap", detail)]
    return GateResult.from_checks(NAME, checks, SEVERITY, [detail])


def _incomplete(why: str) -> GateResult:
    return GateResult.from_checks(
        NAME, [Check(NAME, False, "incomplete", why, incomplete=True)], SEVERITY, []
    )


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
