"""Gate `tests`: the project's own suite, fail-to-pass and pass-to-pass (SWE-bench style).

For a case built with CMake (`build: cmake`, cxxgate/cells/cmake.py): the case's test patch,
kept beside the tree and never shown to the candidate, is applied after the candidate's
patch; the project is configured and built, and ctest runs the suite with
`--output-junit`. Per-test outcomes are read from that JUnit file (junitparser). A test
that ran into ctest's per-test timeout (`limits.run_seconds`) is a hang: ctest's JUnit
marks it failed, with a time at the limit. Reference first (cxxgate/verdicts/verdict.py): every
`fail_to_pass` test must fail (or not build) on base + test patch and pass on reference +
test patch; every `pass_to_pass` test must pass on both (when base + test patch builds).

The tests are the benchmark's: a candidate's build takes the tests' own folders from the
reference tree before the test patch (cxxgate/cells/testfolders.py; which folders:
testfiles.own_folders), so what a patch did to a helper, a CMakeLists.txt or a header
beside the tests is set aside, and the check `test_folders` names it; so are the folders
named for tests that the reference's build compiles only into test programs
(cxxgate/cells/testhelpers.py; the check `test_helpers`), whose units are compared with
the reference's as test units are, and the data files elsewhere no compile of the
library reads (`test_data`).

Every candidate build starts from the reference's build folder of the same spec, so a
patch of one source file rebuilds what that file feeds (see cxxgate/cells/cmake.py). The suite
runs as a candidate program (cxxgate/cells/ctest.py): sandboxed, capped, as a uid of its own.

A pass needs more than ctest's word. The test units (the compile database's units in the
test folders) must compile with no preprocessor flag the reference's build lacks, and see
the framework's macros as the reference's units do (cxxgate/gates/tests/testunits.py); and
GoogleTest's own report of the run must show the test's cases run and passed, matched by
`Suite.Name` or by program (cxxgate/gates/tests/testreports.py). A Catch2 or doctest program
(by its symbols) is asked for its XML report by a second run of each named test's command
(cxxgate/cells/testframeworks.py), read against the reference's report of the same test
(cxxgate/gates/tests/frameworkreports.py). Where the reference's run wrote no report for a test
either (a plain executable), its exit status is the proof, and the check says so
(`proof: exit status only`; a framework's pass: `proof: <framework> report: ...`).
Names as Multi-SWE-bench lists them: a listed name matches the one ctest test of the
reference's run equal to it but for case (its logs are lowercased), and a name no ctest
test has but a CMake configure check does (`have_flag_-wall`) is decided by
CMakeCache.txt.

Classes, most severe first:

| class              | meaning                                                         |
| ------------------ | --------------------------------------------------------------- |
| path_violation     | the patch changes a test file (`test_files`), or adds a file    |
|                    | whose path ends in a system header's (include/gtest/gtest.h)    |
| test_flags_changed | a test unit compiles with a preprocessor flag the reference's   |
|                    | build lacks (-include, -imacros, -D, -U, an include folder), or |
|                    | is not compiled from its tree path into the reference's test    |
|                    | programs, or a test program links with a file the reference's   |
|                    | link lacks (an object from elsewhere; a new option is the       |
|                    | crossed proof's: library_bypassed)                              |
| registration_changed| a listed test ctest passed is registered otherwise than on the |
|                    | reference: its command, working folder, environment or how ctest|
|                    | reads its run (WILL_FAIL, PASS_/FAIL_/SKIP_REGULAR_EXPRESSION,  |
|                    | SKIP_RETURN_CODE)                                               |
| framework_redefined| a test unit sees a framework macro (EXPECT_EQ, TEST, ...)       |
|                    | defined otherwise than the reference's unit does                |
| framework_tamper   | an object the build compiled names GoogleTest symbols (testing::)|
|                    | that the reference's object of the same source does not (a      |
|                    | library initialiser installing a fake result reporter)           |
| library_bypassed   | a test program is not what its own link command makes from the  |
|                    | build (relinked or rewritten after its link step), or its linker |
|                    | map no longer takes an object of a non-test source the reference's|
|                    | takes, while the build still makes it: the tests run a twin of it|
|                    | (linked first, an inline copy), or none of it; or a listed test  |
|                    | passes on its program and not on one the reference's own link    |
|                    | command makes of this build (cxxgate/cells/crossed.py); or the    |
|                    | dynamic loader finds a test program's shared library elsewhere    |
|                    | than the reference's (a copy earlier on its search path)          |
| build_fail         | configure or build failed (the first diagnostic is the summary) |
| hang               | a listed test ran into its time limit, or the suite did, or the |
|                    | build ran past `limits.build_seconds`                           |
| test_missing       | a listed test did not run (absent, disabled, no report)         |
| test_skipped       | a listed test was skipped, or its body never ran                |
| p2p_broken:<tests> | pass-to-pass tests that failed                                  |
| f2p_fail:<tests>   | fail-to-pass tests still failing                                |
| accept             | every listed test passed                                        |
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field, field_validator, model_validator

from cxxgate.api import (
    CellSpec,
    Check,
    Context,
    Envelope,
    Gate,
    GateResult,
    Outputs,
    Plan,
    ScanSpec,
    Strict,
    TreePath,
)
from cxxgate.gates.shared.project import build_spec, project_build
from cxxgate.gates.tests import suite, testfiles, testunits

NAME = "tests"
SEVERITY = (
    "path_violation",
    "test_flags_changed",
    "registration_changed",
    "framework_redefined",
    "framework_tamper",
    "library_bypassed",
    "build_fail",
    "hang",
    "test_missing",
    "test_skipped",
    "p2p_broken",
    "f2p_fail",
)
QUALIFIED = ("p2p_broken", "f2p_fail")  # named with the tests: f2p_fail:Suite.Name,...


class Config(Strict):
    test_patch: str  # beside the tree; applied after the candidate's patch
    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    test_files: list[TreePath] = Field(default_factory=list)  # default: the test patch's
    envelope: str | None = None
    # A pass counts only when GoogleTest's own XML report of the run says so too (a
    # program that exits 0 before its tests run passes for ctest). false: ctest's word.
    gtest: bool = True

    @field_validator("test_files")
    @classmethod
    def _folders(cls, globs: list[str]) -> list[str]:
        # The test folders are the globs' fixed heads: a glob that starts with a wildcard
        # would make every unit of the tree a test unit (red-team round 14).
        loose = [g for g in globs if testunits.test_dirs([g]) == ["."] and set(g) & set("*?[")]
        if loose:
            msg = f"each glob must start with its folder (tests/**, test/*.cpp), not {loose}"
            raise ValueError(msg)
        return globs

    @model_validator(mode="after")
    def _lists(self) -> Config:
        if not self.fail_to_pass and not self.pass_to_pass:
            msg = "list at least one test in fail_to_pass or pass_to_pass"
            raise ValueError(msg)
        both = sorted(set(self.fail_to_pass) & set(self.pass_to_pass))
        if both:
            msg = f"tests listed as both fail_to_pass and pass_to_pass: {both}"
            raise ValueError(msg)
        return self


def plan(ctx: Context) -> Plan:
    cfg: Config = ctx.case.gate_config(NAME)
    env = ctx.gate_envelope(NAME, cfg.envelope)
    text = ctx.case.oracle_text(cfg.test_patch, f"gates.{NAME}.test_patch")
    globs = list(cfg.test_files) or testfiles.touched_by(text)
    dirs = testunits.test_dirs(globs)
    own = testfiles.own_folders(dirs, _reference_text(ctx))
    built = project_build(ctx, env, text, own)
    cells = {"build": built, "suite": _suite(ctx, env, built, dirs)}
    if ctx.tree_key != ctx.reference_tree_key:
        # The reference's build and run of the same spec: what the test units' flags and
        # macros, and the reports, are compared with.
        ref = build_spec(ctx, ctx.reference_tree_key, env, text, None, own=own)
        ref_suite = _suite(ctx, env, ref, dirs, ctx.reference_tree_key)
        cells |= {"ref_build": ref, "ref_suite": ref_suite}
        # The listed tests again where a test program is not what the reference's link
        # command makes of this build (cxxgate/cells/crossed.py).
        mine = cells["suite"]
        needs = (built.key, ref_suite.key, mine.key)
        cells["crossed"] = replace(mine, kind="crossed", label="crossed ctest", needs=needs)
    params = {
        "globs": globs, "base": str(ctx.case.tree), "toolchain": env.id,
    }  # fmt: skip
    touched = ScanSpec.of(ctx.tree_key, testfiles.touched_tests, params, label="test files")
    return Plan(cells=cells, scans={"test_files": touched})


def _reference_text(ctx: Context) -> str | None:
    rel = ctx.case.spec.reference
    return ctx.case.oracle_text(rel, "reference") if rel is not None else None


def _suite(
    ctx: Context, env: Envelope, built: CellSpec, dirs: list[str], tree_key: str = ""
) -> CellSpec:
    limits = ctx.case.spec.limits
    caps = limits.caps(env.flags)
    cfg: Config = ctx.case.gate_config(NAME)
    units = suite.units(caps, dirs, cfg.fail_to_pass + cfg.pass_to_pass)
    return CellSpec(
        "ctest",
        tree_key or ctx.tree_key,
        units,
        (),
        (),
        env,
        limits.test_seconds,  # the whole run; each test has run_seconds (--timeout)
        label="ctest",
        needs=(built.key,),
        extra_flags=("--timeout", f"{limits.run_seconds:g}", "-j", "1"),
        data=built.data,
        # The base tree's test objects are taken as its compiles made them (CellSpec.trusted);
        # the reference's are compiled again: whether a unit's compile makes the same
        # bytes twice (`__TIME__`, --coverage's stamps) is judged on it (testunits.rewritten).
        trusted=built.trusted and built.tree_key != ctx.reference_tree_key,
    )


def classify(ctx: Context, plan: Plan, outputs: Outputs) -> GateResult:
    cfg: Config = ctx.case.gate_config(NAME)
    checks: list[Check] = []
    touched = outputs.scans["test_files"].data.get("touched", [])
    if touched:
        detail = f"the patch changes test files: {', '.join(touched)}"
        checks.append(Check("test_files", False, "path_violation", detail))
    shadows = outputs.scans["test_files"].data.get("shadows", [])
    if shadows:
        detail = f"the patch adds files named like system headers: {', '.join(shadows)}"
        checks.append(Check("shadowed_headers", False, "path_violation", detail))
    built = outputs.cells["build"]
    aside = testfiles.set_aside(built, touched)
    for check, what in (
        ("test_folders", "tests"),
        ("test_helpers", "test helpers (files only its test programs are built from)"),
        ("test_data", "data files (read by no compile of the library)"),
    ):
        if aside[check]:
            said = ", ".join(aside[check])
            detail = f"built with the reference's {what}, setting aside the patch's {said}"
            checks.append(Check(check, True, "accept", detail))
    set_aside = [p for paths in aside.values() for p in paths]
    # The units of the folders the build took from the reference are the tests' too.
    checks += suite.unit_checks(outputs, _dirs(ctx, cfg), built)
    if built.status != "ok":
        # Not building counts as failing for a fail-to-pass test (the base tree with the
        # new tests often does not build); pass-to-pass tests are then not decided.
        detail = built.detail or built.status
        if set_aside:
            detail += f" (its test folders as the reference's: {', '.join(set_aside)} set aside)"
        # A build that ran past limits.build_seconds is a hang, not broken code.
        klass = "hang" if built.status == "timeout" else "build_fail"
        checks.append(Check("build", False, klass, detail, fail_to_pass=True))
        checks += [Check(t, False, klass, "not built", True) for t in cfg.fail_to_pass]
        return GateResult.from_checks(NAME, checks, SEVERITY, [])
    ran = outputs.cells["suite"]
    ref_ran = outputs.cells.get("ref_suite", ran)
    listed = [(t, True) for t in cfg.fail_to_pass] + [(t, False) for t in cfg.pass_to_pass]
    limit = ctx.case.spec.limits.run_seconds
    base = bool(ctx.base_tree_key) and ctx.tree_key == ctx.base_tree_key
    checks += suite.test_checks(listed, cfg.gtest, ran, ref_ran, limit, built, base)
    if "crossed" in outputs.cells:
        again = outputs.cells["crossed"]
        checks += suite.crossed_checks(checks, listed, cfg.gtest, again, ref_ran, limit, built)
    return _qualified(GateResult.from_checks(NAME, checks, SEVERITY, []))


def _dirs(ctx: Context, cfg: Config) -> list[str]:
    text = ctx.case.oracle_text(cfg.test_patch, f"gates.{NAME}.test_patch")
    return testunits.test_dirs(list(cfg.test_files) or testfiles.touched_by(text))


def _qualified(result: GateResult) -> GateResult:
    if result.klass not in QUALIFIED:
        return result
    names = [c.name for c in result.checks if not c.ok and c.klass == result.klass]
    return replace(result, klass=f"{result.klass}:{','.join(names)}")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
