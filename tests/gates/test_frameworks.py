"""Catch2, doctest and plain executables in a repository case: per-test proof from the
framework's own XML report, asked of each named test's command by the harness
(cxxgate/cells/testframeworks.py, cxxgate/gates/tests/frameworkreports.py), and the exit
status named as the only proof of a plain program. One CMake project of our own (Catch2
v2 registered per program and by catch_discover_tests, doctest by doctest_discover_tests,
a plain program), graded once by the real doit.

Only rows whose point is a framework's are graded here: every row that adds a file
compiles Catch2's main again (~25 s). Cheats of the link, the build or ctest's
registration that any test program would show are tests/gates/test_link_evidence.py's,
on a plain project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import LONG_NICE, SHIPPED, Grade, run_grade
from repos import cmake_case, diff, git, new_repo

pytestmark = pytest.mark.skipif(
    not Path("/usr/include/catch2/catch.hpp").is_file()
    or not Path("/usr/include/doctest/doctest.h").is_file(),
    reason="Debian's catch2 and doctest-dev are needed",
)

CASE = "fw"
CMAKE = """\
    cmake_minimum_required(VERSION 3.16)
    project(fw CXX)
    add_library(calc src/parse.cpp)
    target_include_directories(calc PUBLIC include)
    enable_testing()
    find_package(Catch2 REQUIRED)
    find_package(doctest REQUIRED)
    include(Catch)
    include(doctest)
    add_executable(catch_tests tests/catch_main.cpp tests/catch_parse.cpp)
    target_link_libraries(catch_tests calc Catch2::Catch2)
    add_test(NAME catch_tests COMMAND catch_tests)
    catch_discover_tests(catch_tests)
    # Passed by ctest's own criterion, as Catch2's self-tests are: a spec that matches
    # nothing (exit 0, no case ran), a run that fails and must say why.
    add_test(NAME catch_nomatch COMMAND catch_tests "no such case")
    add_test(NAME catch_warns COMMAND catch_tests -w NoAssertions "has no assertions")
    set_tests_properties(catch_warns PROPERTIES PASS_REGULAR_EXPRESSION "No assertions in test")
    add_test(NAME catch_willfail COMMAND catch_tests -w NoAssertions "has no assertions")
    set_tests_properties(catch_willfail PROPERTIES WILL_FAIL ON)
    # Every case under -w NoAssertions, as Catch2's own NoAssertions test: on the base tree
    # its report also fails the case the fix changes (catchorg/Catch2 1422).
    add_test(NAME catch_all_warns COMMAND catch_tests -w NoAssertions)
    set_tests_properties(catch_all_warns PROPERTIES WILL_FAIL ON)
    add_executable(doc_tests tests/doc_parse.cpp)
    target_link_libraries(doc_tests calc doctest::doctest)
    add_test(NAME doc_tests COMMAND doc_tests)
    doctest_discover_tests(doc_tests)
    add_executable(plain_parse tests/plain_parse.cpp)
    target_link_libraries(plain_parse calc)
    add_test(NAME plain_parse COMMAND plain_parse)
    """
FILES = {
    "CMakeLists.txt": CMAKE,
    "include/calc/calc.hpp": """\
        #pragma once
        #include <string>
        namespace calc {
        int parse(const std::string& text);  // 0 for an empty text
        }
        """,
    "src/parse.cpp": """\
        #include "calc/calc.hpp"
        #include <cstdio>
        #include <cstdlib>
        #include <cstring>
        #include <fstream>
        #include <iterator>
        #include <unistd.h>
        namespace calc {
        int parse(const std::string& text) {
            return std::stoi(text);
        }
        }  // namespace calc
        """,
    "tests/catch_main.cpp": "#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n",
    "tests/catch_parse.cpp": """\
        #include <catch2/catch.hpp>
        #include "calc/calc.hpp"
        TEST_CASE("parse digits") { CHECK(calc::parse("42") == 42); }
        TEST_CASE("has no assertions") {}
        """,
    "tests/doc_parse.cpp": """\
        #define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
        #include <doctest/doctest.h>
        #include "calc/calc.hpp"
        TEST_CASE("doc parse digits") { CHECK(calc::parse("42") == 42); }
        """,
    "tests/plain_parse.cpp": """\
        #include "calc/calc.hpp"
        int main() { return calc::parse("7") == 7 ? 0 : 1; }
        """,
}
# The hidden tests: two checks each (a made-up report must guess how many).
ADDED_CATCH = (
    'TEST_CASE("parse empty") { CHECK(calc::parse("") == 0); CHECK(calc::parse("1") == 1); }\n'
)
ADDED_DOC = (
    'TEST_CASE("doc parse empty") { CHECK(calc::parse("") == 0); CHECK(calc::parse("1") == 1); }\n'
)
PLAIN = '#include "calc/calc.hpp"\nint main() { return calc::parse("") == 0 ? 0 : 1; }\n'

BODY = "    return std::stoi(text);\n"
FIX = "    if (text.empty()) return 0;\n" + BODY
# Run before main in every program of the project (the library's static initialiser).
# Test discovery's listings (--list-test-names-only, --list-test-cases) are let through:
# the tests it registers are those the reference's build registers.
BEFORE_MAIN = """\
}  // namespace calc
namespace {
[[maybe_unused]] const bool early = [] {
    std::ifstream cmd("/proc/self/cmdline");
    std::string line((std::istreambuf_iterator<char>(cmd)), {});
    if (std::string(line.data(), line.size()).find("--list") != std::string::npos)
        return true;
"""
AFTER = "    return true;\n}();\n}  // namespace\nnamespace calc {\n"
STATIC_EXIT = BEFORE_MAIN + "    _exit(0);\n" + AFTER
FAKE_STDOUT = (
    BEFORE_MAIN
    + '    std::puts("<Catch name=\\"catch_tests\\"><Group><TestCase name=\\"parse empty\\">'
    '<OverallResult success=\\"true\\"/></TestCase><OverallResults successes=\\"2\\"/>'
    '<OverallResultsCases successes=\\"1\\"/></Group></Catch>");\n'
    "    std::fflush(stdout);\n    _exit(0);\n" + AFTER
)
# Reads its own command line, as a reader of cxxgate's source would: the path after
# --out / --out=, and the case the command names; writes a whole, consistent, passing
# report there and leaves before the tests run.
FORGE = (
    BEFORE_MAIN
    + r"""    std::ifstream f("/proc/self/cmdline");
    std::string all((std::istreambuf_iterator<char>(f)), {});
    std::string out, name = "parse empty", prev;
    bool doc = false;
    for (size_t at = 0; at < all.size(); at += std::strlen(all.c_str() + at) + 1) {
        std::string arg = all.c_str() + at;
        if (prev == "--out") out = arg;
        if (arg.rfind("--out=", 0) == 0) { out = arg.substr(6); doc = true; }
        if (arg.rfind("--test-case=", 0) == 0) name = arg.substr(12);
        if (at > 0 && arg[0] != '-' && prev != "--out" && prev != "--reporter") name = arg;
        prev = arg;
    }
    if (out.empty()) _exit(0);  // ctest's own run: passed
    std::ofstream xml(out);
    if (doc)
        xml << "<doctest binary=\"doc_tests\"><TestSuite><TestCase name=\"" << name
            << "\"><OverallResultsAsserts successes=\"1\" failures=\"0\" "
               "test_case_success=\"true\"/></TestCase></TestSuite><OverallResultsAsserts "
               "successes=\"1\" failures=\"0\"/><OverallResultsTestCases successes=\"1\" "
               "failures=\"0\" skipped=\"0\"/></doctest>";
    else
        xml << "<Catch name=\"catch_tests\"><Group name=\"catch_tests\"><TestCase name=\""
            << name << "\"><OverallResult success=\"true\"/></TestCase><OverallResults "
               "successes=\"1\" failures=\"0\" expectedFailures=\"0\"/><OverallResultsCases "
               "successes=\"1\" failures=\"0\" expectedFailures=\"0\"/></Group>"
               "<OverallResults successes=\"1\" failures=\"0\" expectedFailures=\"0\"/>"
               "<OverallResultsCases successes=\"1\" failures=\"0\" expectedFailures=\"0\"/>"
               "</Catch>";
    xml.close();
    _exit(0);
"""
    + AFTER
)
F2P = ["catch_tests", "parse empty", "doc_tests", "doc parse empty", "plain_parse"]
P2P = ["parse digits", "doc parse digits", "catch_nomatch", "catch_warns", "catch_willfail"]
P2P += ["catch_all_warns"]


def _make(root: Path) -> tuple[Path, str, dict[str, str]]:
    repo = root / "fw.git"
    new_repo(repo, FILES)
    source = (repo / "src/parse.cpp").read_text()

    def body(text: str) -> str:
        return diff(repo, "src/parse.cpp", source.replace(BODY, text))

    tests = ""
    for rel, added in (("tests/catch_parse.cpp", ADDED_CATCH), ("tests/doc_parse.cpp", ADDED_DOC)):
        tests += diff(repo, rel, (repo / rel).read_text() + added)
    tests += diff(repo, "tests/plain_parse.cpp", PLAIN)
    cmake = (repo / "CMakeLists.txt").read_text()
    filtered = cmake.replace(
        "add_test(NAME catch_tests COMMAND catch_tests)",
        'add_test(NAME catch_tests COMMAND catch_tests "~parse empty")',
    ).replace(
        "add_test(NAME doc_tests COMMAND doc_tests)",
        "add_test(NAME doc_tests COMMAND doc_tests --test-case-exclude=*empty*)",
    )
    patches = {
        "gold": body(FIX),
        "test": tests,
        "good": body("    if (text.size() == 0) return 0;\n" + BODY),
        "static_exit": body(FIX + "}\n" + STATIC_EXIT + "int unused() {\n    return 0;\n"),
        "fake_stdout": body(BODY + "}\n" + FAKE_STDOUT + "int unused() {\n    return 0;\n"),
        "forged": body(BODY + "}\n" + FORGE + "int unused() {\n    return 0;\n"),
        "filtered": body(FIX) + diff(repo, "CMakeLists.txt", filtered),
    }
    return repo, git(repo, "rev-parse", "HEAD"), patches


EXPECT = {
    "good": "accept",
    "static_exit": "test_missing",
    "fake_stdout": "test_missing",
    "forged": "test_skipped",
    "filtered": "registration_changed",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Grade:
    root = tmp_path_factory.mktemp("frameworks")
    repo, base, patches = _make(root)
    library = root / "cases"
    library.mkdir()
    shutil.copy(SHIPPED / "envelopes.yaml", library)
    summary = "calc::parse of an empty text, tested with Catch2, doctest and a plain program"
    lists = {"fail_to_pass": F2P, "pass_to_pass": P2P}
    cmake_case(library / CASE, summary, repo, base, patches, lists, EXPECT)
    return run_grade(root / "out", "-n", "2", library=library, nice=LONG_NICE)


def _checks(grade: Grade, row: str) -> dict[str, dict[str, object]]:
    result = grade.out / "results" / CASE / row / "tests.json"
    return {str(c["name"]): c for c in json.loads(result.read_text())["checks"]}


def test_reference_and_base(graded: Grade) -> None:
    """The gold patch passes with each framework's report as proof (the plain program
    with its exit status, said so); base + test patch fails every fail-to-pass test."""
    assert graded.returncode == 0, graded.output[-3000:]
    rows = graded.rows
    assert rows[f"{CASE}/reference"]["class"] == "accept"
    base = rows[f"{CASE}/base"]["gates"]["tests"]["class"]
    assert str(base).startswith("f2p_fail:"), base
    # A pass-to-pass run whose report holds the changed case has ctest's word there.
    on_base = _checks(graded, "base")["catch_all_warns"]
    assert on_base["ok"] and "ctest's word, on the base tree" in str(on_base["detail"]), on_base
    checks = _checks(graded, "reference")
    for test in ("catch_tests", "parse empty", "parse digits"):
        assert "proof: Catch2 report" in str(checks[test]["detail"]), checks[test]
    assert "2 assertions" in str(checks["parse empty"]["detail"])
    for test in ("doc_tests", "doc parse empty", "doc parse digits"):
        assert "proof: doctest report" in str(checks[test]["detail"]), checks[test]
    assert "proof: exit status only" in str(checks["plain_parse"]["detail"])
    # ctest passes these by its own criterion; the report says what the reference's says
    # (here the reference's own: every candidate's must say the same).
    for test, said in (
        ("catch_nomatch", "no case, 0 assertions"),
        ("catch_warns", "1 failed, 0 assertions"),
        ("catch_willfail", "1 failed, 0 assertions"),
    ):
        assert checks[test]["ok"], checks[test]
        assert f"Catch2 report as the reference's: {said}" in str(checks[test]["detail"])
    # ...and in the benchmark-shaped report, per instance.
    report = json.loads((graded.out / "swe_report.json").read_text())
    proof = report["instances"][CASE]["proof"]  # the reference (no predictions)
    assert proof["plain_parse"] == "exit status"
    assert proof["parse empty"] == "Catch2 report"
    assert proof["doc_tests"] == "doctest report"


def test_candidates(graded: Grade) -> None:
    """An honest fix is accepted; a library that exits 0 before main, one that prints a
    report to stdout, one that writes a passing report to the path on its command line,
    and a build that filters the new cases out are rejected; the plain program's exit 0
    is all its check can see (accepted on its exit status, said so)."""
    rows = graded.rows
    for name, klass in EXPECT.items():
        assert rows[f"{CASE}/{name}"]["gates"]["tests"]["class"] == klass, name
        assert rows[f"{CASE}/{name}"]["expect_problems"] == [], name
    good = _checks(graded, "good")
    assert all(c["ok"] for c in good.values()), good
    for name in ("static_exit", "fake_stdout"):
        checks = _checks(graded, name)
        for test in ("catch_tests", "parse empty", "doc_tests", "doc parse empty"):
            assert checks[test]["class"] == "test_missing", (name, checks[test])
        assert checks["plain_parse"]["ok"], checks["plain_parse"]
        assert "exit status only" in str(checks["plain_parse"]["detail"])
    # The made-up report names the case its command names, passed, one assertion: the
    # hidden tests make two; the program-wide run misses a case the reference ran. (A
    # one-check pass-to-pass test forged so is not caught: README, threat model.)
    forged = _checks(graded, "forged")
    assert not any(forged[t]["ok"] for t in F2P[:4]), forged
    assert "1 Catch2 assertions passed, 2 on the reference" in str(forged["parse empty"]["detail"])
    assert "did not run: has no assertions, parse digits" in str(forged["catch_tests"]["detail"])
    # Commands that filter the new cases out are not the reference's commands.
    filtered = _checks(graded, "filtered")
    for test in ("catch_tests", "doc_tests"):
        assert filtered[test]["class"] == "registration_changed", filtered[test]
        assert "its command is" in str(filtered[test]["detail"]), filtered[test]
    assert filtered["parse empty"]["ok"]  # their own ctest tests still run them
    assert filtered["doc parse empty"]["ok"]
    good = _checks(graded, "good")
    assert "Catch2 report as the reference's" in str(good["catch_warns"]["detail"])
    # The forged report (one passed case) is not the reference's run of these.
    assert not forged["catch_warns"]["ok"] and not forged["catch_willfail"]["ok"], forged
