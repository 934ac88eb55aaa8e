"""The crossed proof's choices (cxxgate/cells/crossed.py) and the seed's configure inputs
(cxxgate/cells/cmake.py), on data of our own: which programs are crossed, which tests
run again, and which tree files make a build start afresh. The proof itself runs in the
graded rows of tests/gates/test_link_evidence.py."""

from __future__ import annotations

import json
from pathlib import Path

from cxxgate.cells import cmake, crossed

BUILD = "/src/build"


def _graph(commands: dict[str, str], why: dict[str, str] | None = None) -> dict[str, object]:
    linked = {p: {"why": (why or {}).get(p, "")} for p in commands}
    return {"programs": commands, "linked": linked}


def test_only_programs_not_linked_by_the_references_command_are_crossed() -> None:
    ref = _graph({"a": "g++ a.o libcalc.a -o a", "b": "g++ b.o libcalc.a -o b",
                  "c": "g++ c.o libcalc.a -o c", "d": "g++ d.o libcalc.a -o d"})  # fmt: skip
    commands = {"a": "g++ a.o libcalc.a -o a", "b": "g++ b.o fix.o libcalc.a -o b",
                "c": "g++ c.o libcalc.a -o c"}  # fmt: skip
    mine = _graph(commands, {"c": "it is not what its link command makes from the build"})
    # b: another command; c: its own re-link failed; d: not linked at all.
    assert crossed.to_cross(mine, ref) == ["b", "c", "d"]


def test_the_tests_that_run_again_are_the_references_listed_ones_on_a_relinked_program() -> None:
    def test(name: str, *command: str) -> dict[str, object]:
        return {"name": name, "command": list(command)}

    listing = {
        "kind": "ctestInfo",
        "tests": [
            test("Parse.Empty", f"{BUILD}/tests/parse_test", "--gtest_filter=Parse.Empty"),
            test("digits", f"{BUILD}/tests/digits_test"),
            test("scripted", "/bin/sh", "/src/project/tests/run.sh"),
            test("unlisted", f"{BUILD}/tests/parse_test"),
            test("dotted", f"{BUILD}/tests/./parse_test"),
        ],
    }
    said = {"tests/parse_test": crossed.RELINKED, "tests/digits_test": crossed.SAME}
    known = ["tests/digits_test", "tests/parse_test"]
    named = ["parse.empty", "digits", "scripted", "dotted"]  # listed names are folded
    kept, names = crossed.pick(json.dumps(listing), said, known, named, BUILD)
    # digits runs a program that is the reference's recipe already; scripted names no
    # test program, so what it runs is not known; unlisted is nobody's business.
    assert names == ["Parse.Empty", "dotted", "scripted"]
    assert [t["name"] for t in json.loads(kept)["tests"]] == ["Parse.Empty", "scripted", "dotted"]
    assert json.loads(kept)["kind"] == "ctestInfo"
    # A shared library the programs load, relinked to other bytes: every listed test.
    said |= {"tests/libsupport.so": crossed.RELINKED, "tests/libsame.so.1": crossed.SAME}
    _, names = crossed.pick(json.dumps(listing), said, known, named, BUILD)
    assert names == ["Parse.Empty", "digits", "dotted", "scripted"]


def test_a_link_the_harness_cannot_run_is_excused_only_where_no_listed_test_reaches_it() -> None:
    """fmt's CUDA test: nvcc device-links cmake_device_link.o, g++ links it into
    fmt-in-cuda-test, which no listed test runs. Reached by a listed test through any
    link or archive, or a listed test runs what is not known, or it is a shared library:
    refused as before."""
    nvcc = f"{crossed.NOT_RUN}: it is linked by /usr/local/bin/nvcc, not a compiler driver"
    links = {
        "dlink.o": ["/usr/local/bin/nvcc", "-dlink", "cuda.cu.o", "-o", "dlink.o"],
        "bin/cuda-test": ["/usr/bin/g++", "cuda.cu.o", "dlink.o", "-o", "bin/cuda-test"],
        "bin/format-test": ["/usr/bin/g++", "format-test.o", "-o", "bin/format-test"],
        "libhelp.a": ["/usr/bin/ar", "qc", "libhelp.a", "help.o", "dlink2.o"],
        "bin/posix-test": ["/usr/bin/g++", "posix-test.o", "libhelp.a", "-o", "bin/posix-test"],
    }
    known = ["bin/cuda-test", "bin/format-test", "bin/posix-test", "dlink.o", "dlink2.o"]

    def listing(*tests: tuple[str, str]) -> str:
        said = [{"name": n, "command": [f"{BUILD}/{p}" if p.startswith("bin/") else p]}
                for n, p in tests]  # fmt: skip
        return json.dumps({"tests": said})

    found = {"dlink.o": nvcc, "dlink2.o": nvcc, "bin/format-test": crossed.RELINKED}
    plain = listing(("format-test", "bin/format-test"), ("cuda-test", "bin/cuda-test"))
    named = ["format-test", "posix-test"]
    said = crossed.excuse(found, links, plain, known, named, BUILD)
    assert said == found | {"dlink.o": crossed.UNUSED, "dlink2.o": crossed.UNUSED}
    # Listed: cuda-test runs what dlink.o went into.
    said = crossed.excuse(found, links, plain, known, [*named, "cuda-test"], BUILD)
    assert said["dlink.o"] == nvcc and said["dlink2.o"] == crossed.UNUSED
    # Through an archive: posix-test links libhelp.a, which holds dlink2.o.
    both = listing(("format-test", "bin/format-test"), ("posix-test", "bin/posix-test"))
    said = crossed.excuse(found, links, both, known, named, BUILD)
    assert said["dlink.o"] == crossed.UNUSED and said["dlink2.o"] == nvcc
    # A listed test that runs no known program: anything may be run.
    scripted = listing(("format-test", "bin/format-test"), ("posix-test", "/bin/sh"))
    assert crossed.excuse(found, links, scripted, known, named, BUILD)["dlink.o"] == nvcc
    shared = {"libcuda-help.so": nvcc}
    assert crossed.excuse(shared, links, plain, known, named, BUILD) == shared


