"""GoogleTest's reports as the `tests` gate reads them (gates/tests/testreports.py), from
real programs built with g++ against the system's GoogleTest, and the test units' flags
(gates/tests/testunits.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from cxxgate.cells import ctest
from cxxgate.gates.tests import testreports, testunits

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
    named = [c for c in cases if c.report.startswith("suite-test") and c.name]
    assert len(named) == 4  # the listing has no run case

    # One ctest test per program (fmt's style): the program's cases, against the
    # reference's run of the same program.
    ref = [c for c in cases if c.report.startswith("suite-test")]
    skipped = [c for c in cases if c.report.startswith("skip-test")]
    fixed = [replace(c, outcome="passed") if c.name == "Kind.Fails" else c for c in ref]
    assert testreports.proof("suite-test", "suite-test", cases, fixed).outcome == "failed"
    # A run that says what the reference's says, failed case and all (ctest passed both
    # by WILL_FAIL or a regular expression: registrations are compared in suite.py).
    same = testreports.proof("suite-test", "suite-test", cases, ref)
    assert (same.outcome, same.why) == (
        "passed",
        "GoogleTest cases as the reference's: 1 failed, 1 not_run, 1 passed, 1 skipped",
    )
    # ...and a run that passes where that reference's failed is not that run.
    differs = testreports.proof("suite-test", "suite-test", fixed, ref)
    assert (differs.outcome, differs.why) == (
        "failed",
        "GoogleTest case Kind.Fails passed here, failed on the reference",
    )
    renamed = [testreports.Case(c.name, c.outcome, "skip-test.xml") for c in fixed]
    said = testreports.proof("skip-test", "skip-test", skipped, renamed)
    assert said.kind == "program" and said.outcome == "skipped"
    # gtest_discover_tests' style: the ctest name is the case's.
    named = testreports.proof("Kind.Passes", "suite-test", cases, ref)
    assert (named.kind, named.outcome) == ("case", "passed")
    assert testreports.proof("Kind.Passes", "other", cases, ref).outcome is None


def test_preprocessor_flags_and_test_folders() -> None:
    argv = [
        "/usr/bin/g++", "-I/src/project/include", "-include", "/src/project/src/q.h", "-D",
        "X=1", "-UY", "-O2", "-Wp,-imacros,m.h", "@extra.rsp", "--define-macro=Z", "-A",
        "calc=testing", "-fshort-enums", "-fdiagnostics-color=always", "-march=native", "-o",
        "a.o", "-c", "a.cpp",
    ]  # fmt: skip
    assert testunits.preprocessor_flags(argv) == {
        "-I/src/project/include", "-include/src/project/src/q.h", "-DX=1", "-UY",
        "-Wp,-imacros,m.h", "@extra.rsp", "--define-macro=Z", "-Acalc=testing",
        "-fshort-enums", "-march=native",
    }  # fmt: skip
    assert testunits.programs(["/bin/sh", "cc.sh", "/usr/bin/g++", "-c", "a.cpp"]) == {
        "run:/bin/sh", "run:cc.sh", "run:/usr/bin/g++",
    }  # fmt: skip
    assert testunits.test_dirs(["/tests/a_test.cpp", "test/**", "/top.cpp"]) == [
        ".", "test", "tests",
    ]  # fmt: skip


# A library initialiser that writes the report GoogleTest would write, then leaves before
# GoogleTest's main runs (the red team's forge_xml): its file name is its own choice.
FORGE = r"""
#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <string>
namespace {
[[maybe_unused]] const bool forged = [] {
    std::ofstream xml(std::string(std::getenv("GTEST_OUTPUT") + 4) + "suite-test_" +
                      std::to_string(getpid()) + ".xml");
    xml << "<testsuites><testsuite name='Kind'><testcase name='Passes' status='run'"
           " result='completed' timestamp='2026-01-01T00:00:00' classname='Kind'/>"
           "</testsuite></testsuites>";
    xml.close();
    _exit(0);
    return true;
}();
}  // namespace
"""


def test_reports_gtest_did_not_name_prove_nothing(tmp_path: Path) -> None:
    """GoogleTest names the reports of a program's runs in one folder prog.xml, prog_1.xml,
    ...: a report a library initialiser wrote under a name of its own before main (no
    test body ran) is no proof."""
    reports = tmp_path / "reports"
    honest = _program(tmp_path, "suite-test", SUITE)
    _run(honest, reports, "--gtest_list_tests")
    _run(honest, reports, "--gtest_filter=Kind.Passes")
    assert sorted(p.name for p in reports.iterdir()) == ["suite-test.xml", "suite-test_1.xml"]
    cases = testreports.read_reports(reports)
    said = testreports.proof("Kind.Passes", "suite-test", cases, cases)
    assert (said.kind, said.outcome) == ("case", "passed")

    (tmp_path / "forge").mkdir()
    forged = _program(tmp_path / "forge", "suite-test", FORGE + SUITE)
    _run(forged, reports, "--gtest_filter=Kind.Fails")
    cases = testreports.read_reports(reports)
    assert len({c.report for c in cases}) == 3  # the forged report parses
    said = testreports.proof("Kind.Passes", "suite-test", cases, cases)
    assert said.outcome is None  # no report of the program is GoogleTest's
    assert not testreports.gtest_named("p", {"p.xml", "p_2.xml"})
    assert testreports.gtest_named("p", {"p.xml", "p_1.xml", "p_2.xml"})


SPI = """\
#include <gtest/gtest-spi.h>
namespace {
[[maybe_unused]] const auto* const quiet = new ::testing::ScopedFakeTestPartResultReporter(
    ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS,
    new ::testing::TestPartResultArray);
}  // namespace
int parse() { return 1; }
"""


def _object(tmp: Path, name: str, text: str) -> Path:
    (tmp / f"{name}.cpp").write_text(text)
    subprocess.run(
        ["g++", "-std=c++17", "-c", str(tmp / f"{name}.cpp"), "-o", str(tmp / f"{name}.o")],
        check=True,
        capture_output=True,
    )
    return tmp / f"{name}.o"


def test_library_objects_that_reach_into_googletest(tmp_path: Path) -> None:
    """A library unit that installs a fake result reporter names GoogleTest's symbols,
    which the reference's library object does not: framework_tamper. A test unit's own
    template instances (a changed API) do not count; what it binds to GoogleTest does."""
    from cxxgate.cells.ctest import gtest_symbols

    plain = gtest_symbols(_object(tmp_path, "plain", "int parse() { return 1; }\n"), tmp_path)
    spi = gtest_symbols(_object(tmp_path, "spi", SPI), tmp_path)
    test = gtest_symbols(_object(tmp_path, "t", SUITE), tmp_path)
    assert plain == set()
    assert any("ScopedFakeTestPartResultReporter" in n and n.startswith("U ") for n in spi)
    assert gtest_symbols(tmp_path / "none.o", tmp_path) == {"(not an ELF object)"}
    lib, unit = "<tree>/src/lib.cpp", "<tree>/tests/t.cpp"
    ref = {"symbols": {lib: sorted(plain), unit: sorted(test)}}
    assert testunits.tampered(ref, ref, ["tests"]) == {}
    swallowing = {"symbols": {lib: sorted(spi), unit: sorted(test)}}
    assert list(testunits.tampered(swallowing, ref, ["tests"])) == [lib]
    instances = {n for n in test if n.startswith("D ")}
    changed_api = {"symbols": {lib: [], unit: sorted(test - instances)}}
    assert testunits.tampered(changed_api, {"symbols": {lib: [], unit: []}}, ["tests"]) == {
        unit: sorted(n[2:] for n in test - instances)
    }
    only_instances = {"symbols": {lib: [], unit: sorted(instances | {"D _ZN7testing1XEv"})}}
    assert testunits.tampered(only_instances, ref, ["tests"]) == {}
    # A new library unit may name nothing of GoogleTest; a new test unit what tests did.
    added = {"symbols": {**ref["symbols"], "<tree>/src/new.cpp": ["U _ZN7testing4TestC2Ev"]}}
    assert list(testunits.tampered(added, ref, ["tests"])) == ["<tree>/src/new.cpp"]


def test_test_units_and_links_against_the_reference() -> None:
    """A reference test unit compiled from a copy in the build folder, and a test program
    linked with a new object: test_flags_changed's evidence."""
    ref = {
        "compiles": {"t.o": "<tree>/tests/t.cpp", "l.o": "<tree>/src/l.cpp"},
        "links": {"lib.a": ["ar", "qc", "lib.a", "l.o"], "tests/t": ["c++", "t.o", "lib.a"]},
    }
    assert testunits.moved_units(ref, ref, ["tests"]) == []
    assert testunits.new_link_words(ref, ref, ["tests"]) == []
    copied = {
        "compiles": {"g.o": "<build>/tests/gen/t.cpp", "l.o": "<tree>/src/l.cpp"},
        "links": {"lib.a": ["ar", "qc", "lib.a", "l.o"], "tests/t": ["c++", "g.o", "lib.a"]},
    }
    assert testunits.moved_units(copied, ref, ["tests"]) == ["<tree>/tests/t.cpp: not built"]
    assert testunits.new_link_words(copied, ref, ["tests"]) == ["tests/t links with g.o"]
    # An option is the crossed proof's (the program linked again without it).
    wrapped = {**ref, "links": {**ref["links"], "tests/t": ["c++", "-Wl,--wrap=x", "t.o", "lib.a"]}}
    assert testunits.new_link_words(wrapped, ref, ["tests"]) == []
    # A new library source: its object is compiled from the tree, and the archive is made.
    grown = {
        "compiles": {**ref["compiles"], "m.o": "<tree>/src/m.cpp"},
        "links": {"lib.a": ["ar", "qc", "lib.a", "l.o", "m.o"], "tests/t": ["c++", "t.o", "lib.a"]},
    }
    assert testunits.new_link_words(grown, ref, ["tests"]) == []


