"""What the project's suite run left in its ctest cell (cxxgate/cells/ctest.py), read into
the tests gate's checks: the units the cell is given, ctest's JUnit outcomes, the test
units' flags and macros against the reference's, GoogleTest's and Catch2 / doctest's own
reports, and CMake's configure checks."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from junitparser import JUnitXml, TestSuite

from cxxgate.cells import crossed, ctest, ctestfile, testfolders, testframeworks
from cxxgate.contract.gate import Outputs
from cxxgate.gates.tests import frameworkreports, testreports, testunits
from cxxgate.host.process import Caps
from cxxgate.results.result import Check
from cxxgate.toolchain import projectflags
from cxxgate.toolchain.cellspec import CellResult, Unit


def units(caps: Caps, dirs: list[str], named: list[str]) -> tuple[Unit, ...]:
    """The ctest cell's units: its caps, the test folders, and the listed tests whose
    Catch2 / doctest report the run asks for (cxxgate/cells/ctest.py)."""
    return (
        Unit(ctest.CAPS_UNIT, ctest.caps_unit(caps)),
        Unit(ctest.TEST_DIRS_UNIT, "\n".join(dirs)),
        Unit(testframeworks.NAMED_UNIT, "\n".join(named)),
    )


def outcomes(junit: Path) -> dict[str, tuple[str, float]]:
    """Test name -> (passed | failed | skipped | unconfirmed, seconds), from ctest's JUnit
    file; none from one that does not parse. The suite's tests can write where ctest
    writes that file, so a pass counts only where ctest's own line in what it printed
    says so too, and ctest finished its run (cxxgate/cells/ctest.py `said_by_ctest`):
    a test that line says failed failed, one with no such line is unconfirmed."""
    found: dict[str, tuple[str, float]] = {}
    try:
        xml = JUnitXml.fromfile(str(junit))
        said = json.loads((junit.parent / ctest.SAID_JSON).read_text())
    except (OSError, SyntaxError, ValueError):
        return found
    lines: dict[str, list[str]] = said.get("tests", {})
    # A name holding ctest's own words is a line run into another (a dangling prefix
    # written into ctest's output): then no line of the run is taken at its word.
    finished = said.get("exit") in (0, 8) and not any(" Test #" in name for name in lines)
    suites = [s for s in xml if isinstance(s, TestSuite)] if isinstance(xml, JUnitXml) else [xml]
    for suite in suites:
        for case in suite:
            word = "passed" if case.is_passed else "skipped" if case.is_skipped else "failed"
            own = lines.get(str(case.name), [])
            if word == "passed" and any(status != "Passed" for status in own):
                word = "failed"
            elif word == "passed" and not (len(own) == 1 and finished):
                word = "unconfirmed"  # none, or more lines than the one run ctest printed
            found[str(case.name)] = (word, float(case.time or 0.0))
    return found


def _cell(result: CellResult) -> Path | None:
    """The cell folder of a ctest or cmake cell's result (its product lies in it)."""
    if result.binary is None:
        return None
    product = Path(result.binary)
    return product.parent


