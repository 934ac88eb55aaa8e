"""Gate `tests`: the project's own suite, fail-to-pass and pass-to-pass (SWE-bench style).

For a case built with CMake (`build: cmake`, cxxgate/cmake.py): the case's test patch,
kept beside the tree and never shown to the candidate, is applied after the candidate's
patch; the project is configured and built, and ctest runs the suite with
`--output-junit`. Per-test outcomes are read from that JUnit file (junitparser). A test
that ran into ctest's per-test timeout (`limits.run_seconds`) is a hang: ctest's JUnit
marks it failed, with a time at the limit. Reference first (cxxgate/verdict.py): every
`fail_to_pass` test must fail (or not build) on base + test patch and pass on reference +
test patch; every `pass_to_pass` test must pass on both (when base + test patch builds).

Every candidate build starts from the reference's build folder of the same spec, so a
patch of one source file rebuilds what that file feeds (see cxxgate/cmake.py). The suite
runs as a candidate program (cxxgate/ctest.py): sandboxed, capped, as a uid of its own.

A pass needs more than ctest's word. The test units (the compile database's units in the
test folders) must compile with no preprocessor flag the reference's build lacks, and see
the framework's macros as the reference's units do (cxxgate/gates/testunits.py); and
GoogleTest's own report of the run must show the test's cases run and passed, matched by
`Suite.Name` or by program (cxxgate/gates/testreports.py). A Catch2 or doctest program
(by its symbols) is asked for its XML report by a second run of each named test's command
(cxxgate/testframeworks.py), read against the reference's report of the same test
(cxxgate/gates/frameworkreports.py). Where the reference's run wrote no report for a test
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

from cxxgate import ctest, testframeworks
from cxxgate.cellspec import CellResult, CellSpec, Unit
from cxxgate.envelope import Envelope
from cxxgate.gate import Context, Gate, Outputs, Plan
from cxxgate.gates import frameworkreports, testreports, testunits
from cxxgate.gates.project import build_spec, project_build
from cxxgate.result import Check, GateResult
from cxxgate.scan import ScanSpec
from cxxgate.tree import guard
from cxxgate.yamlfile import InputError, Strict, TreePath

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
    cfg: Config = ctx.case.gate_config(NAME)
    units = (
        Unit(ctest.CAPS_UNIT, ctest.caps_unit(caps)),
        Unit(ctest.TEST_DIRS_UNIT, "\n".join(dirs)),
        # The tests whose Catch2 / doctest report the run asks for (ctest.py).
        Unit(testframeworks.NAMED_UNIT, "\n".join(cfg.fail_to_pass + cfg.pass_to_pass)),
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
    found = configure_checks(built)
    checks += _test_checks(cfg, suite, ref_suite, ctx.case.spec.limits.run_seconds, found)
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


def configure_checks(built: CellResult) -> dict[str, tuple[str, bool]]:
    """CMake's configure checks (check_cxx_compiler_flag, check_cxx_source_compiles, ...),
    by folded name: (name, passed), from the build's CMakeCache.txt, where each result is
    an INTERNAL entry under the comment `//Test NAME`, 1 when it passed. Multi-SWE-bench
    counts the configure log's `-- Performing Test NAME - Success` lines as passed tests,
    so Catch2's `have_flag_-wdeprecated` is listed beside its ctest tests."""
    if built.binary is None:
        return {}
    cache = Path(built.binary) / "CMakeCache.txt"
    if not cache.is_file():
        return {}
    found: dict[str, tuple[str, bool]] = {}
    comment = ""
    for line in cache.read_text(errors="replace").splitlines():
        name, internal, value = line.partition(":INTERNAL=")
        if internal and comment == f"//Test {name}":
            found[name.casefold()] = (name, value.strip() == "1")
        comment = line
    return found


