"""What a Catch2 or doctest XML report says about one ctest test (the report the harness
asked of the test's own command, cxxgate/cells/testframeworks.py).

Each named ctest test has at most one report, its own run's, so a ctest test maps to its
report whatever the registration style: one ctest test per program (every case the
program ran), `catch_discover_tests` / `doctest_discover_tests` (the command names one
case; the ctest name is that case's, give or take a prefix). The proof is always judged
against the reference's report of the same ctest test, which the patch cannot shape:

- the report must be whole: its closing totals present (a run that died midway has none)
  and equal to what its cases say (an edited outcome with the totals left alone);
- no case failed; every case that passed on the reference passed here (a case filtered
  out, skipped or hidden is `skipped`); at least one case passed;
- the number of assertions that passed equals the reference's: a report made up by the
  program (written from a static initialiser, with every case marked passed) must also
  guess how many checks the hidden tests make;
- or, for a test ctest passes by a criterion of its own (WILL_FAIL, a
  PASS_REGULAR_EXPRESSION on what it prints, a test spec that matches nothing with
  `--allow-running-no-tests`), the report says exactly what the reference's says: the
  same cases with the same outcomes (failed ones included), the same passed assertions.
  The test's registration must be the reference's (cxxgate/gates/tests/suite.py).

Catch2 v2 (`<Catch>`; before 2.10 without case totals) and v3 (`<Catch2TestRun>`, with
`skips`), doctest 2.4 (`<doctest>`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cxxgate.cells.testframeworks import FRAMEWORK_DIR, Record
from cxxgate.gates.tests import testreports
from cxxgate.gates.tests.testreports import Outcome, Proof

NAMES = {"catch2": "Catch2", "doctest": "doctest"}


@dataclass(frozen=True)
class Report:
    cases: dict[str, Outcome]
    assertions: int  # that passed, over the whole run
    whole: bool  # closing totals present and equal to the cases'
    why: str = ""


def _int(elem: ET.Element | None, key: str) -> int:
    try:
        return int(elem.get(key, "0")) if elem is not None else 0
    except ValueError:
        return -1


def read(path: Path) -> Report | None:
    """The report at `path`; None when it is missing or not a Catch2 / doctest report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    if root.tag in ("Catch", "Catch2TestRun"):
        return _catch(root)
    if root.tag == "doctest":
        return _doctest(root)
    return None


def _catch(root: ET.Element) -> Report:
    cases: dict[str, Outcome] = {}
    for case in root.iter("TestCase"):
        result = case.find("OverallResult")
        name = case.get("name", "")
        if result is None:
            cases[name] = "not_run"
        elif _int(result, "skips") > 0:
            cases[name] = "skipped"
        else:
            cases[name] = "passed" if result.get("success") == "true" else "failed"
    totals = root.find("OverallResultsCases")
    asserts = root.find("OverallResults")
    if asserts is not None and totals is None and root.tag == "Catch":
        # Catch2 v2 before 2.10 closes a run with its assertion totals only: a failed
        # case must show in them.
        failed = any(o == "failed" for o in cases.values())
        return _closed(cases, asserts, (_int(asserts, "failures") > 0) == failed)
    if totals is None or asserts is None:
        return _closed(cases, None, False)
    # Every case that has an outcome is counted once: successes, failures, expected
    # failures ([!shouldfail]) or, in v3, skips.
    counted = sum(_int(totals, k) for k in ("successes", "failures", "expectedFailures", "skips"))
    return _closed(cases, asserts, counted == sum(o != "not_run" for o in cases.values()))


def _doctest(root: ET.Element) -> Report:
    cases: dict[str, Outcome] = {}
    for case in root.iter("TestCase"):
        result = case.find("OverallResultsAsserts")
        name = case.get("name", "")
        if case.get("skipped") == "true":
            cases[name] = "skipped"
        elif result is None:
            cases[name] = "not_run"
        else:
            cases[name] = "passed" if result.get("test_case_success") == "true" else "failed"
    totals = root.find("OverallResultsTestCases")
    asserts = root.find("OverallResultsAsserts")
    if totals is None or asserts is None:
        return _closed(cases, None, False)
    counts = tuple(sum(o == w for o in cases.values()) for w in ("passed", "failed", "skipped"))
    said = (_int(totals, "successes"), _int(totals, "failures"), _int(totals, "skipped"))
    return _closed(cases, asserts, said == counts)