def test_ccache_listing_keeps_executable_files(tmp_path: Path) -> None:
    """An executable header in the build folder is in ccache's namespace listing
    (cxxgate/cells/cmake.py), with its mode: the red team's cc_b was served cc_a's object."""
    from cxxgate.cells.cmake import _names

    (tmp_path / "generated" / "duration").mkdir(parents=True)
    before = _names(tmp_path, products=True)
    header = tmp_path / "generated" / "duration" / "duration.hpp"
    header.write_text("#error\n")
    header.chmod(0o755)
    (tmp_path / "a.o").write_text("")
    assert _names(tmp_path, products=True) == "generated/duration/duration.hpp*"
    assert before == ""


def test_programs_and_objects_are_read_only_as_regular_files_of_the_build(tmp_path: Path) -> None:
    """The test programs and objects are read after the build's commands and the suite's
    tests ran, and those own the copy's folders: a FIFO in a program's place blocked the
    harness's open for ever (the grade hung), and a link (or a linked folder) out of the
    build had the harness, root, open a file or a device of the host. Neither is read."""
    import threading

    from cxxgate.cells.ctest import gtest_symbols
    from cxxgate.cells.testframeworks import framework_of

    build, host = tmp_path / "build", tmp_path / "host"
    build.mkdir()
    host.mkdir()
    os.mkfifo(build / "prog")
    shutil.copy(_object(tmp_path, "plain", "int parse() { return 1; }\n"), host / "x.o")
    (build / "out").symlink_to(host)
    (build / "x.o").symlink_to(host / "x.o")
    found: list[object] = []

    def read() -> None:
        found.append(framework_of(build / "prog", build))
        found.append(gtest_symbols(build / "prog", build))
        found.append(gtest_symbols(build / "out" / "x.o", build))
        found.append(gtest_symbols(build / "x.o", build))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "blocked on the FIFO"
    none = {"(not an ELF object)"}
    assert found == [None, none, none, none]
    assert gtest_symbols(host / "x.o", host) == set()  # where it belongs, it is read


