"""Files a project's build wrote that the harness reads itself, outside any sandbox
(cxxgate/cells/cmake.py): only regular files inside the build folder, and only so much."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cxxgate.cells import cmake, ctest, relink, shadows, testframeworks
from cxxgate.gates.tests import suite


def test_a_link_to_the_host_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    (build / "compile_commands.json").symlink_to("/proc/kmsg")  # blocked the grade for ever
    os.mkfifo(build / ".cxxgate-compiles")
    (build / "log").write_bytes(b"x" * 100)
    assert cmake._build_file(build / "compile_commands.json", build) == b""
    assert cmake._build_file(build / ".cxxgate-compiles", build) == b""
    assert cmake._build_file(build / "log", build, cap=10) == b"x" * 10
    cmake._export_db(build, tmp_path)
    assert not (tmp_path / "compile_commands.json").exists()


def _corrupt_names_offset(path: Path) -> None:
    """Set the top byte of the section-name table's sh_offset (ELF64, little-endian):
    the kernel reads program headers only, so a program still runs; pyelftools seeks past
    2**63 and raises ValueError."""
    data = bytearray(path.read_bytes())
    shoff = int.from_bytes(data[40:48], "little")
    names = int.from_bytes(data[62:64], "little")
    data[shoff + names * 64 + 24 + 7] = 0x80
    path.write_bytes(bytes(data))


def test_an_elf_file_that_does_not_read_is_no_harness_fault(tmp_path: Path) -> None:
    """Objects and programs the build made with headers pyelftools refuses (round 8's
    bad_elf, bad_program) and a JUnit file that does not parse (junit_garbage) read as
    nothing proven, never as an exception out of the cell or the gate."""
    source = tmp_path / "a.cpp"
    source.write_text("#include <gtest/gtest.h>\nTEST(A, B) {}\nint main() { return 0; }\n")
    obj = tmp_path / "a.o"
    subprocess.run(["g++", "-c", str(source), "-o", str(obj)], check=True)
    assert ctest.gtest_symbols(obj, tmp_path) != {"(not an ELF object)"}
    _corrupt_names_offset(obj)
    assert ctest.gtest_symbols(obj, tmp_path) == {"(not an ELF object)"}
    assert testframeworks.framework_of(obj, tmp_path) is None
    assert shadows.definitions(obj.read_bytes()).why.startswith("its ELF does not read")
    assert relink.held_from(obj, tmp_path, []) is None
    junit = tmp_path / "junit.xml"
    junit.write_text("<testsuite><testcase name='plain_parse'")
    assert suite.outcomes(junit) == {}
