"""GoogleTest's reports as the `tests` gate reads them (cxxgate/gates/testreports.py), from
real programs built with g++ against the system's GoogleTest, and the test units' flags
(cxxgate/gates/testunits.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cxxgate.gates import testreports, testunits

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None or not Path("/usr/include/gtest/gtest.h").is_file(),
    reason="g++ and libgtest-dev are needed",
)

SUITE = """\
#include <gtest/gtest.h>
TEST(Kind, Passes) { EXPECT_EQ(1, 1); }
TEST(Kind, SkipsInBody) { GTEST_SKIP() << "no"; }
TEST(Kind, Fails) { EXPECT_EQ(1, 2); }
TEST(Kind, DISABLED_Off) { EXPECT_EQ(1, 1); }
"""
# Skips every test before its body starts: gtest 1.12 writes each as completed.
ENV_SKIP = """\
namespace {
struct Skip : ::testing::Environment {
    void SetUp() override { GTEST_SKIP(); }
};
[[maybe_unused]] auto* const skip = ::testing::AddGlobalTestEnvironment(new Skip);
}  // namespace
"""


def _program(tmp: Path, name: str, text: str) -> Path:
    source = tmp / f"{name}.cpp"
    source.write_text(text)
    binary = tmp / name
    subprocess.run(
        ["g++", "-std=c++17", str(source), "-o", str(binary), "-lgtest_main", "-lgtest"],
        check=True,
        capture_output=True,
    )
    return binary


def _run(binary: Path, reports: Path, *args: str) -> None:
    env = {**os.environ, "GTEST_OUTPUT": f"xml:{reports}/"}
    subprocess.run([str(binary), *args], env=env, capture_output=True, check=False)


def test_outcomes_from_real_reports(tmp_path: Path) -> None:
    """Passed, skipped in its body, failed, disabled (not run); a global environment that
    skips leaves every case `completed` but never started (not run); a listing (test
    discovery's --gtest_list_tests) is no run at all."""
    reports = tmp_path / "reports"
    suite = _program(tmp_path, "suite-test", SUITE)
    _run(suite, reports, "--gtest_list_tests")
    _run(suite, reports)
    skipping = _program(
        tmp_path, "skip-test", SUITE.replace("TEST(Kind", ENV_SKIP + "TEST(Kind", 1)
    )
    _run(skipping, reports)
    cases = testreports.read_reports(reports)
    by = {(c.report.split(".")[0].split("_")[0], c.name): c.outcome for c in cases}
    assert by[("suite-test", "Kind.Passes")] == "passed"
    assert by[("suite-test", "Kind.SkipsInBody")] == "skipped"
    assert by[("suite-test", "Kind.Fails")] == "failed"
    assert by[("suite-test", "Kind.DISABLED_Off")] == "not_run"
    assert by[("skip-test", "Kind.Passes")] == "not_run"
    assert len([c for c in cases if c.report.startswith("suite-test")]) == 4  # no listing

    # One ctest test per program (fmt's style): the program's cases, against the
    # reference's run of the same program.
    ref = [c for c in cases if c.report.startswith("suite-test")]
    skipped = [c for c in cases if c.report.startswith("skip-test")]
    assert testreports.proof("suite-test", "suite-test", cases, ref).outcome == "failed"
    renamed = [testreports.Case(c.name, c.outcome, "skip-test.xml") for c in ref]
    said = testreports.proof("skip-test", "skip-test", skipped, renamed)
    assert said.kind == "program" and said.outcome == "skipped"
    # gtest_discover_tests' style: the ctest name is the case's.
    named = testreports.proof("Kind.Passes", "suite-test", cases, ref)
    assert (named.kind, named.outcome) == ("case", "passed")
    assert testreports.proof("Kind.Passes", "other", cases, ref).outcome is None


def test_preprocessor_flags_and_test_folders() -> None:
    argv = [
        "/usr/bin/g++", "-I/src/project/include", "-include", "/src/project/src/q.h", "-D",
        "X=1", "-UY", "-O2", "-Wp,-imacros,m.h", "@extra.rsp", "-o", "a.o", "-c", "a.cpp",
    ]  # fmt: skip
    assert testunits.preprocessor_flags(argv) == {
        "-I/src/project/include", "-include/src/project/src/q.h", "-DX=1", "-UY",
        "-Wp,-imacros,m.h", "@extra.rsp",
    }  # fmt: skip
    assert testunits.programs(["/bin/sh", "cc.sh", "/usr/bin/g++", "-c", "a.cpp"]) == {
        "run:/bin/sh", "run:cc.sh", "run:/usr/bin/g++",
    }  # fmt: skip
    assert testunits.test_dirs(["/tests/a_test.cpp", "test/**", "/top.cpp"]) == [
        ".", "test", "tests",
    ]  # fmt: skip
