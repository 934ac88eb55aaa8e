"""Gate `tests`: the project's own suite, fail-to-pass and pass-to-pass (SWE-bench style).

For a case built with CMake (`build: cmake`, cxxgate/cells/cmake.py): the case's test patch,
kept beside the tree and never shown to the candidate, is applied after the candidate's
patch; the project is configured and built, and ctest runs the suite with
`--output-junit`. Per-test outcomes are read from that JUnit file (junitparser). A test
that ran into ctest's per-test timeout (`limits.run_seconds`) is a hang: ctest's JUnit
marks it failed, with a time at the limit. Reference first (cxxgate/verdicts/verdict.py): every
`fail_to_pass` test must fail (or not build) on base + test patch and pass on reference +
test patch; every `pass_to_pass` test must pass on both (when base + test patch builds).

Every candidate build starts from the reference's build folder of the same spec, so a
patch of one source file rebuilds what that file feeds (see cxxgate/cells/cmake.py). The suite
runs as a candidate program (cxxgate/cells/ctest.py): sandboxed, capped, as a uid of its own.

A pass needs more than ctest's word. The test units (the compile database's units in the
test folders) must compile with no preprocessor flag the reference's build lacks, and see
the framework's macros as the reference's units do (cxxgate/gates/tests/testunits.py); and
GoogleTest's own report of the run must show the test's cases run and passed, matched by
`Suite.Name` or by program (cxxgate/gates/tests/testreports.py). Where the reference's run wrote
no report for a program either (not a GoogleTest program), its exit status is the proof,
and the check says so.

Classes, most severe first:

| class              | meaning                                                         |
| ------------------ | --------------------------------------------------------------- |
| path_violation     | the patch changes a test file (`test_files`), or adds a file    |
|                    | whose path ends in a system header's (include/gtest/gtest.h)    |
| test_flags_changed | a test unit compiles with a preprocessor flag the reference's   |
|                    | build lacks (-include, -imacros, -D, -U, an include folder), or |
|                    | is not compiled from its tree path into the reference's test    |
|                    | programs, or a test program links with an option or a file the  |
|                    | reference's link lacks (-Wl,--wrap=, an object from elsewhere)  |
| framework_redefined| a test unit sees a framework macro (EXPECT_EQ, TEST, ...)       |
|                    | defined otherwise than the reference's unit does                |
| framework_tamper   | an object the build compiled names GoogleTest symbols (testing::)|
|                    | that the reference's object of the same source does not (a      |
|                    | library initialiser installing a fake result reporter)           |
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

import json
from dataclasses import replace
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import pathspec
from junitparser import JUnitXml, TestSuite
from pydantic import Field, model_validator

from cxxgate.cells import ctest
from cxxgate.contract.gate import Context, Gate, Outputs, Plan
from cxxgate.gates.shared.project import build_spec, project_build
from cxxgate.gates.tests import testreports, testunits
from cxxgate.intake.tree import guard
from cxxgate.results.result import Check, GateResult
from cxxgate.runs.scan import ScanSpec
from cxxgate.toolchain.cellspec import CellResult, CellSpec, Unit
from cxxgate.toolchain.envelope import Envelope
from cxxgate.util.yamlfile import InputError, Strict, TreePath

NAME = "tests"
SEVERITY = (
    "path_violation",
    "test_flags_changed",
    "framework_redefined",
    "framework_tamper",
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
    built = project_build(ctx, env, text)
    globs = list(cfg.test_files) or _touched_by(text)
    dirs = testunits.test_dirs(list(cfg.test_files) or _touched_by(text))
    cells = {"build": built, "suite": _suite(ctx, env, built, dirs)}
    if ctx.tree_key != ctx.reference_tree_key:
        # The reference's build and run of the same spec: what the test units' flags and
        # macros, and the reports, are compared with.
        ref = build_spec(ctx, ctx.reference_tree_key, env, text, None)
        cells |= {
            "ref_build": ref,
            "ref_suite": _suite(ctx, env, ref, dirs, ctx.reference_tree_key),
        }
    params = {"globs": globs, "base": str(ctx.case.tree), "toolchain": env.id}
    touched = ScanSpec.of(ctx.tree_key, touched_tests, params, label="test files")
    return Plan(cells=cells, scans={"test_files": touched})


def _suite(
    ctx: Context, env: Envelope, built: CellSpec, dirs: list[str], tree_key: str = ""
) -> CellSpec:
    limits = ctx.case.spec.limits
    caps = limits.caps(env.flags)
    units = (
        Unit(ctest.CAPS_UNIT, ctest.caps_unit(caps)),
        Unit(ctest.TEST_DIRS_UNIT, "\n".join(dirs)),
    )
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
    )


@cache
def _touched_by(patch_text: str) -> list[str]:
    stamp = guard(patch_text.encode(), ["**"])
    if stamp.status != "applied":
        msg = f"gates.{NAME}.test_patch: not a patch the harness can apply: {stamp.detail}"
        raise InputError(msg)
    return ["/" + p for p in stamp.changed]  # anchored: that file, not any of its name


def touched_tests(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    """The test files the patch of this tree changed, from its intake stamp; and the files
    it added whose path ends in a system header's (include/gtest/gtest.h): found first on
    a project include path, such a file stands in for the header the tests include."""
    stamp = json.loads(tree.with_name(f"{tree.name}.json").read_text())
    changed: list[str] = stamp.get("changed", [])
    spec = pathspec.GitIgnoreSpec.from_lines(params["globs"])
    base = Path(params["base"])
    added = [p for p in changed if (tree / p).is_file() and not (base / p).exists()]
    shadows = [p for p in added if _system_header(p)]
    return {"touched": [p for p in changed if spec.match_file(p)], "shadows": shadows}


# The system include folders of the Debian toolchains (GCC's and clang's search lists).
_SYSTEM_INCLUDES = (
    "/usr/include",
    "/usr/local/include",
    "/usr/include/c++/*",
    "/usr/include/*-linux-gnu",
    "/usr/include/*-linux-gnu/c++/*",
)


@cache
def _system_folders() -> tuple[Path, ...]:
    return tuple(p for g in _SYSTEM_INCLUDES for p in Path("/").glob(g.lstrip("/")) if p.is_dir())


def _system_header(rel: str) -> str:
    """The system header `rel` would shadow through some include folder, or ""."""
    parts = PurePosixPath(rel).parts
    for i in range(len(parts)):
        tail = "/".join(parts[i:])
        for folder in _system_folders():
            if (folder / tail).is_file():
                return str(folder / tail)
    return ""


def outcomes(junit: Path) -> dict[str, tuple[str, float]]:
    """Test name -> (passed | failed | skipped, seconds), from ctest's JUnit file."""
    found: dict[str, tuple[str, float]] = {}
    xml = JUnitXml.fromfile(str(junit))
    suites = [s for s in xml if isinstance(s, TestSuite)] if isinstance(xml, JUnitXml) else [xml]
    for suite in suites:
        for case in suite:
            word = "passed" if case.is_passed else "skipped" if case.is_skipped else "failed"
            found[str(case.name)] = (word, float(case.time or 0.0))
    return found


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
    checks += _unit_checks(outputs, _dirs(ctx, cfg))
    if built.status != "ok":
        # Not building counts as failing for a fail-to-pass test (the base tree with the
        # new tests often does not build); pass-to-pass tests are then not decided.
        detail = built.detail or built.status
        # A build that ran past limits.build_seconds is a hang, not broken code.
        klass = "hang" if built.status == "timeout" else "build_fail"
        checks.append(Check("build", False, klass, detail, fail_to_pass=True))
        checks += [Check(t, False, klass, "not built", True) for t in cfg.fail_to_pass]
        return GateResult.from_checks(NAME, checks, SEVERITY, [])
    suite = outputs.cells["suite"]
    ref_suite = outputs.cells.get("ref_suite", suite)
    checks += _test_checks(cfg, suite, ref_suite, ctx.case.spec.limits.run_seconds)
    return _qualified(GateResult.from_checks(NAME, checks, SEVERITY, []))