def test_a_record_reads_back_and_a_missing_one_reads_as_nothing(tmp_path: Path) -> None:
    path = tmp_path / crossed.JSON
    crossed.write(path, {"t": crossed.RELINKED}, {"lib.a": crossed.SAME}, ["T"])
    assert crossed.read(path) == ({"t": crossed.RELINKED}, {"lib.a": crossed.SAME}, ["T"])
    assert crossed.read(tmp_path / "none.json") == ({}, {}, [])


def test_the_archives_made_again_are_those_of_test_sources_only() -> None:
    """A vendored GoogleTest and a test helper are made again; the library's own archive,
    and one mixing a test source with a library source, are the patch's to change."""
    compiles = {
        "g.o": "<tree>/test/gtest/gtest-all.cc", "m.o": "<tree>/test/main.cc",
        "t.o": "<tree>/test/t.cc", "l.o": "<tree>/src/l.cc",
    }  # fmt: skip
    links = {
        "libgtest.a": ["/usr/bin/ar", "qc", "libgtest.a", "g.o"],
        "test/libmain.a": ["/usr/bin/ar", "qc", "test/libmain.a", "m.o"],
        "libl.a": ["/usr/bin/ar", "qc", "libl.a", "l.o"],
        "libmixed.a": ["/usr/bin/ar", "qc", "libmixed.a", "m.o", "l.o"],
        "libunused.a": ["/usr/bin/ar", "qc", "libunused.a", "g.o"],
        "test/t": ["c++", "t.o", "-o", "test/t", "libgtest.a", "test/libmain.a", "libl.a",
                   "libmixed.a"],
    }  # fmt: skip
    ref = {"compiles": compiles, "links": links, "programs": {"test/t": "c++ ..."}}
    assert crossed.test_archives(ref, ["test"]) == ["libgtest.a", "test/libmain.a"]


def test_the_seeds_configure_inputs_are_its_rerun_edges_tree_files(tmp_path: Path) -> None:
    (tmp_path / "build.ninja").write_text(
        "rule RERUN_CMAKE\n  command = cmake\n"
        "build build.ninja: RERUN_CMAKE | /src/project/CMakeLists.txt "
        "/src/project/cmake/odd$ name.cmake /usr/share/cmake/Modules/X.cmake $\n"
        "    /src/project/sub/CMakeLists.txt CMakeCache.txt\n  pool = console\n"
        "build all: phony /src/project/not-an-input.txt\n"
    )
    found = cmake._configure_inputs(tmp_path, tmp_path / "tree")
    assert found == ["CMakeLists.txt", "cmake/odd name.cmake", "sub/CMakeLists.txt"]


def test_without_a_rerun_edge_every_cmake_file_of_the_tree_counts(tmp_path: Path) -> None:
    (tmp_path / "build.ninja").write_text("build all: phony\n")
    tree = tmp_path / "tree"
    (tree / "cmake").mkdir(parents=True)
    for name in ("CMakeLists.txt", "cmake/deps.cmake", "cmake/config.h.cmake.in", "main.cpp"):
        (tree / name).write_text("")
    found = sorted(cmake._configure_inputs(tmp_path, tree))
    assert found == ["CMakeLists.txt", "cmake/config.h.cmake.in", "cmake/deps.cmake"]