def _closed(cases: dict[str, Outcome], asserts: ET.Element | None, whole: bool) -> Report:
    """The report of `cases` given its closing assertion totals (None: a run that died
    before writing them) and whether its case totals agree with its cases."""
    if asserts is None:
        return Report(cases, 0, False, "no closing totals")
    why = "" if whole else "totals differ from its cases"
    return Report(cases, _int(asserts, "successes"), whole, why)


def of(cell: Path, record: Record | None) -> Report | None:
    if record is None or record.report is None:
        return None
    return read(cell / FRAMEWORK_DIR / record.report)


def proof(
    test: str, record: Record | None, report: Report | None, reference: Report | None
) -> Proof:
    """The report-side outcome of ctest test `test` (its record and report), against the
    reference's report of the same test."""
    name = NAMES.get(record.framework if record else "", "the framework")
    if report is None:
        if record is not None and record.timed_out:
            return Proof("none", None, f"its {name} run ran into the time limit")
        return Proof("none", None, f"no {name} report")
    if not report.whole:
        return Proof("none", None, f"the {name} report is not whole ({report.why})")
    said = _judged(test, name, report, reference)
    if reference is None or not reference.whole:
        return said
    if _judged(test, name, reference, reference).outcome == "passed":
        return said
    # ctest passed the reference's run by a criterion of its own (WILL_FAIL, a
    # PASS_REGULAR_EXPRESSION: Catch2's `-w NoAssertions` run, a test spec that matches
    # nothing): its report has failed cases, or none. This run must be that run, not more
    # and not less (its registration is the reference's: suite.py).
    differs = _differs(report, reference)
    if differs:
        return Proof(said.kind, "failed", f"{name} report differs from the reference's: {differs}")
    summary = testreports.tally(report.cases) or "no case"
    why = f"{name} report as the reference's: {summary}, {report.assertions} assertions"
    return Proof(said.kind, "passed", why)


def _differs(report: Report, reference: Report) -> str:
    """The first difference between a report and the reference's ("" when none)."""
    differs = testreports.first_difference(report.cases, reference.cases)
    if differs:
        case, here, there = differs
        return f"case {case!r} {here} here, {there} on the reference"
    if report.assertions != reference.assertions:
        return f"{report.assertions} assertions passed, {reference.assertions} on the reference"
    return ""


def _judged(test: str, name: str, report: Report, reference: Report | None) -> Proof:
    """A whole report's word: no case failed, every case the reference passed passed,
    one at least, as many passed assertions as the reference's."""
    failed = sorted(n for n, o in report.cases.items() if o == "failed")
    if failed:
        return Proof("program", "failed", f"{name} cases failed: {', '.join(failed[:5])}")
    kind: Literal["case", "program"] = "case" if test in report.cases else "program"
    ref_passed = {n for n, o in reference.cases.items() if o == "passed"} if reference else set()
    gone = sorted(n for n in ref_passed if report.cases.get(n) != "passed")
    if gone:
        return Proof(
            kind,
            "skipped",
            f"{name} cases that passed on the reference did not run: {', '.join(gone[:5])}",
        )
    passed = sum(o == "passed" for o in report.cases.values())
    if not passed:
        return Proof(kind, "not_run", f"no {name} case ran")
    if reference is not None and reference.whole and report.assertions != reference.assertions:
        why = (
            f"{report.assertions} {name} assertions passed, {reference.assertions} on the reference"
        )
        return Proof(kind, "skipped", why)
    said = f"{name} case {test}" if kind == "case" else f"{passed} {name} cases"
    return Proof(kind, "passed", f"{said}, {report.assertions} assertions")
