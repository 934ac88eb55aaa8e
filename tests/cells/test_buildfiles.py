"""Files a project's build wrote that the harness reads itself, outside any sandbox
(cxxgate/cells/cmake.py): only regular files inside the build folder, and only so much."""

from __future__ import annotations

import os
from pathlib import Path

from cxxgate.cells import cmake


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