def _cell(result: CellResult) -> Path | None:
    """The cell folder of a ctest or cmake cell's result (its product lies in it)."""
    if result.binary is None:
        return None
    product = Path(result.binary)
    return product.parent


def _dirs(ctx: Context, cfg: Config) -> list[str]:
    text = ctx.case.oracle_text(cfg.test_patch, f"gates.{NAME}.test_patch")
    return testunits.test_dirs(list(cfg.test_files) or _touched_by(text))


def _unit_checks(outputs: Outputs, dirs: list[str]) -> list[Check]:
    """The test units' commands and framework macros, and the build's graph, against the
    reference's."""
    ref = outputs.cells.get("ref_suite")
    suite, ref_suite = _cell(outputs.cells["suite"]), _cell(ref) if ref else None
    if suite is None or ref_suite is None:
        return []  # the reference itself, or a build that failed (its own check)
    checks: list[Check] = []
    for source, new in testunits.new_flags(suite, ref_suite).items():
        why = f"{source} compiles with what the reference's build lacks: {' '.join(new)}"
        checks.append(Check(f"flags:{source}", False, "test_flags_changed", why))
    changed = testunits.redefined(suite / ctest.MACROS_JSON, ref_suite / ctest.MACROS_JSON)
    for source, names in changed.items():
        why = f"{source} sees framework macros defined otherwise: {', '.join(names[:8])}"
        checks.append(Check(f"macros:{source}", False, "framework_redefined", why))
    mine, ref_graph = testunits.graph(suite), testunits.graph(ref_suite)
    if ref_graph:
        # Not built at all is a missing test; built otherwise, a changed one.
        for said in testunits.moved_units(mine, ref_graph, dirs):
            klass = "test_missing" if said.endswith(testunits.ABSENT) else "test_flags_changed"
            checks.append(Check("test_units", False, klass, said))
        for said in testunits.new_link_words(mine, ref_graph, dirs):
            klass = "test_missing" if said.endswith(testunits.ABSENT) else "test_flags_changed"
            checks.append(Check("test_links", False, klass, said))
        for source, names in testunits.tampered(mine, ref_graph, dirs).items():
            why = f"{source} names GoogleTest symbols the reference's does not: "
            checks.append(Check(f"gtest:{source}", False, "framework_tamper",
                                why + ", ".join(names[:4])))  # fmt: skip
    return checks