def unit_checks(outputs: Outputs, dirs: list[str], built: CellResult) -> list[Check]:
    """The test units' commands and framework macros, and the build's graph, against the
    reference's; the units of `dirs` and of the folders the build took from the
    reference (testfolders.recorded) are the tests'."""
    dirs = [*dirs, *testfolders.recorded(built)]
    ref = outputs.cells.get("ref_suite")
    suite, ref_suite = _cell(outputs.cells["suite"]), _cell(ref) if ref else None
    if suite is None or ref_suite is None:
        return []  # the reference itself, or a build that failed (its own check)
    checks: list[Check] = []
    for source, new in testunits.new_flags(suite, ref_suite).items():
        why = f"{source} compiles with what the reference's build lacks: {' '.join(new)}"
        checks.append(Check(f"flags:{source}", False, "test_flags_changed", why))
    for source, names in testunits.new_defines(
        suite / ctest.DEFINES_JSON, ref_suite / ctest.DEFINES_JSON
    ).items():
        why = f"{source}'s options define otherwise than the reference's: {', '.join(names[:8])}"
        checks.append(Check(f"defines:{source}", False, "test_flags_changed", why))
    changed = testunits.redefined(suite / ctest.MACROS_JSON, ref_suite / ctest.MACROS_JSON)
    for source, names in changed.items():
        why = f"{source} sees framework macros defined otherwise: {', '.join(names[:8])}"
        checks.append(Check(f"macros:{source}", False, "framework_redefined", why))
    for source, why in testunits.rewritten(
        suite / ctest.OBJECTS_JSON, ref_suite / ctest.OBJECTS_JSON
    ).items():
        checks.append(Check(f"object:{source}", False, "test_flags_changed", f"{source}: {why}"))
    mine, ref_graph = ctest.read_graph(suite), ctest.read_graph(ref_suite)
    if ref_graph:
        # Not built at all is a missing test; built otherwise, a changed one.
        for said in testunits.moved_units(mine, ref_graph, dirs):
            klass = "test_missing" if said.endswith(testunits.ABSENT) else "test_flags_changed"
            checks.append(Check("test_units", False, klass, said))
        for said in testunits.new_link_words(mine, ref_graph, dirs):
            klass = "test_missing" if said.endswith(testunits.ABSENT) else "test_flags_changed"
            checks.append(Check("test_links", False, klass, said))
        for said in testunits.new_shadows(mine, ref_graph, dirs):
            checks.append(Check("test_shadows", False, "test_flags_changed", said))
        for said in testunits.test_archives(mine, ref_graph, dirs):
            checks.append(Check("test_archives", False, "library_bypassed", said))
        for said in testunits.bypassed(mine, ref_graph, dirs):
            checks.append(Check("test_sources", False, "library_bypassed", said))
        for said in testunits.moved_loads(mine, ref_graph):
            checks.append(Check("test_loader", False, "library_bypassed", said))
        for said in testunits.new_reads(mine, ref_graph, dirs):
            checks.append(Check("test_reads", False, "test_flags_changed", said))
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
    # A check named after the source folder (Catch2's `-ffile-prefix-map=<source>/=`:
    # have_flag__ffile_prefix_map__home_catch2__ on the benchmark's machine) is listed
    # under the benchmark's folder: also known with that part of its name left out.
    spelt = re.sub(r"[^0-9A-Za-z_]", "_", projectflags.paths(Path(built.binary).parent)[0])
    for folded, named in list(found.items()):
        head, at, tail = folded.partition(spelt.casefold())
        if at:
            found.setdefault(f"{head}{_ANY_FOLDER}{tail}", named)
    return found


_ANY_FOLDER = "\0"  # where a check's name spelt the source folder


def configure_check(
    test: str, configured: dict[str, tuple[str, bool]]
) -> tuple[str, bool] | None:
    """The configure check a listed name is, if any (configure_checks)."""
    folded = test.casefold()
    if folded in configured:
        return configured[folded]
    for name, check in configured.items():
        head, at, tail = name.partition(_ANY_FOLDER)
        middle = folded.removeprefix(head).removesuffix(tail) if at else ""
        if middle and folded == head + middle + tail and re.fullmatch(r"[0-9a-z_]+", middle):
            return check
    return None


def test_checks(
    listed: list[tuple[str, bool]],
    gtest: bool,
    suite: CellResult,
    ref_suite: CellResult,
    timeout: float,
    built: CellResult,
    base: bool = False,
) -> list[Check]:
    """One check per listed test (name, fail-to-pass?): ctest's word on the run, and what
    the framework's own report adds (`gtest`: the case asks for that proof). On the base
    tree (`base`), a pass-to-pass test has ctest's word alone, as the benchmark's: a run
    ctest passes by its own criterion (Catch2's `-w NoAssertions` over every case) holds
    the cases the fix changes, so its report differs from the reference's by design, and
    no candidate's code is in that tree."""
    configured = configure_checks(built)
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
    registered = testreports.registrations(cell / ctest.TESTS_JSON)
    ref_registered = testreports.registrations(ref_cell / ctest.TESTS_JSON)
    programs, ref_programs = testreports.programs(registered), testreports.programs(ref_registered)
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
        # How ctest judges the run (WILL_FAIL, PASS_REGULAR_EXPRESSION, ...) and what it
        # runs are the reference's: a patch that registers a failing test WILL_FAIL, or
        # its command as `true`, passes it in ctest's eyes.
        otherwise = (
            testreports.registered_otherwise(registered.get(test), ref_registered[test])
            if test in ref_registered
            else ""
        )
        if word == "passed" and otherwise:
            why = f"ctest says passed, but it is registered otherwise: {otherwise}"
            found.append(Check(test, False, "registration_changed", why, f2p))
        elif word == "passed" and base and not f2p:
            why = f"passed in {seconds:.2f} s (ctest's word, on the base tree)"
            found.append(Check(test, True, "accept", why, f2p))
        elif word == "passed" and gtest and other:
            ref_report = frameworkreports.of(ref_cell, ref_record)
            said = frameworkreports.proof(
                test, record, frameworkreports.of(cell, record), ref_report
            )
            ref_said = frameworkreports.proof(test, ref_record, ref_report, ref_report)
            found.append(_proven(test, f2p, seconds, said, ref_said, _framework(other)))
        elif word == "passed" and gtest:
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
        elif word == "missing" and (check := configure_check(test, configured)):
            name, passed = check
            why = f"a CMake configure check, not a ctest test: {name} "
            why += "passed (CMakeCache.txt)" if passed else "failed (CMakeCache.txt)"
            klass = "accept" if passed else "f2p_fail" if f2p else "p2p_broken"
            found.append(Check(test, passed, klass, why, f2p))
        elif word == "missing":
            found.append(Check(test, False, "test_missing", "not in ctest's JUnit output", f2p))
        elif word == "unconfirmed":
            why = "ctest's JUnit file says passed, but ctest's output has not one line that says so"
            found.append(Check(test, False, "test_missing", why, f2p))
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
    return checks + beside_checks(cell / ctest.TESTS_JSON, registered, ref_registered, listed)