def test_a_unit_compiled_twice_is_matched_against_each_of_the_references_compiles(
    tmp_path: Path,
) -> None:
    """fmt compiles test/util.cc into test-main and, with FMT_HEADER_ONLY, into other
    programs: a candidate built afresh (a new file in test/) lists the same compiles,
    and each must match one of the reference's, not the first (a real fmt grade refused
    the gold fix plus a new test file as test_flags_changed before)."""
    plain = {"NDEBUG": "1"}
    header_only = {"NDEBUG": "1", "FMT_HEADER_ONLY": "1"}
    ref = {"test/util.cc": plain, "test/util.cc#33": header_only}
    for name, units in (
        ("ref", ref),
        ("same", ref),
        ("moved", {"test/util.cc": plain, "test/util.cc#40": header_only}),
        ("new", {"test/util.cc": plain, "test/util.cc#33": {"X": "1"}}),
    ):
        (tmp_path / f"{name}.json").write_text(json.dumps(units))
    for name in ("same", "moved"):
        assert testunits.new_defines(tmp_path / f"{name}.json", tmp_path / "ref.json") == {}, name
    said = testunits.new_defines(tmp_path / "new.json", tmp_path / "ref.json")
    assert said == {"test/util.cc": ["FMT_HEADER_ONLY", "NDEBUG", "X"]}


