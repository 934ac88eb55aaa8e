"""What a test framework's own report says about one ctest test (GoogleTest's XML).

ctest knows a test by its name and its command; GoogleTest writes one report per test
process (`GTEST_OUTPUT=xml:<dir>/`), named after the program (`prog.xml`, `prog_1.xml`,
...). A ctest test is matched to its reports whatever the registration style:

- `gtest_discover_tests` / `gtest_add_tests`: the ctest name is a case's `Suite.Name`,
  looked up among the reports of the test's program;
- one ctest test per program (fmt's `format-test`): every case in that program's reports.

A case counts as run and passed only when GoogleTest says `status="run"`,
`result="completed"`, no failure or skip element, and it has a start timestamp: a test
whose body never started (an environment that skipped in SetUp) keeps the epoch, and
gtest 1.12 still writes it as completed.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from junitparser import JUnitXml, TestCase, TestSuite

Outcome = Literal["passed", "failed", "skipped", "not_run"]
_EPOCH = "1970-01-01T00:00:00"


@dataclass(frozen=True)
class Case:
    name: str  # Suite.Name
    outcome: Outcome
    report: str  # the report file's name


def read_reports(folder: Path) -> list[Case]:
    """Every case of every GoogleTest report in `folder`; a torn or forged file that does
    not parse confirms nothing."""
    cases: list[Case] = []
    for report in sorted(folder.glob("*.xml")) if folder.is_dir() else []:
        try:
            xml = JUnitXml.fromfile(str(report))
        except (OSError, SyntaxError, ValueError):
            continue
        suites = (
            [s for s in xml if isinstance(s, TestSuite)] if isinstance(xml, JUnitXml) else [xml]
        )
        # A listing (--gtest_list_tests, as test discovery asks) has no run case: kept as
        # one nameless entry, so the report's name still counts (see gtest_named).
        cases.append(Case("", "not_run", report.name))
        for suite in suites:
            for case in suite:
                if "status" not in case._elem.attrib:
                    continue
                cases.append(Case(f"{case.classname}.{case.name}", _outcome(case), report.name))
    return cases


def _outcome(case: TestCase) -> Outcome:
    attrib = case._elem.attrib  # junitparser keeps GoogleTest's own attributes
    if not case.is_passed and not case.is_skipped:
        return "failed"
    if case.is_skipped or attrib.get("result") == "skipped":
        return "skipped"
    if attrib.get("status", "run") != "run" or attrib.get("result", "completed") != "completed":
        return "not_run"
    if str(attrib.get("timestamp", "")).startswith(_EPOCH):
        return "not_run"  # never started: skipped before its body (a global environment)
    return "passed"


# The properties of a ctest test that decide how ctest reads its run (a test passes by
# failing, by what it prints, is skipped by an exit code) or what it runs in.
JUDGED_BY = (
    "WILL_FAIL",
    "PASS_REGULAR_EXPRESSION",
    "FAIL_REGULAR_EXPRESSION",
    "SKIP_REGULAR_EXPRESSION",
    "SKIP_RETURN_CODE",
    "WORKING_DIRECTORY",
    "ENVIRONMENT",
    "ENVIRONMENT_MODIFICATION",
    # Which other tests run with it (cxxgate/cells/ctestfile.py `kept`).
    "FIXTURES_REQUIRED",
    "FIXTURES_SETUP",
    "FIXTURES_CLEANUP",
)


def registrations(tests_json: Path) -> dict[str, dict[str, object]]:
    """ctest name -> its command and the properties in JUDGED_BY it has (ctest
    --show-only=json-v1, paths spelt); empty when the listing is missing."""
    try:
        listing = json.loads(tests_json.read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, dict[str, object]] = {}
    for test in listing.get("tests", []):
        props = {
            str(p.get("name")): p.get("value")
            for p in test.get("properties") or []
            if isinstance(p, dict) and p.get("name") in JUDGED_BY
        }
        found[str(test.get("name"))] = {"command": test.get("command") or [], **props}
    return found


def programs(registered: dict[str, dict[str, object]]) -> dict[str, str]:
    """ctest name -> the file name of the program its command runs (from registrations)."""
    found = {}
    for name, reg in registered.items():
        command = reg["command"]
        if isinstance(command, list) and command:
            found[name] = PurePosixPath(str(command[0])).name
    return found


def registered_otherwise(mine: dict[str, object] | None, ref: dict[str, object]) -> str:
    """How a test's registration differs from the reference's ("" when it does not)."""
    if mine is None:
        return "it is not in ctest's listing of the tests"
    for key in sorted(set(mine) | set(ref)):
        if mine.get(key) != ref.get(key):
            here, there = (json.dumps(r.get(key, "(none)"))[:120] for r in (mine, ref))
            return f"its {key} is {here}, on the reference {there}"
    return ""


def of_program(cases: list[Case], program: str | None) -> list[Case]:
    """The cases of the reports a program wrote (`prog.xml`, `prog_<n>.xml`); all cases
    when the program is not known."""
    if program is None:
        return [c for c in cases if c.name]
    name = re.compile(re.escape(program) + r"(?:_([0-9]+))?\.xml")
    mine = [c for c in cases if name.fullmatch(c.report)]
    if not gtest_named(program, {c.report for c in mine}):
        return []  # not the names GoogleTest gives: written by someone else
    return [c for c in mine if c.name]


def gtest_named(program: str, reports: set[str]) -> bool:
    """Whether report names are those GoogleTest gives a program's runs in one folder:
    the first free of `prog.xml`, `prog_1.xml`, `prog_2.xml`, ... so the set is dense. A
    report the program wrote itself before GoogleTest's main ran (a library initialiser
    that writes a passing report and exits) chose its own name (`prog_<pid>.xml`)."""
    numbers = set()
    for report in reports:
        tail = report.removeprefix(program).removesuffix(".xml")
        numbers.add(int(tail[1:]) if tail else 0)
    return numbers == set(range(len(numbers)))


@dataclass(frozen=True)
class Proof:
    """What the framework's report says of one ctest test."""

    kind: Literal["case", "program", "none"]  # Suite.Name matched; whole program; no report
    outcome: Outcome | None  # None: no report
    why: str = ""