def _test_checks(
    cfg: Config,
    suite: CellResult,
    ref_suite: CellResult,
    timeout: float,
    configured: dict[str, tuple[str, bool]],
) -> list[Check]:
    listed = [(t, True) for t in cfg.fail_to_pass] + [(t, False) for t in cfg.pass_to_pass]
    if suite.status == "timeout" or suite.binary is None:
        klass = "hang" if suite.status == "timeout" else "test_missing"
        why = suite.detail or suite.status
        return [Check(t, False, klass, why, f2p) for t, f2p in listed]
    ran = outcomes(Path(suite.binary))
    # Listed names are resolved against the reference's run, which the patch cannot shape:
    # a candidate that registers a look-alike (`runtests` beside `RunTests`) adds a test
    # nobody asked about.
    ref_ran = outcomes(Path(ref_suite.binary)) if ref_suite.binary else ran
    cell = Path(suite.binary).parent
    ref_cell = Path(ref_suite.binary).parent if ref_suite.binary else cell
    cases = testreports.read_reports(cell / ctest.GTEST_DIR)
    ref_cases = testreports.read_reports(ref_cell / ctest.GTEST_DIR)
    programs = testreports.programs(cell / ctest.TESTS_JSON)
    ref_programs = testreports.programs(ref_cell / ctest.TESTS_JSON)
    records = testframeworks.read_records(cell / ctest.FRAMEWORKS_JSON)
    ref_records = testframeworks.read_records(ref_cell / ctest.FRAMEWORKS_JSON)
    checks = []
    for listed_name, f2p in listed:
        test = testframeworks.ctest_name(listed_name, ref_ran)
        found: list[Check] = []
        word, seconds = ran.get(test, ("missing", 0.0))
        record, ref_record = records.get(test), ref_records.get(test)
        # Catch2 or doctest when either program is one (the reference's cannot be shaped
        # by the patch): its report, against the reference's.
        other = {r.framework for r in (record, ref_record) if r} & set(frameworkreports.NAMES)
        if word == "passed" and cfg.gtest and other:
            ref_report = frameworkreports.of(ref_cell, ref_record)
            said = frameworkreports.proof(
                test, record, frameworkreports.of(cell, record), ref_report
            )
            ref_said = frameworkreports.proof(test, ref_record, ref_report, ref_report)
            found.append(_proven(test, f2p, seconds, said, ref_said, _framework(other)))
        elif word == "passed" and cfg.gtest:
            program = programs.get(test)
            said = testreports.proof(test, program, cases, ref_cases)
            ref_said = testreports.proof(
                test, ref_programs.get(test, program), ref_cases, ref_cases
            )
            found.append(_proven(test, f2p, seconds, said, ref_said))
        elif word == "passed":
            found.append(
                Check(test, True, "accept", f"passed in {seconds:.2f} s (ctest's word)", f2p)
            )
        elif word == "missing" and test.casefold() in configured:
            name, passed = configured[test.casefold()]
            why = f"a CMake configure check, not a ctest test: {name} "
            why += "passed (CMakeCache.txt)" if passed else "failed (CMakeCache.txt)"
            klass = "accept" if passed else "f2p_fail" if f2p else "p2p_broken"
            found.append(Check(test, passed, klass, why, f2p))
        elif word == "missing":
            found.append(Check(test, False, "test_missing", "not in ctest's JUnit output", f2p))
        elif word == "skipped":
            found.append(Check(test, False, "test_skipped", "ctest: skipped (not run)", f2p))
        elif seconds >= timeout * 0.98:
            found.append(Check(test, False, "hang", f"ran into the {timeout:g} s limit", f2p))
        else:
            klass = "f2p_fail" if f2p else "p2p_broken"
            found.append(Check(test, False, klass, f"failed after {seconds:.2f} s", f2p))
        # Named as the case lists it: the report and the base's checks pair by that name.
        alias = f" (ctest: {test})" if test != listed_name else ""
        checks += [replace(c, name=listed_name, detail=c.detail + alias) for c in found]
    return checks


def _framework(kinds: set[str]) -> str:
    return " / ".join(frameworkreports.NAMES[k] for k in sorted(kinds))


def _proven(
    test: str,
    f2p: bool,
    seconds: float,
    said: testreports.Proof,
    ref: testreports.Proof,
    framework: str = "GoogleTest",
) -> Check:
    """ctest says passed: what the framework's report of the run adds. The detail says
    which proof there was: `proof: <framework> report` or `proof: exit status only`."""
    if said.outcome == "passed":
        why = f"passed in {seconds:.2f} s (proof: {framework} report: {said.why})"
        return Check(test, True, "accept", why, f2p)
    if said.outcome is None and ref.outcome is None:
        why = f"passed in {seconds:.2f} s (proof: exit status only; no framework report,"
        why += " none on the reference either)"
        return Check(test, True, "accept", why, f2p)
    if said.outcome is None:
        why = f"ctest says passed, but {framework}'s own report has no run of it"
        return Check(test, False, "test_missing", f"{why} ({said.why})", f2p)
    if said.outcome == "failed":
        klass = "f2p_fail" if f2p else "p2p_broken"
        return Check(test, False, klass, f"ctest says passed; {said.why}", f2p)
    return Check(
        test,
        False,
        "test_skipped",
        f"ctest says passed; {framework}: {said.outcome} ({said.why})",
        f2p,
    )


def _qualified(result: GateResult) -> GateResult:
    if result.klass not in QUALIFIED:
        return result
    names = [c.name for c in result.checks if not c.ok and c.klass == result.klass]
    return replace(result, klass=f"{result.klass}:{','.join(names)}")


GATE = Gate(NAME, __doc__.splitlines()[0], Config, SEVERITY, plan, classify, order=15)
