"""Catch2 reports and ctest registrations as the `tests` gate reads them
(gates/tests/frameworkreports.py, gates/tests/testreports.py), on report and listing texts
shaped as Catch2 2.5 and ctest 3.25 write them. The end-to-end runs are in
test_frameworks.py."""

from __future__ import annotations

import json
from pathlib import Path

from cxxgate.cells.testframeworks import Record
from cxxgate.gates.tests import frameworkreports, testreports

# Catch2 before 2.10 closes a run with assertion totals only (no OverallResultsCases).
OLD_V2 = """<Catch name="SelfTest"><Group name="SelfTest">
<TestCase name="adds"><OverallResult success="true"/></TestCase>
<TestCase name="has no assertions"><OverallResult success="{ok}"/></TestCase>
<OverallResults successes="3" failures="{failures}" expectedFailures="0"/></Group>
<OverallResults successes="3" failures="{failures}" expectedFailures="0"/></Catch>"""


def _report(tmp: Path, name: str, text: str) -> frameworkreports.Report | None:
    (tmp / name).write_text(text)
    return frameworkreports.read(tmp / name)


def test_old_catch2_reports_are_whole_when_their_totals_agree(tmp_path: Path) -> None:
    """A 2.5 report with its closing totals is whole; a failed case the totals do not
    count, or a run cut before its totals, is not."""
    whole = _report(tmp_path, "a.xml", OLD_V2.format(ok="false", failures=1))
    assert whole is not None and whole.whole and whole.assertions == 3
    assert whole.cases == {"adds": "passed", "has no assertions": "failed"}
    edited = _report(tmp_path, "b.xml", OLD_V2.format(ok="false", failures=0))
    assert edited is not None and not edited.whole
    # The group closed, the run did not (its root totals are written last).
    cut = OLD_V2.format(ok="true", failures=0).rsplit("<OverallResults", 1)[0] + "</Catch>"
    torn = _report(tmp_path, "c.xml", cut)
    assert torn is not None and not torn.whole and torn.why == "no closing totals"


def test_a_run_ctest_passes_by_its_own_criterion_is_proved_by_the_reference_s(
    tmp_path: Path,
) -> None:
    """`-w NoAssertions` fails its case and ctest passes it by PASS_REGULAR_EXPRESSION: the
    same report as the reference's passes; one case more passed, or one assertion more,
    does not."""
    record = Record("catch2", "SelfTest", "r.xml")
    ref = _report(tmp_path, "ref.xml", OLD_V2.format(ok="false", failures=1))
    same = _report(tmp_path, "same.xml", OLD_V2.format(ok="false", failures=1))
    said = frameworkreports.proof("NoAssertions", record, same, ref)
    assert (said.outcome, said.why) == (
        "passed",
        "Catch2 report as the reference's: 1 failed, 1 passed, 3 assertions",
    )
    # Every case passed, as many assertions: a pass anywhere else, not the reference's
    # run of this test (its output matched "No assertions", its report says otherwise).
    passing = _report(tmp_path, "o.xml", OLD_V2.format(ok="true", failures=0))
    said = frameworkreports.proof("NoAssertions", record, passing, ref)
    assert (said.outcome, said.why) == (
        "failed",
        "Catch2 report differs from the reference's: case 'has no assertions' passed here,"
        " failed on the reference",
    )
    more = OLD_V2.format(ok="false", failures=1).replace('successes="3"', 'successes="4"')
    said = frameworkreports.proof("NoAssertions", record, _report(tmp_path, "m.xml", more), ref)
    assert said.why.endswith("4 assertions passed, 3 on the reference"), said


def test_registrations_name_what_differs(tmp_path: Path) -> None:
    """Command, working folder, environment and ctest's criteria are compared; cost and
    labels are not."""

    def listing(name: str, *props: dict[str, object], command: str = "<build>/t") -> Path:
        tests = [{"name": "t", "command": [command, "-x"], "properties": list(props)}]
        path = tmp_path / name
        path.write_text(json.dumps({"kind": "ctestInfo", "tests": tests}))
        return path

    cwd = {"name": "WORKING_DIRECTORY", "value": "<build>"}
    ref = testreports.registrations(listing("ref.json", cwd, {"name": "COST", "value": 1.5}))
    same = testreports.registrations(listing("same.json", cwd, {"name": "LABELS", "value": ["x"]}))
    assert testreports.registered_otherwise(same["t"], ref["t"]) == ""
    will_fail = testreports.registrations(
        listing("wf.json", cwd, {"name": "WILL_FAIL", "value": True})
    )
    assert testreports.registered_otherwise(will_fail["t"], ref["t"]) == (
        'its WILL_FAIL is true, on the reference "(none)"'
    )
    true = testreports.registrations(listing("true.json", cwd, command="/usr/bin/true"))
    assert testreports.registered_otherwise(true["t"], ref["t"]).startswith(
        'its command is ["/usr/bin/true", "-x"]'
    )
    assert "not in ctest's listing" in testreports.registered_otherwise(None, ref["t"])
