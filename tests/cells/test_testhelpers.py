"""The helper folders a reference's build shows (cxxgate/cells/testhelpers.py), read from
a real CMake and Ninja build of a small project."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cxxgate.cells import testhelpers

pytestmark = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake, ninja"
)

CMAKE = """\
cmake_minimum_required(VERSION 3.16)
project(h CXX)
add_library(calc src/parse.cpp)
target_include_directories(calc PUBLIC include)
add_library(util STATIC testutil/util.cpp)
target_include_directories(util PUBLIC testutil)
add_library(vendored STATIC third/gtest/gtest.cpp)
add_library(extra STATIC src/extra/extra.cpp src/fastest/fast.cpp)
add_executable(tool tools/tool.cpp)
target_link_libraries(tool calc)
enable_testing()
foreach(t one two)
  add_executable(${t} tests/${t}.cpp)
  target_link_libraries(${t} util vendored extra calc)
  add_test(NAME ${t} COMMAND ${t})
endforeach()
"""
TOOL = '#include "calc/calc.hpp"\n#include "../third/shared.hpp"\nint main() { return parse(); }\n'
FILES = {
    "CMakeLists.txt": CMAKE,
    "include/calc/calc.hpp": "int parse();\n",
    "src/parse.cpp": '#include "calc/calc.hpp"\nint parse() { return 1; }\n',
    "testutil/util.hpp": "int util();\n",
    "testutil/util.cpp": '#include "util.hpp"\nint util() { return 0; }\n',
    "testutil/data/in.txt": "7\n",
    # A header the tests and a program of the project's both read: the library's.
    "third/gtest/gtest.cpp": '#include "../shared.hpp"\nint frame() { return 0; }\n',
    "third/shared.hpp": "int shared();\n",
    # Only the tests are built from it, as from the library itself: not named for tests.
    "src/extra/extra.cpp": "int extra() { return 0; }\n",
    "src/fastest/fast.cpp": "int fast() { return 0; }\n",  # `test` in a word, not a word
    "tools/tool.cpp": TOOL,
    "tests/one.cpp": '#include "calc/calc.hpp"\n#include "util.hpp"\n'
    "int main() { return parse() - 1 + util(); }\n",
    "tests/two.cpp": '#include "calc/calc.hpp"\nint main() { return parse() - 1; }\n',
}


def _graph(root: Path, files: dict[str, str]) -> tuple[list[dict[str, object]], str, str]:
    tree, build = root / "tree", root / "build"
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    configure = ["cmake", "-G", "Ninja", "-S", tree, "-B", build]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)

    def ninja(*tool: str) -> str:
        argv = ["ninja", "-C", str(build), "-t", *tool]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    db = json.loads(ninja("compdb", "-x"))
    return db, ninja("deps"), str(tree)


def test_a_folder_only_test_programs_are_built_from_is_a_helper_folder(tmp_path: Path) -> None:
    db, deps, tree = _graph(tmp_path, FILES)
    reads = testhelpers.deps(deps)
    build = str(tmp_path / "build")
    assert any(p.endswith("testutil/util.hpp") for r in reads.values() for p in r)

    graph = testhelpers.Graph(db, reads, tree, build)

    def helpers(fixed: list[str]) -> list[str]:
        return graph.helper_folders(["tests"], fixed, ["tests"])

    # third/ holds a header the project's tool reads, and is not named for tests; src/ and
    # src/extra only the tests are built from, but so they are from a library no program
    # of the project's links: only folders named for tests are helpers.
    assert helpers([]) == ["testutil", "third/gtest"]
    # The reference patch changing code there: the library's; data or CMake code: not.
    assert helpers(["testutil/util.cpp"]) == ["third/gtest"]
    data = ["testutil/data/in.txt", "testutil/CMakeLists.txt"]
    assert helpers(data) == ["testutil", "third/gtest"]
    # A program of the project's built from a helper: the library's after all.
    util = '#include "../testutil/util.hpp"\n'
    db2, deps2, tree2 = _graph(tmp_path / "tool", {**FILES, "tools/tool.cpp": TOOL + util})
    reads2, build2 = testhelpers.deps(deps2), str(tmp_path / "tool" / "build")
    found = testhelpers.Graph(db2, reads2, tree2, build2).helper_folders(["tests"], [], ["tests"])
    assert found == ["third/gtest"]


def test_included_names_are_what_the_tests_compiles_read_but_their_own_sources(
    tmp_path: Path,
) -> None:
    """A file added under one of these names could stand in for what a test compile reads
    (cxxgate/cells/testfolders.py `stays`); a source compiled, not included, is not one,
    nor a system header's name (red-team round 18: libstdc++'s debug/assertions.h made a
    test's own tests/assertions.h a shadow), nor a header only the library's compiles
    read (round 19: a new `tests/util.hpp` beside the library's `src/util.hpp`)."""
    files = {
        **FILES, "tests/two.cpp": "#include <string>\n" + FILES["tests/two.cpp"],
        # `extra`: a library only the tests link, with a header of its own.
        "src/extra/extra.cpp": '#include "detail.hpp"\nint extra() { return 0; }\n',
        "src/extra/detail.hpp": "#pragma once\n",
    }  # fmt: skip
    db, deps, tree = _graph(tmp_path, files)
    graph = testhelpers.Graph(db, testhelpers.deps(deps), tree, str(tmp_path / "build"))
    names = graph.included_names(["tests", "third/gtest"])
    assert {"calc.hpp", "util.hpp", "shared.hpp"} <= names
    assert not {"parse.cpp", "one.cpp", "util.cpp", "string", "stdc-predef.h"} & names
    # Only the tests link `extra`, yet its compiles are not the tests'.
    assert "detail.hpp" not in names


def test_the_build_reads_what_compiles_read_and_commands_name(tmp_path: Path) -> None:
    """What the reference's build never reads (a test's input, documentation) is taken
    from the reference in a candidate's build; a generator's input and a table a library
    source includes are the build's (red-team round 18's honest fixes)."""
    copy = "${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}"
    cmake = CMAKE + (
        # A generator's chain: stage.in -> stage.txt -> gen.cpp, compiled.
        f"add_custom_command(OUTPUT stage.txt COMMAND {copy}/gen/stage.in stage.txt "
        "DEPENDS gen/stage.in)\n"
        f"add_custom_command(OUTPUT gen.cpp COMMAND {copy}/gen/table.in gen.cpp "
        "COMMAND ${CMAKE_COMMAND} -E cat stage.txt DEPENDS gen/table.in stage.txt)\n"
        "add_library(gen STATIC ${CMAKE_BINARY_DIR}/gen.cpp)\n"
        # The tests' inputs staged in the build folder (round 19): a copy no compile
        # reads, behind an ALL target, and a test program's POST_BUILD copy.
        f"add_custom_command(OUTPUT staged.in COMMAND {copy}/data/cmd.in staged.in "
        "DEPENDS data/cmd.in)\nadd_custom_target(stage ALL DEPENDS staged.in)\n"
        f"add_custom_command(TARGET one POST_BUILD COMMAND {copy}/data/post.in post.in)\n"
    )
    files = {
        **FILES, "CMakeLists.txt": cmake, "gen/table.in": "int gen() { return 0; }\n",
        "gen/stage.in": "\n", "data/cmd.in": "0\n", "data/post.in": "0\n",
        "src/parse.cpp": '#include "calc/calc.hpp"\nint parse() {\n#include "table.txt"\n}\n',
        "src/table.txt": "return 1;\n", "data/input.bin": "7", "docs/parse.md": "# parse\n",
    }  # fmt: skip
    db, deps, tree = _graph(tmp_path, files)
    graph = testhelpers.Graph(db, testhelpers.deps(deps), tree, str(tmp_path / "build"))
    reads = graph.build_reads()
    expected = {"src/parse.cpp", "src/table.txt", "gen/table.in", "gen/stage.in"}
    assert expected | {"testutil/util.hpp"} <= reads
    assert not {"data/input.bin", "docs/parse.md", "CMakeLists.txt"} & reads
    assert not {"data/cmd.in", "data/post.in"} & reads


def test_a_table_the_library_is_compiled_to_read_is_the_librarys(tmp_path: Path) -> None:
    """Red-team round 20's honest `table_fix`: the library reads data/empty.cfg at run
    time by a path its compile defines; the tests read data/input.txt by a path theirs
    defines. Only the library's is named by a compile outside the restored folders."""
    cmake = CMAKE + (
        'target_compile_definitions(calc PRIVATE CALC_TABLE="${CMAKE_SOURCE_DIR}/data/empty.cfg")\n'
        'target_compile_definitions(one PRIVATE INPUT="${CMAKE_SOURCE_DIR}/data/input.txt")\n'
    )
    files = {**FILES, "CMakeLists.txt": cmake, "data/empty.cfg": "throw\n", "data/input.txt": "1"}
    db, deps, tree = _graph(tmp_path, files)
    graph = testhelpers.Graph(db, testhelpers.deps(deps), tree, str(tmp_path / "build"))
    assert not {"data/empty.cfg", "data/input.txt"} & graph.build_reads()
    named = graph.named_by_compiles(["tests", "testutil"])
    assert "data/empty.cfg" in named
    assert "data/input.txt" not in named