def beside_checks(
    tests_json: Path,
    registered: dict[str, dict[str, object]],
    ref_registered: dict[str, dict[str, object]],
    listed: list[tuple[str, bool]],
) -> list[Check]:
    """Each test the run ran beside the listed ones (a fixture's setup or cleanup, a name
    equal to a listed one but for case: cxxgate/cells/ctestfile.py `kept`) must be
    registered as the reference's same test is: the patch's own test, run with them,
    could leave a twin of the library where a listed test looks (red-team round 21's
    `run_drop`)."""
    try:
        tests = json.loads(tests_json.read_text()).get("tests", [])
    except (OSError, ValueError, AttributeError):
        return []
    named = {testframeworks.ctest_name(n, ref_registered) for n, _ in listed}
    checks = []
    for name in sorted((ctestfile.kept(tests, [n for n, _ in listed]) or set()) - named):
        why = f"{name} runs with the listed tests"
        if name not in ref_registered:
            why += ", and the reference has no such test"
        elif how := testreports.registered_otherwise(registered.get(name), ref_registered[name]):
            why += f", registered otherwise: {how}"
        else:
            continue
        checks.append(Check(f"beside:{name}", False, "registration_changed", why))
    return checks


def crossed_checks(
    checks: list[Check],
    listed: list[tuple[str, bool]],
    gtest: bool,
    again: CellResult,
    ref_suite: CellResult,
    timeout: float,
    built: CellResult,
) -> list[Check]:
    """The listed tests that passed (`checks`), against the crossed cell: the same tests on
    test programs linked as the reference links them (cxxgate/cells/crossed.py). A test that
    passes only on the candidate's own program, or a program the reference's link command
    does not make of this build, is library_bypassed."""
    passed = {c.name for c in checks if c.ok} - {c.name for c in checks if not c.ok}
    if again.status == "needs_failed" or not passed & {t for t, _ in listed}:
        return []
    if again.status != "ok" or again.binary is None:
        why = "the listed tests did not run on programs linked as the reference links them: "
        return [Check("crossed", False, "library_bypassed", why + (again.detail or again.status))]
    folder = Path(again.binary).parent
    programs, archives, rerun = crossed.read(folder / crossed.JSON)
    found = [
        Check(f"crossed:{name}", False, "library_bypassed", f"{name} {what}: {said}")
        for said_of, what in (
            (programs, "is not linked as the reference's link command links it"),
            (archives, "is not made as the reference's archive command makes it"),
        )
        for name, said in sorted(said_of.items())
        if said not in (crossed.SAME, crossed.RELINKED, crossed.REMADE, crossed.UNUSED)
    ]
    if Path(again.binary).name != ctest.JUNIT:
        return found  # no program differed: the run's own results stand
    folded = {t.casefold() for t in rerun}
    asked = [(t, f2p) for t, f2p in listed if t in passed and t.casefold() in folded]
    for check in test_checks(asked, gtest, again, ref_suite, timeout, built):
        if not check.ok:
            why = "passes on the build's own test program, not on one linked as the reference"
            found.append(replace(check, klass="library_bypassed",
                                 detail=f"{why} links it: {check.detail}"))  # fmt: skip
    return found


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
