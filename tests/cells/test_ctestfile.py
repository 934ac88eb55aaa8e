"""ctest's listing written back as the CTestTestfile.cmake the run reads
(cxxgate/cells/ctestfile.py): the real ctest lists it again as it was listed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cxxgate.cells import ctest, ctestfile

pytestmark = pytest.mark.skipif(shutil.which("ctest") is None, reason="cmake is needed")

# Names and values CMake would read otherwise if they were written plainly: brackets that
# close a bracket argument early, a leading newline, semicolons, variables, quotes.
AWKWARD = ["a]=", "b]]==]x", "\nlead", "semi;colon", "${X} $ENV{HOME} \\n", 'q"uote', "[tag]"]


def _listing(tests: list[dict[str, object]]) -> str:
    return json.dumps({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": tests})


def test_the_listing_round_trips_through_ctest(tmp_path: Path) -> None:
    tests: list[dict[str, object]] = [
        {
            "name": name,
            "command": ["/bin/echo", name, "--flag"],
            "properties": [
                {"name": "ENVIRONMENT", "value": ["A=1;2", "B=x"]},
                {"name": "PASS_REGULAR_EXPRESSION", "value": [name]},
                {"name": "TIMEOUT", "value": 12.5},
                {"name": "WILL_FAIL", "value": True},
                {"name": "WORKING_DIRECTORY", "value": "/tmp"},
            ],
        }
        for name in AWKWARD
    ]
    # ctest's stderr follows its stdout in the step's output: a script's message().
    written = ctestfile.write(_listing(tests) + "CMake Warning: from a script\n", 0, tmp_path)
    assert json.loads(written)["tests"] == tests
    again = subprocess.run(
        ["ctest", "--show-only=json-v1", "--test-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = json.loads(again.stdout)["tests"]
    for test in listed:
        test.pop("backtrace", None)
    assert listed == tests


def test_only_the_named_tests_and_their_fixtures_run(tmp_path: Path) -> None:
    """Red-team round 21's `run_drop`: a test of the patch's own, registered first, left a
    twin where a listed test looks; the run now holds the tests the case names (by
    ctest's name, case folded as Multi-SWE-bench lists them) and the fixtures they need."""

    def test(name: str, **props: object) -> dict[str, object]:
        properties = [{"name": k, "value": v} for k, v in props.items()]
        return {"name": name, "command": ["/bin/true"], "properties": properties}

    tests = [
        test("aa_drop"),
        test("data", FIXTURES_SETUP=["DATA"], FIXTURES_REQUIRED=["NET"]),
        test("net", FIXTURES_SETUP=["NET"]),
        test("wipe", FIXTURES_CLEANUP=["DATA"]),
        test("Parse", FIXTURES_REQUIRED=["DATA"]),
        test("digits"),
        test("other", FIXTURES_SETUP=["ELSE"]),
    ]
    assert ctestfile.kept(tests, ["parse", "digits"]) == {"Parse", "digits", "data", "net", "wipe"}
    assert ctestfile.kept(tests, []) is None
    ctestfile.write(_listing(tests), 0, tmp_path, ["parse", "digits"])
    again = subprocess.run(
        ["ctest", "--show-only=json-v1", "--test-dir", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    ran = {t["name"] for t in json.loads(again.stdout)["tests"]}
    assert ran == {"Parse", "digits", "data", "net", "wipe"}


def test_no_listing_is_refused(tmp_path: Path) -> None:
    """A failed or empty listing writes no file: the suite does not run (the project's
    own CTestTestfile.cmake would run its scripts again)."""
    for output, code in (("", 0), (_listing([]), 8), ('{"tests": 3}', 0), ("[1]", 0)):
        with pytest.raises(ValueError):
            ctestfile.write(output, code, tmp_path)
    assert not (tmp_path / ctestfile.NAME).exists()


def test_ctests_own_lines_are_read_per_test() -> None:
    """Each finished test's status as ctest prints it (what the JUnit file is checked
    against, gates/tests/suite.py `outcomes`), names with spaces and past the dots."""
    printed = (
        "    Start 1: parse empty\n"
        "1/4 Test #1: parse empty ...........Subprocess aborted***Exception:   0.00 sec\n"
        "2/4 Test #2: plain_digits .....................   Passed    0.01 sec\n"
        "3/4 Test #3: a_name_longer_than_the_dotted_width_of_the_lines_ctest_prints_for_test ...   "
        "Passed    0.01 sec\n"
        "4/4 Test #4: dis ...................***Not Run (Disabled)   0.00 sec\n"
        "1/4 Test #2: plain_digits ....   Passed    0.01 sec   (a line a test printed)\n"
    )
    assert ctest.said_by_ctest(printed) == {
        "parse empty": ["Subprocess aborted***Exception:"],
        "plain_digits": ["Passed"],
        "a_name_longer_than_the_dotted_width_of_the_lines_ctest_prints_for_test": ["Passed"],
        "dis": ["***Not Run (Disabled)"],
    }