def proof(test: str, program: str | None, cases: list[Case], reference: list[Case]) -> Proof:
    """The report-side outcome of ctest test `test`: by `Suite.Name` when a case has that
    name, else over the whole program's cases. For a whole program, every case the
    reference's run passed must have run and passed here. Where the reference's own run
    does not pass so (ctest passed it by a criterion of its own: WILL_FAIL, a
    PASS_REGULAR_EXPRESSION), this run must say exactly what the reference's says."""
    said = _judged(test, program, cases, reference)
    if said.outcome is None or _judged(test, program, reference, reference).outcome in (
        "passed",
        None,
    ):
        return said
    mine, ref = of_program(cases, program), of_program(reference, program)
    if said.kind == "case":
        mine, ref = [c for c in mine if c.name == test], [c for c in ref if c.name == test]
    here, there = ({c.name: c.outcome for c in run} for run in (mine, ref))
    differs = first_difference(here, there)
    if differs:
        name, this, that = differs
        why = f"GoogleTest case {name} {this} here, {that} on the reference"
        return Proof(said.kind, "failed", why)
    return Proof(said.kind, "passed", f"GoogleTest cases as the reference's: {tally(here)}")


def first_difference(
    here: Mapping[str, str], there: Mapping[str, str]
) -> tuple[str, str, str] | None:
    """(case, outcome here, outcome on the reference) of the first case, by name, whose
    outcomes differ (`absent` where a run has no such case); None when none does."""
    for name in sorted(set(here) | set(there)):
        if here.get(name) != there.get(name):
            return name, here.get(name, "absent"), there.get(name, "absent")
    return None


def tally(cases: Mapping[str, str]) -> str:
    """`1 failed, 2 passed`: how many cases had each outcome ("" for none)."""
    return ", ".join(f"{n} {o}" for o, n in sorted(Counter(cases.values()).items()))


def _judged(test: str, program: str | None, cases: list[Case], reference: list[Case]) -> Proof:
    mine = of_program(cases, program)
    named = [c for c in mine if c.name == test]
    if named:
        return Proof("case", _worst(named), f"GoogleTest case {test}")
    if not mine:
        return Proof("none", None, "no GoogleTest report")
    ref = {c.name for c in of_program(reference, program) if c.outcome == "passed"}
    here = {c.name: c.outcome for c in mine}
    gone = sorted(n for n in ref if here.get(n) != "passed" and here.get(n) != "failed")
    if any(o == "failed" for o in here.values()):
        bad = sorted(n for n, o in here.items() if o == "failed")
        return Proof("program", "failed", f"GoogleTest cases failed: {', '.join(bad[:5])}")
    if gone:
        return Proof(
            "program",
            "skipped",
            f"cases that ran on the reference did not run: {', '.join(gone[:5])}",
        )
    if not any(o == "passed" for o in here.values()):
        return Proof("program", "not_run", "no case of the program ran")
    return Proof(
        "program", "passed", f"{sum(o == 'passed' for o in here.values())} GoogleTest cases"
    )


def _worst(cases: list[Case]) -> Outcome:
    for outcome in ("failed", "skipped", "not_run"):
        if any(c.outcome == outcome for c in cases):
            return outcome
    return "passed"