def _test_checks(
    cfg: Config, suite: CellResult, ref_suite: CellResult, timeout: float
) -> list[Check]:
    listed = [(t, True) for t in cfg.fail_to_pass] + [(t, False) for t in cfg.pass_to_pass]
    if suite.status == "timeout" or suite.binary is None:
        klass = "hang" if suite.status == "timeout" else "test_missing"
        why = suite.detail or suite.status
        return [Check(t, False, klass, why, f2p) for t, f2p in listed]
    ran = outcomes(Path(suite.binary))
    cell = Path(suite.binary).parent
    ref_cell = Path(ref_suite.binary).parent if ref_suite.binary else cell
    cases = testreports.read_reports(cell / ctest.GTEST_DIR)
    ref_cases = testreports.read_reports(ref_cell / ctest.GTEST_DIR)
    programs = testreports.programs(cell / ctest.TESTS_JSON)
    ref_programs = testreports.programs(ref_cell / ctest.TESTS_JSON)
    checks = []
    for test, f2p in listed:
        word, seconds = ran.get(test, ("missing", 0.0))
        if word == "passed" and cfg.gtest:
            program = programs.get(test)
            said = testreports.proof(test, program, cases, ref_cases)
            ref_said = testreports.proof(
                test, ref_programs.get(test, program), ref_cases, ref_cases
            )
            checks.append(_proven(test, f2p, seconds, said, ref_said))
        elif word == "passed":
            checks.append(
                Check(test, True, "accept", f"passed in {seconds:.2f} s (ctest's word)", f2p)
            )
        elif word == "missing":
            checks.append(Check(test, False, "test_missing", "not in ctest's JUnit output", f2p))
        elif word == "skipped":
            checks.append(Check(test, False, "test_skipped", "ctest: skipped (not run)", f2p))
        elif seconds >= timeout * 0.98:
            checks.append(Check(test, False, "hang", f"ran into the {timeout:g} s limit", f2p))
        else:
            klass = "f2p_fail" if f2p else "p2p_broken"
            checks.append(Check(test, False, klass, f"failed after {seconds:.2f} s", f2p))
    return checks


def _proven(
    test: str, f2p: bool, seconds: float, said: testreports.Proof, ref: testreports.Proof
) -> Check:
    """ctest says passed: what GoogleTest's report of the run adds."""
    if said.outcome == "passed":
        return Check(test, True, "accept", f"passed in {seconds:.2f} s (proof: {said.why})", f2p)
    if said.outcome is None and ref.outcome is None:
        why = f"passed in {seconds:.2f} s (proof: exit status only; no framework report,"
        why += " none on the reference either)"
        return Check(test, True, "accept", why, f2p)
    if said.outcome is None:
        why = "ctest says passed, but GoogleTest's own report has no run of it"
        return Check(test, False, "test_missing", why, f2p)
    if said.outcome == "failed":
        klass = "f2p_fail" if f2p else "p2p_broken"
        return Check(test, False, klass, f"ctest says passed; {said.why}", f2p)
    return Check(
        test,
        False,
        "test_skipped",
        f"ctest says passed; GoogleTest: {said.outcome} ({said.why})",
        f2p,
    )


def _qualified(result: GateResult) -> GateResult:
    if result.klass not in QUALIFIED:
        return result
    names = [c.name for c in result.checks if not c.ok and c.klass == result.klass]
    return replace(result, klass=f"{result.klass}:{','.join(names)}")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify)