def test_a_unit_the_reference_compiles_by_a_driver_the_harness_does_not_run(
    tmp_path: Path,
) -> None:
    """fmt's CUDA test unit, compiled by nvcc on a machine that has it: nothing is read of
    it on either side, which is no framework redefined (fmt-1390's base tree was refused
    for it, baseline_red). A unit the reference's driver does compile and the candidate's
    does not still is one."""
    gtest = {"TEST": "GTEST_TEST", "EXPECT_EQ": "EXPECT_PRED_FORMAT2"}
    ref = {"test/cuda.cu": dict(ctest.UNDRIVEN), "test/a.cc": gtest}
    units = {
        "ref": ref,
        "same": ref,
        "undriven": {"test/cuda.cu": dict(ctest.UNDRIVEN), "test/a.cc": dict(ctest.UNDRIVEN)},
        "stalled": {"test/cuda.cu": {"": "did not preprocess (test/b.cc ran out of time)"},
                    "test/a.cc": gtest},
    }  # fmt: skip
    for name, found in units.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(found))
    assert testunits.redefined(tmp_path / "same.json", tmp_path / "ref.json") == {}
    said = testunits.redefined(tmp_path / "undriven.json", tmp_path / "ref.json")
    assert said == {"test/a.cc": [f"(the unit {ctest.UNDRIVEN['']})"]}
    said = testunits.redefined(tmp_path / "stalled.json", tmp_path / "ref.json")
    assert list(said) == ["test/cuda.cu"]


def test_a_test_unit_reading_a_new_file_of_the_tests_folders() -> None:
    """A test unit of both builds that read a file of the tests' folders its reference
    compile did not (a header the patch added beside the tests, picked up by a library
    header's `__has_include`, red-team round 18) is named; a new file elsewhere (the
    library's own new header) and a unit of the patch's own are not."""
    ref = {"reads": {"<tree>/tests/a.cpp": ["<tree>/include/calc.hpp", "<tree>/tests/a.cpp"]}}
    mine = {"reads": {
        "<tree>/tests/a.cpp": [
            "<tree>/include/calc.hpp", "<tree>/include/calc/detail.hpp", "<tree>/tests/a.cpp",
            "<tree>/tests/le_client.hpp",
        ],
        "<tree>/tests/own.cpp": ["<tree>/tests/own.hpp"],
    }}  # fmt: skip
    assert testunits.new_reads(mine, ref, ["tests"]) == [
        "<tree>/tests/a.cpp reads <tree>/tests/le_client.hpp, which the reference's compile "
        "of it did not"
    ]
    assert testunits.new_reads(ref, ref, ["tests"]) == []
